"""Build step of recency_lib: the C kernel (recency_lib/_kernel.c -> recency_lib._kernel).

Everything else about the package is in pyproject.toml. ``pip install -e .`` (or ``pip install .``)
compiles the kernel with the system's C compiler for this machine's CPU. Flags: -O3 and
-march=native for speed; -ffp-contract=off (never fuse a multiply and an add behind the code's
back: the source writes out every fma it wants) and no -ffast-math, so every sample's arithmetic
is the same sequence of IEEE operations on any CPU and the results are bitwise reproducible across
machines. If the compiler rejects -march=native, the kernel is built without it; if it cannot be
built at all, the install still succeeds and recency_lib runs its numpy path (slower, same law;
``recency_lib.engines.kernel_name()`` says which runs). The module records the sha256 of the source
it was compiled from; a module older than ``_kernel.c`` (an edit or a ``git pull`` without a rebuild)
is not run: the numpy path runs and says so once on stderr.
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
            f"recency_lib: the C kernel was not built ({last}); recency_lib will run its numpy path",
            file=sys.stderr,
        )


SOURCE = Path(__file__).with_name("recency_lib") / "_kernel.c"
# the module carries the hash of the source it was built from (recency_lib.kernels checks it at import)
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
