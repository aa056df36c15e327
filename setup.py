"""Build step of recency_lib: the C kernel (recency_lib/_kernel.c -> recency_lib._kernel).

Everything else is in pyproject.toml. ``pip install -e .`` compiles the kernel for this CPU with
-O3 -march=native, -ffp-contract=off and no -ffast-math: every sample's arithmetic is one fixed
sequence of IEEE operations, so results are bitwise the same on every machine. Without
-march=native if the compiler rejects it. A kernel that does not compile (no C compiler, or one that
fails) fails the install with the compiler's error: pip shows a build's output only when it fails,
so an install that went on without the kernel would hide that recency_lib runs its numpy path,
about 30 times slower. ``RECENCY_LIB_NO_KERNEL=1`` installs without it on purpose
(``recency_lib.kernels.kernel_name()`` says which runs). The module records the sha256 of its
source: a kernel older than ``_kernel.c`` is not run.
"""

import hashlib
import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import CompileError

BASE = [
    "-O3",
    "-ffp-contract=off",
    "-fno-math-errno",
    "-std=gnu11",
    "-Wno-psabi",
]  # (GCC notes that 32-byte vectors pass differently without AVX: internal functions only)
NATIVE = ["-march=native"]


#: Set to 1: install without the C kernel (recency_lib runs its numpy path).
NO_KERNEL = "RECENCY_LIB_NO_KERNEL"


def without_kernel() -> bool:
    """Whether ``RECENCY_LIB_NO_KERNEL`` asks for an install without the kernel (1; unset, "" or 0:
    with it)."""
    value = os.environ.get(NO_KERNEL, "")
    if value not in ("", "0", "1"):
        raise CompileError(f"{NO_KERNEL}={value!r} is not allowed; allowed: 1, 0 or unset")
    return value == "1"


class BuildKernel(build_ext):
    """build_ext that retries without -march=native; a kernel that still does not compile fails the
    build (CompileError) unless ``RECENCY_LIB_NO_KERNEL=1``, which skips it."""

    def build_extensions(self):
        if without_kernel():
            print(f"recency_lib: {NO_KERNEL}=1: no C kernel; the numpy path runs", file=sys.stderr)
            self.extensions = []
        super().build_extensions()

    def build_extension(self, ext):
        for extra in (NATIVE, []):
            ext.extra_compile_args = BASE + extra
            try:
                return super().build_extension(ext)
            except Exception as exc:  # CompileError, or DistutilsExecError on some setups
                last = exc
        raise CompileError(
            f"recency_lib: the C kernel (recency_lib/_kernel.c) did not compile: {last} (the "
            "compiler's output is above). Install a C compiler that builds it (gcc or clang), or "
            f"install without it on purpose with {NO_KERNEL}=1 (recency_lib then runs its numpy "
            "path, about 30 times slower)."
        ) from last


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
