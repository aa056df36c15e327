"""Every page's parameters, checked under their own names before any work.

A page's first code cell runs ``globals().update(params.check("beyond", globals()))``: each
parameter passes its rule in :data:`PAGES` (else a ValueError naming it) and comes back normalized
(a list also from papermill's string form or one value). ``python -m companion rerun`` runs the same
check first."""

from __future__ import annotations

import ast
import contextlib
import numbers
import os
import re
from pathlib import Path

from recency_lib.config import SimConfig
from recency_lib.files import check_output_path, path_text
from recency_lib.norms import NAMES as NORMS
from recency_lib.placements import NAMES as PLACEMENT_NAMES
from recency_lib.result import RESULT_FILE, is_result_file
from recency_lib.validation import INT_MAX, brief, check_choice, check_int, check_real

from . import conventions

BOOK = Path(__file__).resolve().parents[1]  # book/
ROOT = BOOK.parent  # the checkout
#: Folders of the checkout that hold sources: nothing the book runs writes into them.
SOURCE_FOLDERS = ("book", "recency_lib", "tests", "benchmarks", ".git")
LIST_MAX = 100  # the longest list parameter (a longer one is hours of work, not a setting)
GRID_MAX = 100  # the most settings of Appendix B's grid (the paper's Figures 3 to 5 are 9)
_TEXT_MAX = 10_000  # the longest string a list parameter is read from


def defaults(notebook) -> dict:
    """A notebook's parameters and their default values, as papermill reads its parameters cell."""
    import papermill

    found = papermill.inspect_notebook(str(notebook))
    return {name: _value(spec["default"]) for name, spec in found.items()}


def _value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):  # an expression: its text
        return text


# -- the rules: rule(name, value) -> the value normalized, or a ValueError naming it ---------------


def integer(lo: int, hi: int = INT_MAX):
    return lambda name, v: check_int(name, v, lo, hi)


def real(lo: float | None = None, hi: float | None = None, lo_open: bool = False, *, allowed: str):
    return lambda name, v: check_real(name, v, lo=lo, hi=hi, lo_open=lo_open, allowed=allowed)


def _workers(name: str, value) -> int:
    """Worker processes: at most 4 per CPU this process may use, or 8 (more only wait for one)."""
    return check_int(name, value, 1, max(8, 4 * len(os.sched_getaffinity(0))))


#: A number of sequences (a standard error needs two). Every parameter with this rule but
#: ``samples`` is a derived sample size of its page (:func:`derived_sizes`).
SAMPLES_MIN = 2
SAMPLES = integer(SAMPLES_MIN)
SEED = integer(0)


def _list(entry, allowed: str, distinct: bool):
    """A list parameter (a list or tuple, papermill's string form of one, or one value) whose
    entries pass ``entry(name, value)``, named ``name[k]``."""

    def rule(name: str, value) -> list:
        v = value
        if isinstance(v, str):
            if len(v) > _TEXT_MAX:
                raise ValueError(f"{name}={brief(value)} is too long; allowed: {allowed}")
            with contextlib.suppress(Exception):  # no literal: still a string, not a list
                v = ast.literal_eval(v.strip())
        if isinstance(v, numbers.Number):  # bools too: refused by the entries' rule
            v = [v]
        if not isinstance(v, (list, tuple)):
            raise ValueError(f"{name}={brief(value)} is not a list; allowed: {allowed}")
        if not v:
            raise ValueError(f"{name}={brief(value)} is empty; allowed: {allowed}")
        if len(v) > LIST_MAX:
            raise ValueError(f"{name} has {len(v)} entries; allowed: {allowed}, at most {LIST_MAX}")
        out = [entry(f"{name}[{k}]", x) for k, x in enumerate(v)]
        if distinct and len(set(out)) < len(out):
            raise ValueError(f"{name}={brief(value)} repeats a value; allowed: {allowed}")
        return out

    return rule


def int_list(lo: int, example: str, *, distinct: bool = False):
    allowed = f"a list of {'distinct ' if distinct else ''}integers >= {lo}, e.g. {example}"
    return _list(lambda name, x: check_int(name, x, lo), allowed, distinct)


