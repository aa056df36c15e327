"""The C kernel built for other CPUs gives the installed build's bits.

_kernel.c promises one order for every sum whatever the vector width (P = 8 partial sums; a group's
lanes in quads), so an AVX2 build (``-march=x86-64-v3``: 4 lanes, FMA, no AVX-512) at setup.py's own
flags, with 8 and with 3 groups per tile, and the x86-64 baseline (SSE2) give byte for byte what the
installed build gives (``-march=native``: 8 lanes where AVX-512 exists): the gram block's moments
and features (the specialised n = 10 code, partial tiles, n = 13, a trapezoid d < n, long rows that
sum group by group, scores large enough for the exponentials' careful path, the norm placed
elsewhere than before attention), the random numbers, GELU and the causal softmax. A 64-bit ARM
build (NEON), which cannot be loaded here, is cross-compiled with a C driver of the kernel
(kernel_harness.c) and run under qemu: its draws and moments are those of the same driver
built for this machine. Inputs with NaN and infinities are
compared with every NaN made one pattern: which NaN an operation returns (its sign, its payload)
follows the operand order that the compiler picks, and that differs between builds
(it did before this test too).

Each build is a module of its own, and GELU, the softmax and the draws are called on each module
directly: nothing here compares a build with itself through ``recency_lib.kernels._kernel``.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import shutil
import subprocess
import sysconfig
from pathlib import Path

import numpy as np
import pytest
from blocks import gram_block

from recency_lib import SimConfig, kernels
from recency_lib.sampling import gram_draws
from recency_lib.streams import block_key

REPO = Path(__file__).resolve().parents[2]
X86 = platform.machine() in ("x86_64", "AMD64")
V3_FLAGS = {
    "avx",
    "avx2",
    "bmi1",
    "bmi2",
    "f16c",
    "fma",
    "abm",
    "movbe",
    "xsave",
}  # what x86-64-v3 needs

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        kernels.load() is None and not os.environ.get("CI"), reason="the C kernel was not built"
    ),
]


def _cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def _base_flags() -> list[str]:
    """setup.py's BASE compiler flags (read from the file: importing it would run setup())."""
    import ast

    for node in ast.parse((REPO / "setup.py").read_text()).body:
        if isinstance(node, ast.Assign) and [
            t.id for t in node.targets if isinstance(t, ast.Name)
        ] == ["BASE"]:
            return list(ast.literal_eval(node.value))
    raise AssertionError("setup.py has no BASE flags")


