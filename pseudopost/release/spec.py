"""Reading a release spec: one loader, one validate, for every mechanism.

A spec names the input data, the mechanism and its settings, the number m of synthetic
datasets, the output folder and the budget. :func:`load_spec` reads the common sections
(:mod:`pseudopost.release.schema`) and hands the mechanism's own sections to its adapter
(:data:`pseudopost.release.adapters.ADAPTERS`, picked by ``[mechanism] name``)::

    [data]
    path = "../data/fatigue.csv"      # CSV, Parquet, SPSS .sav or Stata .dta; relative to the spec
    format = "csv"                    # optional: csv | parquet | sav | dta (default: the suffix)

    [mechanism]
    name = "pseudo_posterior"         # pseudo_posterior | reps | prism | entropy
    ...                               # and the mechanism's sections: see its adapter

    [release]
    m = 2                             # synthetic datasets (default 1)
    out = "fatigue-release"           # the output folder (or --out); never overwritten
    report = true                     # write report.html (default)

    [budget]
    total_epsilon = 200.0             # the dataset's lifetime budget (kept in the ledger)
    total_delta = 1e-4                # its lifetime delta (needed once a release spends delta)
    ledger = "fatigue.ledger.json"    # optional: default DATA.ledger.json beside the data

    [disclosure]
    keys = ["stress"]                 # what an intruder is assumed to know
    radius = 0.1                      # numeric keys match within 10 % of the real value
    sensitive = "cycle"               # the attribute an intruder tries to learn

Every problem is reported as one :class:`SpecError` line naming the key (``section.key``), the
value found, what was expected and the fix, and is raised before any output folder or ledger
entry is created. :func:`validate` then checks the data against the spec (the adapter's
columns and values, the disclosure keys, that the mechanism builds and accepts the data),
without any release. A release reads its data once (:func:`load_input`: the frame with the
SPSS/Stata codebook) and :func:`checked` resolves the spec on them and has the adapter plan
once; the spec it returns carries both (``spec.loaded``) to the fit, measures, report and
``account``.
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from pseudopost.release.adapters import ADAPTERS, MechanismAdapter
from pseudopost.release.errors import SpecError
from pseudopost.release.schema import ReleaseInput, ReleaseSpec, check_sections, choice, fail

__all__ = [
    "COMMON",
    "MECHANISMS",
    "ReleaseInput",
    "ReleaseSpec",
    "SpecError",
    "checked",
    "load_data",
    "load_input",
    "load_spec",
    "resolve",
    "validate",
]

#: the mechanisms registered when pseudopost was imported (see ADAPTERS for the live registry)
MECHANISMS = tuple(ADAPTERS)

#: data formats a spec may name (``data.format``, default from the suffix): SPSS ``.sav`` and
#: Stata ``.dta`` files are read by :func:`pseudopost.formats.read_file`
DATA_FORMATS = ("csv", "parquet", "sav", "dta")

#: the common sections' keys: key -> (required, kind); adapters add keys to release and budget
COMMON = {
    "data": {"path": (True, "str"), "format": (False, "str")},
    "release": {"m": (False, "posint"), "out": (False, "str"), "report": (False, "bool")},
    "budget": {
        "total_epsilon": (True, "posfloat"),
        "total_delta": (False, "float"),
        "ledger": (False, "str"),
    },
    "disclosure": {
        "keys": (False, "list[str]"),
        "radius": (False, "posfloat"),
        "sensitive": (False, "str"),
    },
}


def _read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    if not path.is_file():
        raise SpecError(
            f"spec file {str(path)!r} not found. Fix: give the path of an existing .toml file."
        )
    try:
        text = path.read_text(encoding="utf-8")
        return text, tomllib.loads(text)
    except UnicodeDecodeError:
        raise SpecError(
            f"spec file {str(path)!r} is not UTF-8 text. Fix: save it as UTF-8."
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(
            f"spec file {str(path)!r} is not valid TOML ({exc}). Fix: correct the syntax."
        ) from None


def _adapter(raw: dict[str, Any]) -> MechanismAdapter:
    """The adapter ``[mechanism] name`` picks (every section must be a table first)."""
    for name, table in raw.items():
        if not isinstance(table, dict):
            raise fail(name, table, f"a table [{name}]", f"write it as a [{name}] section.")
    if "mechanism" not in raw:
        raise SpecError("spec section '[mechanism]' is missing. Fix: add a [mechanism] table.")
    if "name" not in raw["mechanism"]:
        raise SpecError(
            "spec key 'mechanism.name' is missing: expected one of "
            f"{list(ADAPTERS)}. Fix: add 'name = ...' under [mechanism]."
        )
    return ADAPTERS[choice("mechanism.name", raw["mechanism"]["name"], ADAPTERS)]


def load_spec(path: str | Path, out: str | Path | None = None) -> ReleaseSpec:
    """Read and check a spec file (not its data; see :func:`validate`). ``out`` overrides
    ``release.out``."""
    spec_path = Path(path).resolve()
    text, raw = _read_toml(spec_path)
    adapter = _adapter(raw)
    layout = {
        "data": COMMON["data"],
        **adapter.sections,
        "release": {**COMMON["release"], **adapter.release_keys},
        "budget": {**COMMON["budget"], **adapter.budget_keys},
        "disclosure": COMMON["disclosure"],
    }
    release = ("release",) if adapter.release_required else ()
    required = ("data", *adapter.required, *release, "budget")
    s = check_sections(raw, layout, required, adapter.name, adapter.hints)
    base = spec_path.parent
    data_path, fmt = _data_path(base, s["data"])
    bud, rel, dis = s["budget"], s["release"], s["disclosure"]
    total_delta = bud.get("total_delta")
    if total_delta is not None and not 0 < total_delta < 1:
        raise fail("budget.total_delta", total_delta, "a number in (0, 1)", "e.g. 1e-4.")
    settings = adapter.parse(s)
    return ReleaseSpec(
        path=spec_path,
        text=text,
        mechanism=adapter.name,
        settings=settings,
        data_path=data_path,
        data_format=fmt,
        m=rel.get("m", 1),
        out=_out_path(base, rel, out),
        report=rel.get("report", True),
        total_epsilon=bud["total_epsilon"],
        total_delta=total_delta,
        ledger_path=_ledger_path(base, bud, data_path),
        disclosure_keys=tuple(dis.get("keys", ())),
        disclosure_radius=dis.get("radius", 0.1),
        disclosure_sensitive=dis.get("sensitive", ""),
        raw=raw,
    )


def _data_path(base: Path, data: dict[str, Any]) -> tuple[Path, str]:
    data_path = (base / data["path"]).resolve()
    suffix = data_path.suffix.lower().lstrip(".")
    fmt = data.get("format", {"pq": "parquet", "zsav": "sav"}.get(suffix, suffix))
    choice("data.format", fmt, DATA_FORMATS)
    return data_path, fmt


def _out_path(base: Path, rel: dict[str, Any], out) -> Path:
    if out is not None:
        return Path(out).resolve()
    if "out" in rel:
        return (base / rel["out"]).resolve()
    raise SpecError(
        "spec key 'release.out' is missing and no --out was given. "
        'Fix: add out = "folder" under [release] or pass --out DIR.'
    )


def _ledger_path(base: Path, bud: dict[str, Any], data_path: Path) -> Path:
    if "ledger" in bud:
        return (base / bud["ledger"]).resolve()
    return data_path.with_name(data_path.name + ".ledger.json")


def load_input(spec: ReleaseSpec) -> ReleaseInput:
    """Read the spec's data file once: the frame and, for SPSS/Stata, the codebook read with it
    (:func:`pseudopost.formats.read_file`); a missing or unreadable file is a
    :class:`SpecError`."""
    path = spec.data_path
    if not path.is_file():
        raise fail("data.path", str(path), "an existing data file", "correct the path.")
    codebook = None
    try:
        if spec.data_format == "csv":
            frame = pd.read_csv(path)
        elif spec.data_format == "parquet":
            frame = pd.read_parquet(path)
        else:  # SPSS / Stata, labels as categories and user-missing values as codes
            from pseudopost.formats import read_file

            frame, codebook = read_file(path)
    except Exception as exc:  # pandas raises many types for unreadable files
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise SpecError(
            f"spec key 'data.path': file {str(path)!r} could not be read as "
            f"{spec.data_format} ({type(exc).__name__}: {first}). "
            "Fix: check the file and 'data.format'."
        ) from None
    if frame.columns.duplicated().any():
        dup = frame.columns[frame.columns.duplicated()][0]
        raise SpecError(
            f"data file {str(path)!r}: column {dup!r} appears more than once. "
            "Fix: give every column a distinct name."
        )
    return ReleaseInput(frame, codebook)


def load_data(spec: ReleaseSpec) -> pd.DataFrame:
    """Read the spec's data file (the frame of :func:`load_input`)."""
    return load_input(spec).frame


