"""smartnoise-synth's AIM and MST, run inside ``.bench-dp-venv`` for ``benchmarks/frontier.py``.

smartnoise-synth 1.0.8 pins Private-PGM ``mbi`` 1.1.0 (the package runs on mbi 2.x) and pulls
torch, so it lives in its own venv (``bash benchmarks/setup_dp_bench.sh``). This script imports
neither pseudopost nor numpy's global state: it reads one job folder and writes into it.

The folder holds ``train.csv`` (integer codes over the public domain, every column categorical)
and ``job.json``::

    {"method": "aim" | "mst", "epsilon": float, "delta": float, "n_syn": int, "seed": int,
     "rho_formula": "package" | "smartnoise"}

``rho_formula="package"`` replaces smartnoise's ``cdp_rho`` (the exact (epsilon, delta) of
the Gaussian mechanism, OpenDP's binary search) by the package's conversion
:math:`\\rho = (\\sqrt{\\ln(1/\\delta) + \\varepsilon} - \\sqrt{\\ln(1/\\delta)})^2`
(``pseudopost.mechanisms.prism.budget.epsilon_to_rho``), so that every mechanism of the
frontier spends the same rho at the same (epsilon, delta). It writes ``synthetic.csv`` and
``result.json`` (fit and sampling wall time, the rho used).

Run: ``.bench-dp-venv/bin/python benchmarks/_dp_bench_venv.py JOB_FOLDER``
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from pathlib import Path

import pandas as pd


def package_rho(epsilon: float, delta: float, max_contrib: int = 1) -> float:
    ld = math.log(1.0 / delta)
    return (math.sqrt(ld + epsilon) - math.sqrt(ld)) ** 2


def main(folder: Path) -> None:
    job = json.loads((folder / "job.json").read_text())
    import numpy as np
    import snsynth.aim.aim as aim_mod
    import snsynth.mst.mst as mst_mod
    from snsynth import Synthesizer

    if job.get("rho_formula", "package") == "package":
        aim_mod.cdp_rho = package_rho
        mst_mod.cdp_rho = package_rho
    # smartnoise's Gaussian and exponential mechanisms draw from numpy's global state
    np.random.seed(job["seed"])  # noqa: NPY002
    random.seed(job["seed"])
    train = pd.read_csv(folder / "train.csv")
    synth = Synthesizer.create(job["method"], epsilon=job["epsilon"], delta=job["delta"])
    t0 = time.perf_counter()
    synth.fit(train, categorical_columns=list(train.columns), preprocessor_eps=0.0)
    t1 = time.perf_counter()
    syn = synth.sample(job["n_syn"])
    t2 = time.perf_counter()
    syn = pd.DataFrame(syn, columns=train.columns)
    syn.to_csv(folder / "synthetic.csv", index=False)
    rho = getattr(synth, "rho", None)
    if rho is None:
        rho = package_rho(job["epsilon"], job["delta"])
    out = {"fit_s": t1 - t0, "sample_s": t2 - t1, "rho": float(rho)}
    (folder / "result.json").write_text(json.dumps(out))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
