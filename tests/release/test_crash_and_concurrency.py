"""Whole-or-nothing outputs under SIGKILL, and two concurrent releases against one budget."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from pseudopost.release import Ledger
from pseudopost.release.run import _staging_dir


def _start(spec, *extra):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "pseudopost.cli", "synthesize", str(spec), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _seed_ledger(folder, total):
    """A ledger holding one earlier release, so 'unchanged' means something."""
    from pseudopost.release.run import sha256_file

    ledger = Ledger(folder / "fatigue.csv.ledger.json")
    ledger.commit(
        sha256_file(folder / "fatigue.csv"),
        total,
        {"out": "earlier", "m": 1, "epsilon": 1.0, "charge": 1.0},
    )
    return ledger.path


def _wait_for_staging(folder, proc, timeout=60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        if any(".partial-" in p.name for p in folder.iterdir()):
            return True
        time.sleep(0.01)
    return False


@pytest.mark.parametrize(
    "when",
    ["while-fitting", "while-writing"],  # compile/sampling; outputs half-written in staging
)
def test_sigkill_mid_release_leaves_no_output_and_the_ledger_unchanged(workdir, make_spec, when):
    ledger = _seed_ledger(workdir, 500.0)
    before = ledger.read_bytes()
    spec = make_spec(workdir)
    proc = _start(spec)
    marker = "fitting the pseudo posterior" if when == "while-fitting" else "synthesizing"
    deadline = time.monotonic() + 120
    for line in proc.stderr:  # wait until the release reaches the step
        if marker in line or time.monotonic() > deadline:
            break
    if when == "while-fitting":
        time.sleep(0.2)  # inside the fit (compiling, sampling): before any staging folder
    else:
        assert _wait_for_staging(workdir, proc), "no staging folder seen"
    assert proc.poll() is None, "the release ended before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    proc.stdout.close()
    proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL
    assert not (workdir / "release").exists()
    assert ledger.read_bytes() == before
    expected = ["fatigue.csv", "fatigue.csv.ledger.json", "fatigue.csv.ledger.json.lock"]
    left = sorted(p.name for p in workdir.iterdir() if p.name != "spec.toml")
    staging = [n for n in left if n not in expected]
    # Only the hidden staging folder of the dead process may remain; the next release to the
    # same place removes it before staging its own.
    if when == "while-writing":
        assert staging == [f".release.partial-{proc.pid}"]
    else:
        assert staging == []
    _staging_dir(workdir / "release").rmdir()
    assert sorted(p.name for p in workdir.iterdir() if p.name != "spec.toml") == expected


def test_two_concurrent_releases_on_a_budget_for_one(released, workdir, make_spec):
    eps = json.loads((released / "release" / "privacy.json").read_text())["epsilon_per_dataset"]
    # Room for one release of m = 2 (charge 2 eps) but not two; each may cost up to 2.4 eps.
    budget = {"total_epsilon": 3.0 * eps, "max_epsilon": 1.2 * eps}
    specs = [
        make_spec(workdir, f"spec{i}.toml", release={"out": f"out{i}"}, budget=budget)
        for i in (1, 2)
    ]
    procs = [_start(s) for s in specs]
    results = [(p.wait(timeout=300), p.communicate()[1]) for p in procs]
    codes = sorted(code for code, _ in results)
    assert codes == [0, 3], results
    refused = next(err for code, err in results if code == 3)
    assert "budget refused" in refused
    content = Ledger(workdir / "fatigue.csv.ledger.json").read()
    assert len(content["entries"]) == 1
    assert Ledger.spent(content) <= content["total_epsilon"]
    winner = f"out{[c for c, _ in results].index(0) + 1}"
    outs = [p.name for p in workdir.iterdir() if p.name.startswith(("out", ".out"))]
    assert outs == [winner]
    # Same spec and seed as the session release, but another process: byte-identical data.
    for name in ("synthetic-1.csv", "synthetic-2.csv"):
        assert (workdir / winner / name).read_bytes() == (released / "release" / name).read_bytes()
