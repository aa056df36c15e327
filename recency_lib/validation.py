"""Checks of the values a user types, one message format: ``ValueError("{name}={value!r} is out of
range; allowed: ...")``; each returns the value as a plain built-in (a float array for the closed
forms, which broadcast). The command line prints the message as one ``error:`` line.
"""

from __future__ import annotations

import math
import numbers
import reprlib

import numpy as np

INT_MAX = 2**63 - 1  # sizes, counts and seeds: numpy's index type

_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60
_SHORT.maxlong = 40


def brief(value) -> str:
    """``repr(value)`` cut to about 60 characters, so that a message stays one readable line."""
    return _SHORT.repr(value)


def check_int(name: str, value, minimum: int, maximum: int = INT_MAX) -> int:
    """An integer (not a bool) in [minimum, maximum], as a plain int."""
    allowed = f"an integer >= {minimum}"
    if maximum < INT_MAX:
        allowed = f"an integer in [{minimum}, {maximum}]"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name}={brief(value)} is not an integer; allowed: {allowed}")
    if not minimum <= value <= maximum:
        raise ValueError(f"{name}={brief(value)} is out of range; allowed: {allowed}")
    return int(value)


def check_real(name: str, value, *, lo=None, hi=None, lo_open=False, allowed: str) -> float:
    """A finite real number (not a bool) in [lo, hi] ((lo, hi] with ``lo_open``), as a plain float
    (-0.0 as 0.0)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}={brief(value)} is not a number; allowed: {allowed}")
    try:
        v = float(value) + 0.0
    except OverflowError:
        v = math.inf
    if (
        not math.isfinite(v)
        or (lo is not None and (v <= lo if lo_open else v < lo))
        or (hi is not None and v > hi)
    ):
        raise ValueError(f"{name}={brief(value)} is out of range; allowed: {allowed}")
    return v


def check_choice(name: str, value, choices) -> str:
    """One of ``choices`` (strings, or None where allowed), exactly."""
    if not (value is None or isinstance(value, str)) or value not in choices:
        raise ValueError(
            f"{name}={brief(value)} is not allowed; allowed: one of {', '.join(map(repr, choices))}"
        )
    return value


def check_bool(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}={brief(value)} is not allowed; allowed: True or False")
    return bool(value)


def check_level(level, name: str = "level") -> float:
    """An error probability in (0, 1)."""
    v = check_real(name, level, lo=0.0, lo_open=True, hi=1.0, allowed="a number in (0, 1)")
    if v >= 1.0:
        raise ValueError(f"{name}={brief(level)} is out of range; allowed: a number in (0, 1)")
    return v


# -- arrays (the closed forms broadcast over their arguments) -------------------------------------


def bounded_array(
    name, value, *, lo=None, hi=None, lo_open=False, allowed, integers=False, inf=False
):
    """Finite reals within [lo, hi] ((lo, hi] with ``lo_open``; +inf too with ``inf``), elementwise,
    as a float array."""
    if isinstance(value, (bool, np.bool_, str, bytes)):
        raise ValueError(f"{name}={brief(value)} is not a number; allowed: {allowed}")
    try:
        x = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name}={brief(value)} is not a number; allowed: {allowed}") from None
    bad = np.isnan(x) | (np.isinf(x) & ~(inf & (x > 0)))
    if lo is not None:
        bad |= (x <= lo) if lo_open else (x < lo)
    if hi is not None:
        bad |= x > hi
    if integers:
        bad |= x != np.floor(x)
    if np.any(bad):
        raise ValueError(f"{name}={x[bad].flat[0].item()!r} is out of range; allowed: {allowed}")
    return x


def index_array(name: str, value) -> np.ndarray:
    """Token indices: integers >= 1 (1-based, as in the paper)."""
    return bounded_array(
        name, value, lo=1.0, integers=True, allowed="integers >= 1 (1-based token index)"
    )


def d_array(value, minimum: float = 1.0, strict: bool = False) -> np.ndarray:
    return bounded_array(
        "d",
        value,
        lo=minimum,
        lo_open=strict,
        allowed=f"finite real numbers {'>' if strict else '>='} {minimum:g}",
    )


def alpha_array(value) -> np.ndarray:
    return bounded_array("alpha", value, lo=0.0, hi=1.0, allowed="real numbers in [0, 1]")


def gamma_array(value) -> np.ndarray:
    return bounded_array("gamma", value, allowed="finite real numbers")


def scalar(name: str, value):
    if np.ndim(value) != 0:
        raise ValueError(f"{name}={brief(value)} has shape {np.shape(value)}; allowed: a scalar")
    return value
