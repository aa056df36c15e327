"""Build step of recency_lib: the C kernel (recency_lib/_kernel.c -> recency_lib._kernel).

Everything else is in pyproject.toml. ``pip install -e .`` compiles the kernel for this CPU with
-O3 -march=native, -ffp-contract=off and no -ffast-math: every sample's arithmetic is one fixed
sequence of IEEE operations, so results are bitwise the same on every machine. Without
-march=native if the compiler rejects it; without the kernel if it cannot be built (recency_lib
then runs its numpy path; ``recency_lib.kernels.kernel_name()`` says which runs). The module
records the sha256 of its source: a kernel older than ``_kernel.c`` is not run.
"""

import hashlib
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

BASE = [
    "-O3",
    "-ffp-contract=off",
    "-fno-math-errno",
    "-std=gnu11",
    "-Wno-psabi",
]  # (GCC notes that 32-byte vectors pass differently without AVX: internal functions only)
NATIVE = ["-march=native"]


class BuildKernel(build_ext):
    """build_ext that retries without -march=native and never fails the install: an extension that
    does not compile is dropped from the build's outputs (so pip installs the rest)."""

    def build_extensions(self):
        self.failed = []
        super().build_extensions()
        self.extensions = [ext for ext in self.extensions if ext not in self.failed]

    def build_extension(self, ext):
        for extra in (NATIVE, []):
            ext.extra_compile_args = BASE + extra
            try:
                return super().build_extension(ext)
            except (
                Exception
            ) as exc:  # a compiler error: CompileError, or DistutilsExecError on some setups
                last = exc
        self.failed.append(ext)
        print(
            f"recency_lib: the C kernel was not built ({last}); recency_lib runs its numpy path",
            file=sys.stderr,
        )


SOURCE = Path(__file__).with_name("recency_lib") / "_kernel.c"
# the module carries the hash of the source it was built from (recency_lib.kernels checks it)
SHA256 = hashlib.sha256(SOURCE.read_bytes()).hexdigest()

setup(
    ext_modules=[
        Extension(
            "recency_lib._kernel",
            ["recency_lib/_kernel.c"],
            define_macros=[("KERNEL_SOURCE_SHA256", f'"{SHA256}"')],
        )
    ],
    cmdclass={"build_ext": BuildKernel},
)