def real_list(lo, hi, example: str, *, lo_open: bool = False, distinct: bool = True):
    """A list of finite numbers in [lo, hi] ((lo, hi] with ``lo_open``; None: unbounded)."""
    if lo is None:
        kind = "numbers"
    elif hi is None:
        kind = f"numbers {'>' if lo_open else '>='} {lo:g}"
    else:
        kind = f"numbers in {'(' if lo_open else '['}{lo:g}, {hi:g}]"
    allowed = f"a list of {'distinct ' if distinct else ''}{kind}, e.g. {example}"
    entry = real(lo, hi, lo_open, allowed=allowed)
    return _list(entry, allowed, distinct)


def name_list(choices, example: str):
    """A list of distinct names from ``choices`` (one bare name counts as a list of one)."""
    allowed = f"a list of distinct names from {', '.join(choices)}, e.g. {example}"
    entries = _list(lambda name, x: check_choice(name, x, tuple(choices)), allowed, True)

    def rule(name: str, value) -> list:
        one = isinstance(value, str) and not value.strip().startswith(("[", "("))
        return entries(name, [value.strip()] if one else value)

    return rule


#: Residual weights gamma > 0, each once (a weight 0 is the grid without the residual).
RESIDUAL_WEIGHTS = real_list(0.0, None, "[1.0]", lo_open=True)


# -- folders ---------------------------------------------------------------------------------------


def check_outside_sources(name: str, folder) -> Path:
    """``folder`` resolved: a writable folder (or one that can be made) outside the checkout and its
    SOURCE_FOLDERS; else a ValueError naming ``name``."""
    path, root = check_out_dir(folder, name).resolve(), ROOT.resolve()
    if path == root or (
        path.is_relative_to(root) and path.relative_to(root).parts[0] in SOURCE_FOLDERS
    ):
        sources = ", ".join(f + "/" for f in SOURCE_FOLDERS)
        raise ValueError(
            f"{name}={path_text(folder)} is not allowed; allowed: a folder outside the sources "
            f"({sources} and the checkout's own folder)"
        )
    return path


def check_out_dir(out_dir, name: str = "out_dir") -> Path:
    """``out_dir`` as a Path: a writable folder or one that can be made (nothing is made)."""
    allowed = "allowed: a folder (made if needed)"
    if not isinstance(out_dir, (str, os.PathLike)) or not os.fspath(out_dir):
        raise ValueError(f"{name}={brief(out_dir)} is not a path; {allowed}")
    path = Path(out_dir)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{name}={path_text(out_dir)} is not a folder; {allowed}")
    probe = path.resolve()
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir() or not os.access(probe, os.W_OK | os.X_OK):
        raise ValueError(
            f"{name}={path_text(out_dir)} cannot be written ({path_text(probe)} is not a "
            "writable folder); allowed: a writable folder"
        )
    return path


def build_folder() -> Path:
    """The build's folder (``COMPANION_BUILD_DIR``, set by book/_ext/fresh_cache.py) or _build."""
    return Path(os.environ.get("COMPANION_BUILD_DIR") or ROOT / "_build")


def _runs_folder(name: str, value) -> str:
    """Appendix B's runs: a folder outside the sources ("": the build's, build_folder())."""
    if not isinstance(value, str):
        raise ValueError(
            f'{name}={brief(value)} is not a path; allowed: a folder, or "" for the build\'s'
        )
    if not value:  # the build's own runs
        return str(build_folder() / ".jupyter_cache" / "appendix_b")
    check_outside_sources(name, value)
    return value


def _passes(check):
    """A rule that keeps the value once ``check(value)`` passes (it names the parameter itself)."""

    def rule(name: str, value):
        check(value)
        return value

    return rule


# -- the setting template's parameters (Appendix B's grid) ---------------------------------------

#: The template's parameters that make a setting (SimConfig's but engine and eps).
SETTING_PARAMS = ("alpha", "gamma", "norm", "placement", "n", "d", "layers", "samples", "seed")
#: The template needs three tokens (the recency probability) and two layers (h(j) is read from the
#: first layer's output, Definition 1 matters from layer 2 on).
TEMPLATE_MINIMA = {"n": 3, "layers": 2}
_TEMPLATE = (
    f"allowed: a notebook with the parameters {', '.join(SETTING_PARAMS)} (setting_template)"
)


