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
