"""Every page's parameters, checked under their own names before any work.

:data:`PAGES` holds, for each notebook of the book, one rule per parameter of its ``parameters`` cell
(tests/book/test_params.py holds the two to the same names) and the checks that relate several of them.
A page's first hidden code cell runs

    globals().update(params.check("beyond", globals()))

so that every parameter is checked under its own name before anything is simulated (a ValueError in the
library's one format, ``samples_prop1=0 is out of range; allowed: an integer >= 2``) and comes back
normalized: a list parameter also takes papermill's string form (``-p ds "[16, 64]"``) or one value
(``-y "alphas: 0.5"``) and is a list afterwards. ``python -m companion rerun`` runs the same check on the
page's defaults and the given values before papermill starts (:mod:`companion.rerun`), so a bad value
there is one ``error:`` line and nothing runs.

Folders: :func:`check_outside_sources` refuses a folder inside the book's or the simulator's sources (a
rerun, a rendered page, Appendix B's runs write only elsewhere); Appendix B's ``out_dir`` left empty is
``.jupyter_cache/appendix_b`` in the build's folder (:func:`build_folder`: ``COMPANION_BUILD_DIR``, set by
book/_ext/fresh_cache.py whatever ``--path-output`` says; outside a build the checkout's ``_build``).
"""

from __future__ import annotations

import ast
import numbers
import os
from pathlib import Path

from recency_lib.files import shown
from recency_lib.validation import check_choice, check_int, check_real, short

BOOK = Path(__file__).resolve().parents[1]  # book/
ROOT = BOOK.parent  # the checkout
#: Folders of the checkout that hold sources: nothing the book runs writes into them.
SOURCE_FOLDERS = ("book", "recency_lib", "tests", "benchmarks", ".git")
#: The longest list a list parameter takes (a longer one is hours of work, not a setting).
LIST_MAX = 100
#: The most settings Appendix B's grid runs (the paper's Figures 3 to 5 are 9).
GRID_MAX = 100
#: The longest string a list parameter is read from (papermill's ``-p name "[...]"``).
_TEXT_MAX = 10_000


# -- the rules ------------------------------------------------------------------------------------------


def cpus() -> int:
    """The CPUs this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


class Rule:
    """One parameter's rule: ``rule(name, value) -> value`` normalized, or a ValueError naming ``name``;
    ``minimum``: the least value an integer rule takes (None for other rules)."""

    def __init__(self, check, text: str, minimum: int | None = None):
        self._check, self.text, self.minimum = check, text, minimum

    def __call__(self, name: str, value):
        return self._check(name, value)

    def __repr__(self) -> str:
        return f"Rule({self.text})"


def integer(lo: int, hi: int | None = None) -> Rule:
    """An integer (not a bool) >= ``lo`` (and <= ``hi``)."""
    if hi is None:
        return Rule(lambda name, v: check_int(name, v, lo), f"an integer >= {lo}", lo)
    return Rule(lambda name, v: check_int(name, v, lo, hi), f"an integer in [{lo}, {hi}]", lo)


def real(
    lo: float | None = None, hi: float | None = None, lo_open: bool = False, *, allowed: str
) -> Rule:
    return Rule(
        lambda name, v: check_real(name, v, lo=lo, hi=hi, lo_open=lo_open, allowed=allowed), allowed
    )


def workers_max() -> int:
    """The most worker processes (or kernels) a page starts: four per CPU this process may use, at least 8
    (more only wait for a CPU, each with its own memory)."""
    return max(8, 4 * cpus())


def _workers(name: str, value) -> int:
    return check_int(name, value, 1, workers_max())


WORKERS = Rule(_workers, "an integer from 1 to workers_max()")
#: A number of sequences, SimConfig's rule: a standard error needs two. Every parameter with this rule but
#: ``samples`` itself is one of its page's derived sample sizes (:func:`derived_sizes`).
SAMPLES = integer(2)
SEED = integer(0)


def _items(name: str, value, allowed: str) -> list:
    """The entries of a list parameter: a list or tuple, papermill's string form of one, or one value."""
    v = value
    if isinstance(v, str):
        if len(v) > _TEXT_MAX:
            raise ValueError(f"{name}={short(value)} is too long; allowed: {allowed}")
        try:
            v = ast.literal_eval(v.strip())
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise ValueError(f"{name}={short(value)} is not a list; allowed: {allowed}") from None
    if isinstance(v, numbers.Number):  # bools too: refused by the entries' check
        v = [v]
    if not isinstance(v, (list, tuple)):
        raise ValueError(f"{name}={short(value)} is not a list; allowed: {allowed}")
    if not v:
        raise ValueError(f"{name}={short(value)} is empty; allowed: {allowed}")
    if len(v) > LIST_MAX:
        raise ValueError(
            f"{name} has {len(v)} entries; allowed: {allowed}, at most {LIST_MAX} of them"
        )
    return list(v)


