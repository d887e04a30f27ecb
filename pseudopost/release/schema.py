"""What a release spec is: its checked form (:class:`ReleaseSpec`), the kinds of its values, and
the checks every section goes through.

A spec is a TOML file of sections. Four are common to every mechanism and read by
:mod:`pseudopost.release.spec`: ``[data]`` (the input), ``[release]`` (m, output folder,
report), ``[budget]`` (the dataset's lifetime budget and its ledger) and ``[disclosure]`` (the
intruder's keys). ``[mechanism] name`` picks the mechanism's adapter
(:mod:`pseudopost.release.adapters`), which owns the rest of ``[mechanism]``, its own sections
and any keys it adds to ``[release]`` or ``[budget]``.

Every value is checked against its *kind* (``"posint"``, ``"list[str]"``, ... or a callable
``kind(key, value) -> value`` of an adapter) and every problem is one :class:`SpecError` line
naming the key (``section.key``), the value found, what was expected and the fix::

    spec key 'sampling.draws': expected an integer >= 1, got 0. Fix: set 'sampling.draws' to an
    integer >= 1.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pseudopost.release.errors import SpecError

if TYPE_CHECKING:
    import pandas as pd

    from pseudopost.formats import Codebook

__all__ = [
    "EXPECTED",
    "Kind",
    "ReleaseInput",
    "ReleaseSpec",
    "Schema",
    "check_kind",
    "check_sections",
    "choice",
    "distinct",
    "edges_or_count",
    "fail",
    "in_range",
    "levels",
    "pair",
    "str_list",
    "table_of",
]

#: a kind: one of the names of :data:`EXPECTED`, or ``kind(key, value) -> cleaned value`` (which
#: raises :class:`SpecError`) with an ``expected`` attribute for the "is missing" message
Kind = str | Callable[[str, Any], Any]
#: the keys of one section: key -> (required, kind)
Schema = Mapping[str, tuple[bool, Kind]]

EXPECTED = {
    "str": "a string",
    "list[str]": "a list of strings",
    "posfloat": "a number > 0",
    "nonnegfloat": "a number >= 0",
    "float": "a number",
    "bool": "true or false",
    "posint": "an integer >= 1",
    "nonnegint": "an integer >= 0",
    "table": "a table {column = value, ...}",
}


def fail(key: str, value: Any, expected: str, fix: str = "") -> SpecError:
    """The one-line error.

    ::

        spec key 'KEY': expected EXPECTED, got VALUE. Fix: FIX
    """
    tail = f" Fix: {fix}" if fix else ""
    return SpecError(f"spec key '{key}': expected {expected}, got {value!r}.{tail}")


def choice(key: str, value: Any, choices: Iterable[Any]) -> Any:
    """``value`` if it is one of ``choices``, else a :class:`SpecError`."""
    choices = list(choices)
    if value not in choices:
        raise fail(key, value, f"one of {choices}", f"set '{key}' to one of them.")
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_kind(key: str, value: Any, kind: Kind) -> Any:
    """``value`` checked against ``kind`` and cleaned (numbers as float, ...)."""
    if callable(kind):
        return kind(key, value)
    if kind == "table":
        if not isinstance(value, dict) or not value:
            raise fail(
                key,
                value,
                "a non-empty table {column = value, ...}",
                f"write {key} = {{ column = ... }}.",
            )
        return value
    ok: bool
    if kind == "str":
        ok = isinstance(value, str) and value != ""
    elif kind == "list[str]":
        ok = isinstance(value, list) and all(isinstance(v, str) and v for v in value)
    elif kind == "bool":
        ok = isinstance(value, bool)
    elif kind in ("posint", "nonnegint"):
        ok = isinstance(value, int) and not isinstance(value, bool)
        ok = ok and (value >= 1 if kind == "posint" else value >= 0)
    elif kind in ("posfloat", "nonnegfloat", "float"):
        ok = _is_number(value) and math.isfinite(value)
        if ok and kind == "posfloat":
            ok = value > 0
        if ok and kind == "nonnegfloat":
            ok = value >= 0
        if ok:
            value = float(value)
    else:
        raise TypeError(f"unknown spec kind {kind!r}")
    if not ok:
        raise fail(key, value, EXPECTED[kind], f"set '{key}' to {EXPECTED[kind]}.")
    return value


def _expected(kind: Kind) -> str:
    return getattr(kind, "expected", "a value") if callable(kind) else EXPECTED[kind]


def check_sections(
    raw: Mapping[str, Any],
    layout: Mapping[str, Schema],
    required: Iterable[str],
    mechanism: str,
    hints: Mapping[str, str],
) -> dict[str, dict[str, Any]]:
    """Check the spec's sections against ``layout`` (section -> its keys): no unknown section
    or key (``hints`` explains keys that belong to another mechanism's layout), every
    ``required`` section and the required keys of every section given present, every value of
    its kind. Returns the cleaned sections (absent optional keys left out; an absent optional
    section as an empty one, its required keys not asked for)."""

    def hint(item: str) -> str:
        text = hints.get(item)
        return f" ({text.format(name=mechanism)})" if text else ""

    unknown = sorted(set(raw) - set(layout))
    if unknown:
        raise fail(
            unknown[0],
            raw[unknown[0]],
            f"one of the sections {sorted(layout)} for mechanism {mechanism!r}",
            f"remove or rename section '{unknown[0]}'{hint(unknown[0])}.",
        )
    for name, table in raw.items():
        if not isinstance(table, dict):
            raise fail(name, table, f"a table [{name}]", f"write it as a [{name}] section.")
    for name in required:
        if name not in raw:
            raise SpecError(f"spec section '[{name}]' is missing. Fix: add a [{name}] table.")
    out: dict[str, dict[str, Any]] = {}
    for name, keys in layout.items():
        if name not in raw and name not in required:
            out[name] = {}  # an optional section not given: its required keys are not asked for
            continue
        table = raw[name]
        for key in table:
            if key not in keys:
                raise fail(
                    f"{name}.{key}",
                    table[key],
                    f"one of the keys {sorted(keys)}",
                    f"remove or rename '{name}.{key}'{hint(f'{name}.{key}')}.",
                )
        clean = {}
        for key, (needed, kind) in keys.items():
            if key not in table:
                if needed:
                    raise SpecError(
                        f"spec key '{name}.{key}' is missing: expected {_expected(kind)}. "
                        f"Fix: add '{key} = ...' under [{name}]."
                    )
                continue
            clean[key] = check_kind(f"{name}.{key}", table[key], kind)
        out[name] = clean
    return out


# ---------------------------------------------------------------- values inside a section
def in_range(key: str, value: float, low: float, high: float, closed: str, example: str) -> None:
    """Refuse ``value`` outside the interval from ``low`` to ``high``; ``closed`` is "both",
    "left", "right" or "neither"."""
    lo = value >= low if closed in ("both", "left") else value > low
    hi = value <= high if closed in ("both", "right") else value < high
    if not (lo and hi):
        lb = "[" if closed in ("both", "left") else "("
        rb = "]" if closed in ("both", "right") else ")"
        raise fail(key, value, f"a number in {lb}{low}, {high}{rb}", f"e.g. {example}.")


def pair(key: str, value: Any) -> tuple[float, float]:
    """A list ``[low, high]`` of two finite numbers, low < high (public bounds)."""
    ok = (
        isinstance(value, list)
        and len(value) == 2
        and all(_is_number(v) and math.isfinite(v) for v in value)
        and value[0] < value[1]
    )
    if not ok:
        raise fail(
            key,
            value,
            "a list [low, high] of two finite numbers, low < high",
            f"write {key} = [low, high].",
        )
    return float(value[0]), float(value[1])


def edges_or_count(key: str, value: Any) -> int | list[float]:
    """A bin count >= 2 or a list of >= 2 increasing finite edges."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 2:
        return value
    if (
        isinstance(value, list)
        and len(value) >= 2
        and all(_is_number(v) and math.isfinite(v) for v in value)
        and all(b > a for a, b in itertools.pairwise(value))
    ):
        return [float(v) for v in value]
    raise fail(
        key,
        value,
        "a bin count >= 2 or a list of >= 2 increasing edges",
        f"e.g. {key} = 8 (with bounds) or [0, 10, 20, 50].",
    )


def levels(key: str, value: Any) -> list:
    """A non-empty list of distinct levels (strings or integers)."""
    if not (isinstance(value, list) and value and all(isinstance(v, str | int) for v in value)):
        raise fail(
            key,
            value,
            "a non-empty list of levels (strings or integers)",
            f'e.g. {key} = ["a", "b"].',
        )
    if len(set(value)) != len(value):
        raise fail(key, value, "distinct levels", "drop the duplicates.")
    return list(value)


def str_list(key: str, value: Any) -> list[str]:
    """A list of column names."""
    if not (isinstance(value, list) and all(isinstance(v, str) and v for v in value)):
        raise fail(key, value, "a list of column names", f'e.g. {key} = ["a", "b"].')
    return list(value)


def table_of(key: str, table: Mapping[str, Any], convert: Callable[[str, Any], Any]) -> dict:
    """Every entry of an inline table converted by ``convert(f"{key}.{column}", value)``."""
    return {col: convert(f"{key}.{col}", v) for col, v in table.items()}


def distinct(key: str, names: list[str]) -> None:
    """Refuse a list of column names with duplicates."""
    if len(set(names)) != len(names):
        raise fail(key, names, "distinct column names", "drop duplicates.")


# ---------------------------------------------------------------- the checked spec
@dataclass(frozen=True, eq=False)
class ReleaseInput:
    """A release's input, read once (:func:`pseudopost.release.spec.load_input`): the data
    ``frame``, the ``codebook`` read with it (a :class:`pseudopost.formats.Codebook` for SPSS
    and Stata files, else None) and ``plan``, what the adapter built from them once
    (:meth:`pseudopost.release.adapters.MechanismAdapter.plan`; None when it keeps nothing).
    Equal only to itself."""

    frame: pd.DataFrame
    codebook: Codebook | None = None
    plan: Any = None


@dataclass(frozen=True)
class ReleaseSpec:
    """A checked spec: the common sections resolved (paths absolute, defaults filled in) and
    the mechanism's own settings as its adapter read them (``settings``, with at least
    ``seed``). ``released`` (the released columns) and data-dependent defaults are filled in by
    :func:`pseudopost.release.spec.resolve` once the data are read; ``loaded`` (a
    :class:`ReleaseInput`) is the input a release read and planned once
    (:func:`pseudopost.release.spec.checked`), carried to every later step."""

    path: Path
    text: str
    mechanism: str
    settings: Any
    data_path: Path
    data_format: str
    m: int
    out: Path
    report: bool
    total_epsilon: float
    total_delta: float | None
    ledger_path: Path
    disclosure_keys: tuple[str, ...]
    disclosure_radius: float
    disclosure_sensitive: str
    released: tuple[str, ...] = ()
    raw: dict[str, Any] = field(repr=False, default_factory=dict)
    loaded: ReleaseInput | None = field(default=None, repr=False, compare=False)

    @property
    def sha256(self) -> str:
        """SHA-256 of the spec file's text."""
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def seed(self) -> int:
        """The release's seed (where the mechanism's layout keeps it)."""
        return int(self.settings.seed)

    @property
    def columns(self) -> list[str]:
        """The released columns, in order."""
        return list(self.released)