def resolve(spec: ReleaseSpec, frame: pd.DataFrame) -> ReleaseSpec:
    """The spec with its data-dependent parts filled in by its adapter: the released columns,
    the disclosure keys and sensitive column, and mechanism defaults (e.g. REPS's and PRISM's
    delta = 1/n^2 when not given)."""
    return ADAPTERS[spec.mechanism].resolve(spec, frame)


def validate(spec: ReleaseSpec, data: pd.DataFrame | ReleaseInput | None = None) -> pd.DataFrame:
    """Check the data against the spec (columns, values, sizes, disclosure keys) and that the
    mechanism can be built on them; returns the data (``data`` as for :func:`checked`). No
    release happens."""
    return checked(spec, data).loaded.frame


def checked(spec: ReleaseSpec, data: pd.DataFrame | ReleaseInput | None = None) -> ReleaseSpec:
    """:func:`validate`'s checks, then the spec resolved on its data (:func:`resolve`) and
    carrying them with the adapter's plan (``loaded``, built once by
    :meth:`~pseudopost.release.adapters.MechanismAdapter.plan`). ``data``: the input already
    read, or a frame (without its codebook), or None (read now)."""
    if data is None:
        loaded = load_input(spec)
    else:
        loaded = data if isinstance(data, ReleaseInput) else ReleaseInput(data)
    frame = loaded.frame
    adapter = ADAPTERS[spec.mechanism]
    adapter.check_data(spec, frame)
    full = adapter.resolve(spec, frame)
    for key, cols in (
        ("disclosure.keys", full.disclosure_keys),
        ("disclosure.sensitive", (full.disclosure_sensitive,) if full.disclosure_sensitive else ()),
    ):
        for col in cols:
            if col not in full.columns:
                raise fail(
                    key,
                    col,
                    f"one of the released columns {full.columns}",
                    "use a released column.",
                )
    planned = replace(loaded, plan=adapter.plan(full, loaded))
    return replace(full, loaded=planned)