def int_list(lo: int, example: str, *, distinct: bool = False) -> Rule:
    allowed = f"a list of {'distinct ' if distinct else ''}integers >= {lo}, e.g. {example}"

    def check(name, value):
        out = [check_int(f"{name}[{k}]", x, lo) for k, x in enumerate(_items(name, value, allowed))]
        if distinct and len(set(out)) < len(out):
            raise ValueError(f"{name}={short(value)} repeats a value; allowed: {allowed}")
        return out

    return Rule(check, allowed)


def real_list(
    lo: float, hi: float | None, example: str, *, lo_open: bool = False, distinct: bool = True
) -> Rule:
    low = f"({lo:g}" if lo_open else f"[{lo:g}"
    allowed = (
        f"a list of {'distinct ' if distinct else ''}numbers in {low}, {hi:g}], e.g. {example}"
        if hi is not None
        else f"a list of {'distinct ' if distinct else ''}numbers {'>' if lo_open else '>='} {lo:g}, e.g. {example}"
    )

    def check(name, value):
        out = [
            check_real(f"{name}[{k}]", x, lo=lo, hi=hi, lo_open=lo_open, allowed=allowed)
            for k, x in enumerate(_items(name, value, allowed))
        ]
        if distinct and len(set(out)) < len(out):
            raise ValueError(f"{name}={short(value)} repeats a value; allowed: {allowed}")
        return out

    return Rule(check, allowed)


def check_outside_sources(name: str, folder) -> Path:
    """``folder`` (a path) resolved, refused when it is the checkout itself or inside one of its
    :data:`SOURCE_FOLDERS` (ValueError naming ``name``)."""
    if (
        isinstance(folder, bytes)
        or not isinstance(folder, (str, os.PathLike))
        or not os.fspath(folder)
    ):
        raise ValueError(f"{name}={short(folder)} is not a path; allowed: a folder")
    path = Path(folder).resolve()
    root = ROOT.resolve()
    inside = path.is_relative_to(root) and (
        path == root or path.relative_to(root).parts[0] in SOURCE_FOLDERS
    )
    if inside:
        raise ValueError(
            f"{name}={shown(folder)} is not allowed; allowed: a folder outside the sources "
            f"({', '.join(f + '/' for f in SOURCE_FOLDERS)} and the checkout's own folder)"
        )
    return path


def build_folder() -> Path:
    """The folder of the build that runs this page (``COMPANION_BUILD_DIR``, set by book/_ext/fresh_cache.py:
    ``_build`` under ``--path-output``), else the checkout's ``_build``."""
    return Path(os.environ.get("COMPANION_BUILD_DIR") or ROOT / "_build")


def _runs_folder(name: str, value) -> str:
    """Appendix B's runs: a folder outside the sources (relative to the working directory); empty:
    ``.jupyter_cache/appendix_b`` in :func:`build_folder`."""
    if not isinstance(value, str):
        raise ValueError(
            f'{name}={short(value)} is not a path; allowed: a folder, or "" for the build\'s'
        )
    folder = value or str(build_folder() / ".jupyter_cache" / "appendix_b")
    check_outside_sources(name, folder)
    from .grid import _check_out_dir

    _check_out_dir(folder)
    return folder


