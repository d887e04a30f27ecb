"""Every shipped notebook runs top to bottom, so none of them rots.

Convention (followed by every notebook in ``notebooks/``): the first code cell reads
``SCALE = os.environ.get("PSEUDOPOST_NOTEBOOK_SCALE", "full")``; with ``"small"`` the notebook
uses tiny data, draws and repetitions and runs in well under a minute. Each notebook ends with
cells that ``assert`` properties of what it computed (e.g. weighted epsilon < unweighted), so a
wrong result fails here, not only an exception.

By default each notebook is executed in small mode (one test per notebook, so ``pytest -n 2``
spreads them); ``-m slow`` executes them at full size (minutes each), as saved in the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

FOLDER = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(FOLDER.glob("*.ipynb"))
IDS = [p.stem for p in NOTEBOOKS]
SCALE_VAR = "PSEUDOPOST_NOTEBOOK_SCALE"


def _code(nb) -> list:
    return [c for c in nb.cells if c.cell_type == "code"]


def _errors(nb) -> list[str]:
    return [
        f"cell {i}: {o.get('ename')}: {o.get('evalue')}\n" + "\n".join(o.get("traceback", [])[-3:])
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code"
        for o in c.get("outputs", [])
        if o.get("output_type") == "error"
    ]


def _execute(path: Path, scale: str, timeout: int):
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute(env={**os.environ, SCALE_VAR: scale})
    return nb


def test_notebooks_are_shipped():
    names = {p.stem for p in NOTEBOOKS}
    expected = {
        "quickstart",
        "custom_model",
        "range_restriction",
        "reps",
        "prism",
        "entropy_release",
        "agency_release",
    }
    assert expected <= names, sorted(expected - names)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_follows_the_conventions(path):
    """Small mode is read in the first code cell; checks that can fail; saved outputs are clean."""
    nb = nbformat.read(path, as_version=4)
    cells = _code(nb)
    assert cells, f"{path.name} has no code cell"
    assert SCALE_VAR in cells[0].source, (
        f"{path.name}: the first code cell must read SCALE = os.environ.get({SCALE_VAR!r}, 'full')"
    )
    assert any("assert " in c.source for c in cells), f"{path.name} checks nothing (no assert)"
    assert all(c.get("execution_count") for c in cells), (
        f"{path.name} is saved with unexecuted cells; execute it at full size before saving"
    )
    assert not _errors(nb), f"{path.name} is saved with error outputs: {_errors(nb)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_runs_in_small_mode(path):
    nb = _execute(path, "small", timeout=600)
    errors = _errors(nb)
    assert not errors, "\n\n".join(errors)


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_runs_at_full_size(path):
    nb = _execute(path, "full", timeout=3600)
    errors = _errors(nb)
    assert not errors, "\n\n".join(errors)