def _build(tmp_path: Path, name: str, flags: list[str]):
    cc_var = sysconfig.get_config_var("CC")
    cc = shutil.which(cc_var.split()[0] if cc_var else "cc")
    if cc is None:
        if os.environ.get("CI"):
            pytest.fail("no C compiler on CI")
        pytest.skip("no C compiler")
    out = tmp_path / name / f"_kernel{sysconfig.get_config_var('EXT_SUFFIX')}"
    out.parent.mkdir()
    subprocess.run(
        [
            cc,
            *_base_flags(),
            *flags,
            "-fPIC",
            "-shared",
            f"-I{sysconfig.get_paths()['include']}",
            str(REPO / "recency_lib" / "_kernel.c"),
            "-o",
            str(out),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    spec = importlib.util.spec_from_file_location("_kernel", out)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bytes(*arrays, canonical_nan: bool = False) -> bytes:
    out = []
    for a in arrays:
        a = np.array(a, copy=True)
        if canonical_nan and a.dtype.kind == "f":
            a[np.isnan(a)] = np.nan
        out.append(a.tobytes())
    return b"".join(out)


def _outputs(module, monkeypatch) -> list[bytes]:
    """Every output of ``module`` on the cases of the module docstring."""
    monkeypatch.setattr(kernels, "_kernel", module)
    got = []
    cases = [(10, 512, 64), (10, 37, 64), (10, 512, 5), (7, 36, 64), (13, 101, 64), (128, 21, 16)]
    settings = [
        dict(alpha=0.0, norm="none"),
        dict(alpha=0.5, gamma=1.0),
        dict(alpha=0.5, gamma=-0.4, norm="rms"),
        dict(alpha=1.0, norm="rms"),
        # the norm elsewhere: LayerNorm's means in the raw scores (rank one too), output norms
        dict(alpha=0.5, gamma=1.0, placement="post"),
        dict(alpha=1.0, gamma=0.5, placement="output"),
        dict(alpha=0.3, gamma=-0.4, norm="rms", placement="sandwich"),
        dict(alpha=0.0, gamma=1.0, placement="qk_output"),
    ]
    for i, (n, size, d) in enumerate(cases):
        for kw in settings:
            cfg = SimConfig(n=n, d=d, layers=3, samples=size, **kw)
            chi2, normals = gram_draws(cfg, block_key(1000 * n + size, i), size)
            m, f = gram_block(cfg, chi2, normals, "c")
            got.append(_bytes(chi2, normals, m.mean, m.m2, m.cross, f))
    # scores in the thousands (some exponent arguments below -706, others not, in one group)
    cfg = SimConfig(n=10, d=64, layers=4, samples=512, alpha=0.5, norm="none")
    chi2, normals = gram_draws(cfg, block_key(5, 0), 512)
    m, f = gram_block(cfg, chi2 * 1e4, normals * 100.0, "c")
    assert np.isfinite(f).all() and (f[:, :, 55:110] == 0).any()
    got.append(_bytes(m.mean, m.m2, m.cross, f))
    # NaN, infinities, zeros and a tiny chi-square among the draws (NaN patterns aside)
    for n in (10, 12):
        cfg = SimConfig(n=n, d=64, layers=2, samples=37, alpha=0.5, gamma=1.0)
        chi2, normals = gram_draws(cfg, block_key(6, n), 37)
        chi2[0, :3] = [np.inf, np.nan, 0.0]
        normals[0, 3:6] = [np.nan, np.inf, -np.inf]
        chi2[-1, 7] = 1e-300
        with np.errstate(all="ignore"):
            m, f = gram_block(cfg, chi2, normals, "c")
        got.append(_bytes(m.mean, m.m2, m.cross, f, canonical_nan=True))
    # the generator alone, GELU and the causal softmax, called on the module itself
    for key, nb, m_rows, dof, q in (
        ((1, 2, 3), 37, 10, 63, 45),
        ((9, 8, 7), 512, 1, 64, 0),
        ((4, 4, 4), 5, 3, 3, 3),
    ):
        chi2, normals = np.empty((m_rows, nb)), np.empty((q, nb))
        module.gram_draws(*key, nb, m_rows, dof, q, chi2, normals)
        got.append(_bytes(chi2, normals))
    x = np.concatenate(
        [np.random.default_rng(0).standard_normal(1001) * 10, [40.0, -40.0, 0.0, -0.0, 1e-300]]
    )
    y = np.empty_like(x)
    module.gelu(x.size, x, y)
    got.append(_bytes(y))
    for n in (3, 7, 37, 100):
        s = np.random.default_rng(n).standard_normal((2, 3, n, n)) * 5
        s[1, 2, -1, -1] = 800.0  # an exponent argument below -706
        y = np.empty_like(s)
        module.causal_softmax(6, n, s, y)
        got.append(_bytes(y))
    return got


def _check(other, installed, monkeypatch):
    theirs, ours = _outputs(other, monkeypatch), _outputs(installed, monkeypatch)
    bad = [i for i, (a, b) in enumerate(zip(theirs, ours)) if a != b]
    assert len(theirs) == len(ours) and not bad, f"outputs {bad} of {len(ours)} differ"


@pytest.mark.skipif(
    not X86 or not V3_FLAGS <= _cpu_flags(), reason="needs an x86-64 CPU with AVX2 and FMA"
)
@pytest.mark.parametrize("tile", [8, 3])
def test_avx2_build_gives_the_installed_bits(tmp_path, monkeypatch, tile):
    """-O3 -march=x86-64-v3 (the AVX2 path: 4 lanes, the count's compares as vectors, no mask
    registers), with the default 8 groups per tile and with 3 (odd: full tiles start on either
    vector of partial sums)."""
    installed = kernels._kernel
    _check(
        _build(tmp_path, f"v3_{tile}", ["-O3", "-march=x86-64-v3", f"-DTILE_GROUPS={tile}"]),
        installed,
        monkeypatch,
    )


@pytest.mark.skipif(not X86, reason="x86-64 only")
def test_baseline_x86_64_build_gives_the_installed_bits(tmp_path, monkeypatch):
    """-O1 -march=x86-64 with 3 groups per tile (SSE2: each 4-lane vector two registers, no FMA
    instruction; another optimiser than setup.py's -O3). The one x86-64 baseline build: at -O3 it
    compiled 2.3 times longer (13.1 s against 5.8 s) and tests nothing more, since -O3's vectoriser
    keeps the order of floating-point sums (no -ffast-math) and contraction into FMA, the one way an
    optimiser may change bits here, needs the FMA instructions that only the -O3 AVX2 builds above
    (and the installed one) have."""
    installed = kernels._kernel
    _check(
        _build(tmp_path, "x86_64", ["-O1", "-march=x86-64", "-DTILE_GROUPS=3"]),
        installed,
        monkeypatch,
    )


CROSS_CC, QEMU = shutil.which("aarch64-linux-gnu-gcc"), shutil.which("qemu-aarch64")


def _harness(tmp_path, name: str, cc: str, flags: list[str], runner: list[str]) -> str:
    """tests/lib/kernel_harness.c (the kernel's own source, driven from C) built by ``cc`` with
    setup.py's flags and ``flags``, run (under ``runner``): what it prints."""
    exe = tmp_path / name
    src = Path(__file__).with_name("kernel_harness.c")
    done = subprocess.run(
        [
            cc,
            *_base_flags(),
            *flags,
            "-ffunction-sections",
            "-fdata-sections",
            "-Wl,--gc-sections",
            f"-I{sysconfig.get_paths()['include']}",
            str(src),
            "-o",
            str(exe),
            "-lm",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = subprocess.run([*runner, str(exe)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "helpers vfma vsqrt: 0 lanes differ" in out.stdout, out.stdout
    return out.stdout


@pytest.mark.skipif(
    not X86 or CROSS_CC is None or QEMU is None,
    reason="needs an x86-64 machine with aarch64-linux-gnu-gcc and qemu-aarch64 "
    "(.ci/run installs them)",
)
def test_arm64_build_gives_the_native_bits(tmp_path):
    """The kernel for 64-bit ARM (-march=armv8-a: 4 lanes, each vector two NEON registers, the NEON
    fma and sqrt), cross-compiled and run under qemu, gives every byte that the same C driver built
    for this machine (-march=native) gives: the draws and the gram block's moments (the n = 10 code
    and the general one, LayerNorm or none, residual or not, partial tiles, w < n, long rows, the
    norm placed elsewhere), and
    the vector fma and sqrt round as the C library's fma and sqrt on edge values. The driver cannot
    load into Python on the other CPU; it includes _kernel.c, so both run the kernel's own code."""
    native = _harness(
        tmp_path,
        "native",
        (sysconfig.get_config_var("CC") or "cc").split()[0],
        ["-march=native"],
        [],
    )
    arm = _harness(tmp_path, "arm64", CROSS_CC, ["-march=armv8-a", "-static"], [QEMU])
    assert native.count("\nblock ") == 8  # five before attention, three placed elsewhere
    assert arm == native, f"arm64:\n{arm}\nnative:\n{native}"