def _template(name: str, value) -> str:
    from .grid import SETTING_PARAMS, template_defaults

    if not isinstance(value, str) or not value:
        raise ValueError(
            f"{name}={short(value)} is not a path; allowed: a notebook with a 'parameters' cell"
        )
    try:
        defaults = template_defaults(value)
    except ValueError as exc:
        raise ValueError(str(exc).replace("template=", f"{name}=", 1)) from None
    missing = [p for p in SETTING_PARAMS if p not in defaults]
    if missing:
        raise ValueError(
            f"{name}={short(value)} lacks the parameter(s) {', '.join(missing)}; allowed: a notebook "
            f"with the parameters {', '.join(SETTING_PARAMS)} (setting_template.ipynb)"
        )
    return value


def _result_path(name: str, value):
    from .grid import result_file

    result_file(value)
    return value


# -- what relates several parameters ---------------------------------------------------------------------


def _fits(name: str, value, workers: int = 1, **setting) -> None:
    """The page's largest setting that ``name`` sizes (``setting``: SimConfig's fields) fits this machine's
    memory, else a ValueError naming ``name`` (the simulator refuses it too, but only when that run comes,
    after the page's other work, and under its own field's name)."""
    from recency_lib.config import SimConfig
    from recency_lib.engines import require_memory, resolve_engine

    cfg = SimConfig(**setting)
    try:
        require_memory(cfg, resolve_engine(cfg), workers)
    except ValueError as exc:
        need = str(exc).split(" needs ", 1)[-1].split("; allowed:")[0]
        raise ValueError(f"{name}={short(value)} needs {need}; allowed: a smaller {name}") from None


