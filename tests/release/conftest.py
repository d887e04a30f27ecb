"""Fixtures for the release command: a copy of the shipped fatigue data and spec writers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pseudopost.datasets import DATA_DIR

#: a small but complete spec; tests override keys with ``make_spec(..., section={...})``
BASE = {
    "data": {"path": "fatigue.csv"},
    "model": {"family": "lognormal", "outcome": "cycle", "predictors": ["stress"]},
    "mechanism": {"name": "pseudo_posterior", "scale": 1.0, "shift": 0.0},
    "sampling": {"draws": 120, "tune": 120, "chains": 2, "seed": 7},
    "release": {"m": 2, "out": "release"},
    "budget": {"total_epsilon": 500.0, "max_epsilon": 100.0},
    "disclosure": {"keys": ["stress"], "radius": 0.1},
}


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    return repr(v)


def to_toml(spec: dict) -> str:
    lines = []
    for section, table in spec.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in table.items()]
        lines.append("")
    return "\n".join(lines)


def _make_spec(folder: Path, name: str = "spec.toml", drop=(), **sections) -> Path:
    """Write BASE updated by ``sections`` (dicts merged per section; a non-dict replaces the
    section) minus ``drop`` entries ("section" or "section.key") to ``folder/name``."""
    spec = {k: dict(v) for k, v in BASE.items()}
    for section, table in sections.items():
        if isinstance(table, dict) and isinstance(spec.get(section), dict):
            spec[section].update(table)
        else:
            spec[section] = table
    for item in drop:
        section, _, key = item.partition(".")
        if key:
            spec[section].pop(key)
        else:
            spec.pop(section)
    path = folder / name
    path.write_text(to_toml(spec))
    return path


def _copy_fatigue(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "fatigue.csv"
    shutil.copyfile(DATA_DIR / "fatigue.csv", target)
    return target


@pytest.fixture(scope="session")
def make_spec():
    """``make_spec(folder, name="spec.toml", drop=(), **sections) -> Path`` (see _make_spec)."""
    return _make_spec


@pytest.fixture(scope="session")
def copy_fatigue():
    """``copy_fatigue(folder) -> Path``: the shipped fatigue data copied into ``folder``."""
    return _copy_fatigue


@pytest.fixture(scope="session")
def base_spec():
    return {k: dict(v) for k, v in BASE.items()}


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A fresh folder holding a copy of the fatigue data."""
    _copy_fatigue(tmp_path)
    return tmp_path


@pytest.fixture(scope="session")
def released(tmp_path_factory):
    """One release of the fatigue data through the command, shared by the tests.

    Returns the folder holding data, spec, ledger and the release folder ``release``.
    """
    from pseudopost.cli import main

    folder = tmp_path_factory.mktemp("released")
    _copy_fatigue(folder)
    spec = _make_spec(folder)
    assert main(["synthesize", str(spec)]) == 0
    return folder


# ------------------------------------------------------------------ lighter releases
EXAMPLES_DIR = Path(__file__).resolve().parents[2] / "examples"

#: the example spec of each lighter mechanism, and the overrides that keep the tests small
LIGHTER_EXAMPLES = {
    "reps": ("breast_cancer_reps.toml", {}),
    # naive Bayes instead of Private-PGM: the same budget and measurements, without JAX's
    # compilation (tests/releases/prism cover the PGM backend)
    "prism": ("german_credit_prism.toml", {"prism": {"backend": "naive_bayes"}}),
    "entropy": ("breast_cancer_entropy.toml", {}),
    # a sample of the records and few draws: the whole-file pipeline, not its accuracy
    "whole_file": (
        "slid_file.toml",
        {"file": {"sample": 300}, "sampling": {"draws": 40, "tune": 40, "chains": 1}},
    ),
}


def _toml_any(v) -> str:
    if isinstance(v, dict):
        return "{ " + ", ".join(f'"{k}" = {_toml_any(x)}' for k, x in v.items()) + " }"
    if isinstance(v, list | tuple):
        return "[" + ", ".join(_toml_any(x) for x in v) + "]"
    if isinstance(v, float):
        return repr(v)
    return _toml_value(v)


def dump_toml(spec: dict) -> str:
    """TOML text of ``spec`` (tables of scalars, lists and inline tables)."""
    lines = []
    for section, table in spec.items():
        lines.append(f"[{section}]")
        lines += [f'"{k}" = {_toml_any(v)}' for k, v in table.items()]
        lines.append("")
    return "\n".join(lines)


def _example_layout(folder: Path) -> Path:
    """``folder/examples`` and ``folder/data`` as in the repository (data copied)."""
    (folder / "examples").mkdir(parents=True, exist_ok=True)
    (folder / "data").mkdir(exist_ok=True)
    for name in ("fatigue.csv", "breast_cancer_wdbc.csv", "german_credit.csv", "slid.csv"):
        if not (folder / "data" / name).exists():
            shutil.copyfile(DATA_DIR / name, folder / "data" / name)
    return folder


def _lighter_spec(folder: Path, kind: str, name: str | None = None, drop=(), **sections):
    """The example spec of mechanism ``kind`` with the test overrides and ``sections`` merged in
    (dicts merged per section), minus ``drop`` ("section" or "section.key"), written to
    ``folder/examples/NAME`` (paths relative to it, as in the repository)."""
    import tomllib

    file, small = LIGHTER_EXAMPLES[kind]
    spec = tomllib.loads((EXAMPLES_DIR / file).read_text())
    for over in (small, sections):
        for section, table in over.items():
            if isinstance(table, dict) and isinstance(spec.get(section), dict):
                spec[section].update(table)
            else:
                spec[section] = table
    for item in drop:
        section, _, key = item.partition(".")
        if key:
            spec[section].pop(key)
        else:
            spec.pop(section)
    _example_layout(folder)
    path = folder / "examples" / (name or file)
    path.write_text(dump_toml(spec))
    return path


@pytest.fixture(scope="session")
def lighter_spec():
    """``lighter_spec(folder, kind, name=None, drop=(), **sections) -> Path``."""
    return _lighter_spec


@pytest.fixture(scope="session")
def lighter_released(tmp_path_factory):
    """One release per lighter mechanism from its example (test overrides), through the
    command; returns ``{mechanism: release folder}`` (all in one folder sharing ledgers)."""
    from pseudopost.cli import main

    folder = _example_layout(tmp_path_factory.mktemp("lighter"))
    out = {}
    for mechanism in LIGHTER_EXAMPLES:
        spec = _lighter_spec(folder, mechanism)
        target = folder / f"out-{mechanism}"
        assert main(["synthesize", str(spec), "--out", str(target)]) == 0
        out[mechanism] = target
    return out


def _write_spec(folder: Path, which: str, /, **sections) -> Path:
    """The small test spec of built-in mechanism ``which`` (BASE for the pseudo posterior, the
    example for the others) with ``sections`` merged in."""
    if which == "pseudo_posterior":
        _copy_fatigue(folder)
        return _make_spec(folder, **sections)
    return _lighter_spec(folder, which, **sections)


@pytest.fixture(scope="session")
def write_spec():
    """``write_spec(folder, which, **sections) -> Path`` for every built-in mechanism."""
    return _write_spec