def template_path(template) -> Path:
    if not isinstance(template, (str, os.PathLike)):
        raise ValueError(f"template={brief(template)} is not a path; {_TEMPLATE}")
    path = Path(template)
    if not path.is_file():
        what = "is not a file" if path.exists() else "does not exist"
        raise ValueError(f"template={path_text(template)} {what}; {_TEMPLATE}")
    return path.resolve()


def template_defaults(template) -> dict:
    """The template's parameters and defaults (a notebook with the :data:`SETTING_PARAMS`)."""
    path, bad = template_path(template), f"template={path_text(template)}"
    try:
        found = defaults(path)
    except Exception as exc:  # not JSON, not a notebook, ...
        why = f"is not a readable notebook ({type(exc).__name__})"
        raise ValueError(f"{bad} {why}; {_TEMPLATE}") from None
    missing = [p for p in SETTING_PARAMS if p not in found]
    if missing:
        raise ValueError(f"{bad} lacks the parameter(s) {', '.join(missing)}; {_TEMPLATE}")
    return found


def validate_params(params: dict, template=None) -> dict:
    """One setting, complete and normalized: the missing parameters from the template's defaults (or
    SimConfig's), every value by SimConfig's rules and :data:`TEMPLATE_MINIMA`, no other names."""
    if not isinstance(params, dict):
        allowed = f"a dict of {', '.join(SETTING_PARAMS)}"
        raise ValueError(f"params={brief(params)} is not a dict; allowed: {allowed}")
    unknown = [k for k in params if k not in SETTING_PARAMS]
    if unknown:
        extra = " (set by the driver)" if "result_path" in unknown else ""
        raise ValueError(
            f"unknown parameter(s) {brief(unknown)}{extra}; allowed: {', '.join(SETTING_PARAMS)}"
        )
    defaults = template_defaults(template) if template is not None else SimConfig().to_dict()
    cfg = SimConfig(**{k: params.get(k, defaults[k]) for k in SETTING_PARAMS})
    for name, lo in TEMPLATE_MINIMA.items():
        check_int(name, getattr(cfg, name), lo)
    return {k: getattr(cfg, k) for k in SETTING_PARAMS}


def result_file(result_path: str = "") -> Path:
    """Where the template writes its result: ``result_path`` ("": setting_result.json), nothing
    there yet or a result file of this library, in a writable folder."""
    if not isinstance(result_path, (str, os.PathLike)):
        allowed = 'a string ("" = setting_result.json)'
        raise ValueError(f"result_path={brief(result_path)} is not a path; allowed: {allowed}")
    path = Path(os.fspath(result_path) or "setting_result.json")
    check_outside_sources("result_path", path.resolve().parent)
    return check_output_path(path, "result_path", ours=is_result_file, what=RESULT_FILE)


# -- what relates several parameters ---------------------------------------------------------------


def _fits(name: str, value, workers: int = 1, **setting) -> None:
    """The largest setting ``name`` sizes (SimConfig's fields) fits this machine's memory, checked
    now (the simulator checks it only when that run comes, under its own field's name)."""
    from recency_lib.engines import memory_limit, resolve_engine, run_bytes

    cfg = SimConfig(**setting)
    engine = resolve_engine(cfg)
    need, limit = run_bytes(cfg, engine, workers), memory_limit()
    if need > limit:
        raise ValueError(
            f"{name}={brief(value)} needs about {need / 2**30:.3g} GiB of memory ({engine} engine, "
            f"{workers} worker(s)); this machine allows {limit / 2**30:.3g} GiB; "
            f"allowed: a smaller {name}"
        )


