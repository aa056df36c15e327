"""Input checks shared by the whole library: one place, one message format.

Every check raises ``ValueError`` naming the parameter, the value and what is allowed,
``f"{name}={value!r} is out of range; allowed: ..."`` (long values cut by :func:`short`), and returns
the value normalised to a builtin type (or a float array for the broadcasting checks of the closed
forms). The command line prints that message as one ``error:`` line and exits 2.
"""
from __future__ import annotations

import math
import numbers
import operator

import numpy as np

from .text import one_line, short, short_path  # noqa: F401  (re-exported: every check cuts values with short)

#: Largest integer a size, count or seed may take: numpy's index type (int64).
INT_MAX = 2 ** 63 - 1


# -- scalars -------------------------------------------------------------------------------------

def as_int(value):
    """``value`` as a plain ``int``, or None when it is not an integer (bools are not).

    The value is converted before anything is compared, through :func:`operator.index` (which gives
    the true integer value of an int subclass, whatever its ``__lt__``, ``__int__`` or ``__index__``
    say, and the value of a numpy integer), so a check never asks the caller's object anything."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        return None
    try:
        v = operator.index(value)
    except Exception:                                   # a hostile __index__ (or a warning made an error)
        return None
    if isinstance(v, bool):
        return None
    return v if type(v) is int else int.__index__(v)


def as_float(value):
    """``value`` as a plain ``float`` (``-0.0`` as ``0.0``: equal values, one form), or None when it is
    not a real number (bools are not), or "overflow" for an integer too large for a float. Converted
    through :func:`float` before anything is compared, as :func:`as_int`."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return None
    i = as_int(value) if isinstance(value, numbers.Integral) else None
    try:
        v = float(i if i is not None else value)
    except OverflowError:
        return "overflow"
    except Exception:                                   # a hostile __float__
        return None
    if type(v) is not float:                            # pragma: no cover - float() returns a float
        v = float.__float__(v)
    return v + 0.0                                      # -0.0 -> 0.0


def check_int(name: str, value, minimum: int, maximum: int | None = None) -> int:
    """An integer (not a bool) in [minimum, maximum]; returned as a Python int (converted first,
    :func:`as_int`, and the plain value checked)."""
    allowed = f"an integer >= {minimum}" if maximum is None else f"an integer in [{minimum}, {maximum}]"
    v = as_int(value)
    if v is None:
        raise ValueError(f"{name}={short(value)} is not an integer; allowed: {allowed}")
    if v < minimum or (maximum is not None and v > maximum):
        raise ValueError(f"{name}={short(v)} is out of range; allowed: {allowed}")
    return v


def check_real(name: str, value, *, lo: float | None = None, hi: float | None = None,
               lo_open: bool = False, allowed: str) -> float:
    """A finite real number (not a bool) in [lo, hi] ((lo, hi] with ``lo_open``); returned as a plain
    float (converted first, :func:`as_float`, and the plain value checked; ``-0.0`` becomes ``0.0``).

    Integers too large for a float (``10**400``) are out of range, not an ``OverflowError``.
    """
    v = as_float(value)
    if v is None:
        raise ValueError(f"{name}={short(value)} is not a number; allowed: {allowed}")
    if v == "overflow":
        raise ValueError(f"{name}={short(value)} is out of range; allowed: {allowed}")
    below = lo is not None and (v <= lo if lo_open else v < lo)
    if not math.isfinite(v) or below or (hi is not None and v > hi):
        raise ValueError(f"{name}={short(v)} is out of range; allowed: {allowed}")
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
