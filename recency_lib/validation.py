"""Input checks shared by the whole library: one place, one message format.

Every check raises ``ValueError`` naming the parameter, the value and what is allowed,
``f"{name}={value!r} is out of range; allowed: ..."`` (long values cut by :func:`short`), and returns
the value normalised to a builtin type (or a float array for the broadcasting checks of the closed
forms). The command line prints that message as one ``error:`` line and exits 2.
"""
from __future__ import annotations

import math
import numbers
import reprlib

import numpy as np

#: Largest integer a size, count or seed may take: numpy's index type (int64).
INT_MAX = 2 ** 63 - 1

_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60
_SHORT.maxlong = 40
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = _SHORT.maxset = 6


def short(value) -> str:
    """``repr(value)`` cut to about 60 characters (a 400-digit integer, a 300-character path), so that
    an error message stays one readable line; the cut is marked with '...'."""
    try:
        return _SHORT.repr(value)
    except Exception:                                   # a hostile __repr__
        return f"<{type(value).__name__}>"


def one_line(message: str, limit: int = 400) -> str:
    """``message`` with control characters escaped and cut to ``limit`` characters (head ... tail)."""
    text = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(message))
    return text if len(text) <= limit else f"{text[:limit * 2 // 3]} ... {text[-limit // 3:]}"


# -- scalars -------------------------------------------------------------------------------------

def check_int(name: str, value, minimum: int, maximum: int | None = None) -> int:
    """An integer (not a bool) in [minimum, maximum]; returned as a Python int."""
    allowed = f"an integer >= {minimum}" if maximum is None else f"an integer in [{minimum}, {maximum}]"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name}={short(value)} is not an integer; allowed: {allowed}")
    if value < minimum or (maximum is not None and value > maximum):
        raise ValueError(f"{name}={short(value)} is out of range; allowed: {allowed}")
    return int(value)


def check_real(name: str, value, *, lo: float | None = None, hi: float | None = None,
               lo_open: bool = False, allowed: str) -> float:
    """A finite real number (not a bool) in [lo, hi] ((lo, hi] with ``lo_open``); returned as a float.

    Integers too large for a float (``10**400``) are out of range, not an ``OverflowError``.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}={short(value)} is not a number; allowed: {allowed}")
    try:
        v = float(value)
    except (OverflowError, TypeError, ValueError):
        raise ValueError(f"{name}={short(value)} is out of range; allowed: {allowed}") from None
    below = lo is not None and (v <= lo if lo_open else v < lo)
    if not math.isfinite(v) or below or (hi is not None and v > hi):
        raise ValueError(f"{name}={short(value)} is out of range; allowed: {allowed}")
    return v


def check_choice(name: str, value, choices) -> str:
    """One of the strings ``choices`` (exact, case-sensitive); returned as a builtin str."""
    text = str.__str__(value) if isinstance(value, str) else None      # a str subclass as a plain str
    if text not in choices:
        raise ValueError(f"{name}={short(value)} is not allowed; allowed: one of {', '.join(map(repr, choices))}")
    return text


def check_bool(name: str, value) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}={short(value)} is not allowed; allowed: True or False")
    return bool(value)


def check_z(z, name: str = "z") -> float:
    """A threshold in standard errors: a finite number > 0."""
    return check_real(name, z, lo=0.0, lo_open=True, allowed="a finite number > 0")


def check_level(level, name: str = "level") -> float:
    """An error probability: a number in (0, 1)."""
    v = check_real(name, level, lo=0.0, lo_open=True, hi=1.0, allowed="a number in (0, 1)")
    if v >= 1.0:
        raise ValueError(f"{name}={short(level)} is out of range; allowed: a number in (0, 1)")
    return v


# -- arrays (the closed forms broadcast over their arguments) -------------------------------------

def first_bad(x: np.ndarray, bad: np.ndarray):
    """The first offending element of x (as a Python scalar) for an error message."""
    return x[bad].flat[0].item()


def real_array(name: str, value) -> np.ndarray:
    """``value`` as a float array; ValueError for bools, strings, objects."""
    if isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name}={short(value)} is not a number; allowed: real numbers")
    try:
        x = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{name}={short(value)} is not a number; allowed: real numbers") from None
    if x.dtype == object:
        raise ValueError(f"{name}={short(value)} is not a number; allowed: real numbers")
    return x


def index_array(name: str, value) -> np.ndarray:
    """Token indices: integers >= 1 (1-based, as in the paper)."""
    x = real_array(name, value)
    bad = ~np.isfinite(x) | (x < 1) | (x != np.floor(x))
    if np.any(bad):
        raise ValueError(f"{name}={first_bad(x, bad)!r} is out of range; allowed: integers >= 1 "
                         f"(1-based token index)")
    return x


def bounded_array(name: str, value, *, lo: float | None = None, hi: float | None = None,
                  lo_open: bool = False, allowed: str) -> np.ndarray:
    """Finite reals within [lo, hi] ((lo, hi] with ``lo_open``), elementwise."""
    x = real_array(name, value)
    bad = ~np.isfinite(x)
    if lo is not None:
        bad |= (x <= lo) if lo_open else (x < lo)
    if hi is not None:
        bad |= x > hi
    if np.any(bad):
        raise ValueError(f"{name}={first_bad(x, bad)!r} is out of range; allowed: {allowed}")
    return x


def d_array(value, minimum: float = 1.0, strict: bool = False) -> np.ndarray:
    op = ">" if strict else ">="
    return bounded_array("d", value, lo=minimum, lo_open=strict,
                         allowed=f"finite real numbers {op} {minimum:g}")


def alpha_array(value) -> np.ndarray:
    return bounded_array("alpha", value, lo=0.0, hi=1.0, allowed="real numbers in [0, 1]")


def gamma_array(value) -> np.ndarray:
    return bounded_array("gamma", value, allowed="finite real numbers")


def scalar(name: str, value):
    if np.ndim(value) != 0:
        raise ValueError(f"{name}={short(value)} has shape {np.shape(value)}; allowed: a scalar")
    return value