def _beyond(v: dict) -> None:
    """RoPE (on in two of chapter 8's settings, one with ``heads`` heads, one with a single head)
    rotates pairs of coordinates: d and each head's size d / heads are even. The longest length of the
    sweep runs the common decoder layout on the dense engine."""
    from .beyond import combined_fields

    if v["d"] % 2:
        raise ValueError(
            f"d={v['d']} is not allowed; allowed: an even hidden size (RoPE rotates pairs of coordinates)"
        )
    if v["d"] % v["heads"] or (v["d"] // v["heads"]) % 2:
        raise ValueError(
            f"heads={v['heads']} is not allowed with d={v['d']}; allowed: a divisor of d whose head "
            f"size d / heads is even (RoPE rotates pairs of coordinates)"
        )
    longest = max(v["long_lengths"])
    _fits(
        "long_lengths",
        longest,
        v["workers"],
        alpha=0.5,
        n=longest,
        d=v["d"],
        layers=v["layers"],
        samples=v["long_samples"],
        seed=v["seed"],
        weights_seed=v["weights_seed"],
        **combined_fields(v["heads"]),
    )


def _conclusion(v: dict) -> None:
    check_int("long_n", v["long_n"], v["n"] + 1)  # the long runs are longer than n
    _fits(
        "long_n",
        v["long_n"],
        alpha=v["alpha"],
        gamma=v["gamma"],
        n=v["long_n"],
        d=v["d"],
        layers=v["layers"],
        samples=v["long_samples"],
        seed=v["seed"],
    )


def _empirical(v: dict) -> None:
    _fits(
        "depth_layers",
        v["depth_layers"],
        alpha=v["alpha"],
        gamma=v["gamma"],
        n=v["n"],
        d=v["d"],
        layers=v["depth_layers"],
        samples=v["samples_depth"],
        seed=v["seed"],
    )


def _appendix_b(v: dict) -> None:
    """The grid has at most :data:`GRID_MAX` settings; the residual grid holds an alpha below 1 (its closed
    forms, the paper's Figure 5, are drawn at the grid's alphas; at alpha = 1 every token is the same)."""
    if not any(a < 1 for a in v["alphas_residual"]):
        raise ValueError(
            f"alphas_residual={short(v['alphas_residual'])} is not allowed; allowed: a list with an "
            f"alpha below 1 (Figure 5's closed forms are drawn at the grid's alphas)"
        )
    count = len(v["alphas_no_residual"]) + len(v["gammas_residual"]) * len(v["alphas_residual"])
    if count > GRID_MAX:
        raise ValueError(
            f"alphas_no_residual, alphas_residual and gammas_residual make {count} settings; allowed: "
            f"at most {GRID_MAX} (len(alphas_no_residual) + len(gammas_residual) * len(alphas_residual))"
        )


def _setting_template(v: dict) -> None:
    from .grid import validate_params

    validate_params(
        {k: v[k] for k in ("alpha", "gamma", "norm", "n", "d", "layers", "samples", "seed")}
    )


# -- the pages -------------------------------------------------------------------------------------------

ALPHA = real(0.0, 1.0, allowed="a real number in [0, 1]")
RESIDUAL = real(0.0, lo_open=True, allowed="a residual weight > 0")

#: page -> (parameter -> rule, checks of several parameters), the rules in the order of the parameters cell.
#: The minima are what the page needs (its parameters cell's comments say so): n >= 3 for a step between two
#: earlier keys (the recency probability), n >= 6 for two queries past key 4 (the contrasts of chapter 7,
#: statistics.FAR); layers >= 2 where order appears from the second layer on, depth_layers >= 3 where
#: primacy starts; d >= 4 where closed forms are held to simulation (input_distribution, Appendix A's ds);
#: two sequences at least for a standard error (every samples_*); gamma > 0 for a "with residual" run.
PAGES: dict[str, tuple[dict[str, Rule], tuple]] = {
    "index": ({"samples": SAMPLES, "seed": SEED, "workers": WORKERS}, ()),
    "intro": (
        {
            "samples": SAMPLES,
            "seed": SEED,
            "n": integer(3),
            "d": integer(2),
            "layers": integer(2),
            "samples_alpha1": SAMPLES,
            "samples_first_order": SAMPLES,
        },
        (),
    ),
    "preliminaries": (
        {
            "samples": SAMPLES,
            "seed": SEED,
            "n": integer(3),
            "d": integer(2),
            "samples_engines": SAMPLES,
            "samples_single": SAMPLES,
        },
        (),
    ),
    "layernorm": (
        {
            "samples": SAMPLES,
            "samples_d64": SAMPLES,
            "samples_prop1": SAMPLES,
            "samples_first_order": SAMPLES,
            "seed": SEED,
            "n": integer(3),
            "workers": WORKERS,
        },
        (),
    ),
    "residual": (
        {
            "samples": SAMPLES,
            "samples_first_order": SAMPLES,
            "alpha": ALPHA,
            "gamma": RESIDUAL,
            "seed": SEED,
            "n": integer(3),
            "layers": integer(2),
            "workers": WORKERS,
        },
        (),
    ),
    "input_distribution": (
        {
            "samples": SAMPLES,
            "samples_isotropic": SAMPLES,
            "samples_first_order": SAMPLES,
            "samples_cosine": SAMPLES,
            "samples_alpha1": SAMPLES,
            "alphas": real_list(0.0, 0.999, "[0.2, 0.5]", lo_open=True),
            "gamma": RESIDUAL,
            "seed": SEED,
            "n": integer(3),
            "d": integer(4),
            "layers": integer(2),
            "workers": WORKERS,
        },
        (),
    ),
    "empirical": (
        {
            "samples": SAMPLES,
            "seed": SEED,
            "n": integer(3),
            "d": integer(2),
            "layers": integer(2),
            "alpha": ALPHA,
            "gamma": RESIDUAL,
            "samples_dsweep": SAMPLES,
            "samples_depth": SAMPLES,
            "depth_layers": integer(3),
        },
        (_empirical,),
    ),
    "conclusion": (
        {
            "samples": SAMPLES,
            "seed": SEED,
            "n": integer(6),
            "d": integer(2),
            "layers": integer(2),
            "alpha": ALPHA,
            "gamma": real(allowed="a finite real number"),
            "samples_short": SAMPLES,
            "long_n": integer(7),
            "long_samples": SAMPLES,
        },
        (_conclusion,),
    ),
    "beyond": (
        {
            "samples": SAMPLES,
            "seed": SEED,
            "weights_seed": SEED,
            "d": integer(2),
            "n": integer(6),
            "heads": integer(1),
            "layers": integer(2),
            "persample_divisor": integer(1),
            "networks": integer(2, LIST_MAX),
            "network_samples": SAMPLES,
            "relative_samples": SAMPLES,
            "workers": WORKERS,
            "long_samples": SAMPLES,
            "long_lengths": int_list(3, "[10, 32]"),
        },
        (_beyond,),
    ),
    "explorer": ({"samples": SAMPLES, "seed": SEED, "workers": WORKERS}, ()),
    "appendix_a": (
        {
            "samples": SAMPLES,
            "boost": integer(1),
            "samples_cosine": SAMPLES,
            "samples_paper": SAMPLES,
            "seed": SEED,
            "n": integer(3),
            "ds": int_list(4, "[16, 64]", distinct=True),
            "workers": WORKERS,
        },
        (),
    ),
    "appendix_b": (
        {
            "samples": SAMPLES,
            "seed": SEED,
            "alphas_no_residual": real_list(0.0, 1.0, "[0.2, 0.4]"),
            "alphas_residual": real_list(0.0, 1.0, "[0.0, 0.2]"),
            "gammas_residual": real_list(0.0, None, "[1.0]", lo_open=True),
            "n": integer(3),
            "d": integer(2),
            "layers": integer(2),
            "out_dir": Rule(_runs_folder, 'a folder outside the sources, or "" for the build\'s'),
            "template": Rule(_template, "a notebook with the setting's parameters"),
            "workers": WORKERS,
        },
        (_appendix_b,),
    ),
    "reproducibility": ({"samples": SAMPLES, "seed": SEED}, ()),
    "setting_template": (
        {
            "alpha": ALPHA,
            "gamma": real(allowed="a finite real number"),
            "norm": Rule(
                lambda name, v: check_choice(name, v, ("layernorm", "rms", "none")),
                "'layernorm', 'rms' or 'none'",
            ),
            "n": integer(3),
            "d": integer(2),
            "layers": integer(2),
            "samples": SAMPLES,
            "seed": SEED,
            "result_path": Rule(_result_path, "a result file's path"),
        },
        (_setting_template,),
    ),
}

#: Parameters that name where a page writes, and what a rerun makes of them when they are relative or
#: empty: a path in the rerun's own folder (companion.rerun).
OUTPUTS = {
    "appendix_b": {"out_dir": "appendix_b"},
    "setting_template": {"result_path": "setting_result.json"},
}


def derived_sizes(page: str) -> tuple[str, ...]:
    """The derived sample sizes of ``page``: every parameter besides ``samples`` that counts sequences (rule
    :data:`SAMPLES`: ``samples_first_order``, ``long_samples``, ...), in the order of its parameters cell."""
    if page not in PAGES:
        raise ValueError(
            f"page={short(page)} is not allowed; allowed: one of {', '.join(sorted(PAGES))}"
        )
    return tuple(
        name for name, rule in PAGES[page][0].items() if rule is SAMPLES and name != "samples"
    )


def follow_samples(page: str, defaults: dict, given: dict) -> dict:
    """The derived sample sizes that follow ``samples``: when ``given`` sets ``samples`` to other than its
    default (``defaults``: the page's parameters and their defaults), each derived size of ``page``
    (:func:`derived_sizes`) that ``given`` leaves out is its default times ``samples / default samples``,
    rounded, and at least its rule's minimum. Returns name -> size (empty when ``samples`` keeps its
    default or is not given). ValueError naming ``samples`` (or a default) when it is not a number of
    sequences; the other values are :func:`check`'s to check."""
    names = derived_sizes(page)
    if "samples" not in given or not names:
        return {}
    samples, default = SAMPLES("samples", given["samples"]), SAMPLES("samples", defaults["samples"])
    if samples == default:
        return {}
    return {
        name: max(SAMPLES.minimum, round(SAMPLES(name, defaults[name]) * samples / default))
        for name in names
        if name not in given
    }


def check(page: str, values) -> dict:
    """Every parameter of ``page`` (a notebook's name, ``beyond``) read from ``values`` (the page's
    namespace, or its defaults with the given values), checked under its own name in the order of its
    parameters cell, then the checks that relate several: name -> the value normalized (lists as lists).
    ValueError at the first bad one, before any work."""
    if page not in PAGES:
        raise ValueError(
            f"page={short(page)} is not allowed; allowed: one of {', '.join(sorted(PAGES))}"
        )
    rules, together = PAGES[page]
    missing = [name for name in rules if name not in values]
    if missing:
        raise ValueError(
            f"{page}: parameter(s) {', '.join(missing)} missing; allowed: every parameter of the page"
        )
    out = {name: rule(name, values[name]) for name, rule in rules.items()}
    for related in together:
        related(out)
    return out