def _beyond(v: dict) -> None:
    """RoPE rotates pairs of coordinates: d and each head's size d / heads are even. The longest
    length runs the common decoder layout on the dense engine."""
    from .beyond import combined_fields

    rope = "(RoPE rotates pairs of coordinates)"
    if v["d"] % 2:
        raise ValueError(f"d={v['d']} is not allowed; allowed: an even hidden size {rope}")
    if v["d"] % v["heads"] or (v["d"] // v["heads"]) % 2:
        raise ValueError(
            f"heads={v['heads']} is not allowed with d={v['d']}; allowed: a divisor of d whose "
            f"head size d / heads is even {rope}"
        )
    longest = max(v["long_lengths"])
    setting = dict(alpha=0.5, n=longest, d=v["d"], layers=v["layers"], samples=v["long_samples"])
    setting.update(seed=v["seed"], weights_seed=v["weights_seed"], **combined_fields(v["heads"]))
    _fits("long_lengths", longest, v["workers"], **setting)


def _conclusion(v: dict) -> None:
    check_int("long_n", v["long_n"], v["n"] + 1)  # the long runs are longer than n
    setting = dict(alpha=v["alpha"], gamma=v["gamma"], d=v["d"], layers=v["layers"], seed=v["seed"])
    _fits("long_n", v["long_n"], n=v["long_n"], samples=v["long_samples"], **setting)


def _empirical(v: dict) -> None:
    setting = dict(alpha=v["alpha"], gamma=v["gamma"], n=v["n"], d=v["d"], seed=v["seed"])
    layers = v["depth_layers"]
    _fits("depth_layers", layers, layers=layers, samples=v["samples_depth"], **setting)


def _appendix_b(v: dict) -> None:
    """At most :data:`GRID_MAX` settings; an alpha below 1 in the residual grid (Figure 5's closed
    forms are drawn at its alphas; at alpha = 1 every token is the same)."""
    alphas = v["alphas_residual"]
    if len(alphas) < 2 or not any(a < 1 for a in alphas):
        raise ValueError(
            f"alphas_residual={brief(alphas)} is not allowed; allowed: two or more alphas, one "
            f"below 1 (Figure 5 compares h(j)'s rise with the smallest alpha's, and its closed "
            f"forms are drawn at the grid's alphas)"
        )
    count = len(v["alphas_no_residual"]) + len(v["gammas_residual"]) * len(v["alphas_residual"])
    if count > GRID_MAX:
        raise ValueError(
            f"alphas_no_residual, alphas_residual and gammas_residual make {count} settings; "
            f"allowed: at most {GRID_MAX} "
            f"(len(alphas_no_residual) + len(gammas_residual) * len(alphas_residual))"
        )


def _setting_template(v: dict) -> None:
    validate_params({k: v[k] for k in SETTING_PARAMS})


# -- the pages -------------------------------------------------------------------------------------

GAMMA = real(allowed="a finite real number")

#: A parameter's rule by its name, on every page (a name with the word "samples" counts sequences:
#: SAMPLES). The minima are what the pages need: n >= 3 for a step between two earlier keys;
#: layers >= 2 where order appears from the second layer on, depth_layers >= 3 where primacy starts;
#: d >= 4 where closed forms are held to simulation (Appendix A's ds); gamma > 0 for a residual run.
RULES = {
    "seed": SEED,
    "weights_seed": SEED,
    "workers": _workers,
    "n": integer(3),
    "d": integer(2),
    "layers": integer(2),
    "alpha": real(0.0, 1.0, allowed="a real number in [0, 1]"),
    "gamma": real(0.0, lo_open=True, allowed="a residual weight > 0"),
    "alphas": real_list(0.0, 0.999, "[0.2, 0.5]", lo_open=True),
    "depth_layers": integer(3),
    "long_n": integer(7),
    "heads": integer(1),
    "persample_divisor": integer(1),
    "networks": integer(2, LIST_MAX),
    "long_lengths": int_list(3, "[10, 32]"),
    "boost": integer(1),
    "ds": int_list(4, "[16, 64]", distinct=True),
    "alphas_no_residual": real_list(0.0, 1.0, "[0.2, 0.4]"),
    "alphas_residual": real_list(0.0, 1.0, "[0.0, 0.2]"),
    "gammas_residual": RESIDUAL_WEIGHTS,
    "out_dir": _runs_folder,
    "template": _passes(template_defaults),
    "norm": lambda name, v: check_choice(name, v, NORMS),
    "placement": lambda name, v: check_choice(name, v, PLACEMENT_NAMES),
    "placements": name_list(PLACEMENT_NAMES, "['pre', 'post']"),
    "result_path": _passes(result_file),
}

#: page -> (its own rules before RULES, a check of several parameters or None). Chapter 7's
#: contrasts need two queries past key 4 (n >= 6); where gamma 0 is allowed it is no residual.
PAGES: dict[str, tuple[dict, object]] = {
    "input_distribution": ({"d": integer(4)}, None),
    "empirical": ({}, _empirical),
    "conclusion": ({"n": integer(6), "gamma": GAMMA}, _conclusion),
    "beyond": ({"n": integer(6)}, _beyond),
    "appendix_b": ({}, _appendix_b),
    "setting_template": ({"gamma": GAMMA}, _setting_template),
}

#: Parameters that name where a page writes, and what a rerun makes of them when relative or empty:
#: a path in the rerun's own folder (companion.rerun).
OUTPUTS = {
    "appendix_b": {"out_dir": "appendix_b"},
    "setting_template": {"result_path": "setting_result.json"},
}


def rules(page: str) -> dict:
    """Each parameter of ``page`` (book/<page>.ipynb's parameters cell, in order) -> its rule."""
    path = BOOK / f"{page}.ipynb"
    if not isinstance(page, str) or not re.fullmatch(r"\w+", page) or not path.is_file():
        raise ValueError(
            f"page={brief(page)} is not allowed; allowed: a notebook book/<page>.ipynb"
        )
    own, out = PAGES.get(page, ({}, None))[0], {}
    for name in defaults(path):
        word = SAMPLES if "samples" in name.split("_") else None
        out[name] = own.get(name) or RULES.get(name) or word
        if out[name] is None:  # the page's author adds one
            raise ValueError(
                f"{page}: parameter {name} has no rule; allowed: one in companion.params"
            )
    return out


def derived_sizes(page: str) -> tuple[str, ...]:
    """The parameters of ``page`` besides ``samples`` that count sequences (rule SAMPLES)."""
    return tuple(n for n, rule in rules(page).items() if rule is SAMPLES and n != "samples")


def follow_samples(page: str, defaults: dict, given: dict) -> dict:
    """The derived sizes ``given`` leaves out, each scaled as ``given`` scales ``samples`` (rounded,
    at least SAMPLES_MIN, and up to the paper's final scale: conventions.scaled)."""
    names = derived_sizes(page)
    if "samples" not in given or not names:
        return {}
    samples, default = SAMPLES("samples", given["samples"]), SAMPLES("samples", defaults["samples"])
    if samples == default:
        return {}
    scaled = {
        n: conventions.scaled(SAMPLES(n, defaults[n]) / default, samples)
        for n in names
        if n not in given
    }
    return {n: max(SAMPLES_MIN, size) for n, size in scaled.items()}


#: What IPython keeps in a notebook's namespace as data: its history of inputs and outputs.
_IPYTHON_DATA = ("In", "Out")


def _given(name: str, value) -> bool:
    """Whether a namespace's ``name`` holds what a parameter could be: data, not a module, a
    function or IPython's own."""
    data = (numbers.Number, str, list, tuple, dict, type(None))
    return not name.startswith("_") and name not in _IPYTHON_DATA and isinstance(value, data)


def check(page: str, values) -> dict:
    """name -> the value normalized of each parameter of ``page`` in ``values`` (a page's namespace
    or a dict of values), checked under its own name, then what relates several. Data under any
    other name is refused: papermill runs a misspelled parameter with only a warning."""
    known = rules(page)
    unknown = [brief(k) for k, v in values.items() if k not in known and _given(k, v)]
    if unknown:
        allowed = f"allowed: {', '.join(known)}"
        raise ValueError(f"unknown parameter(s) {', '.join(unknown)} for {page}.ipynb; {allowed}")
    out = {name: rule(name, values[name]) for name, rule in known.items()}
    related = PAGES.get(page, ({}, None))[1]
    if related is not None:
        related(out)
    return out
