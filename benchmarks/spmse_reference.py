"""What S_pMSE (synthpop's ``utility.gen``) a synthesizer can reach: references for issue 16's
utility goal.

synthpop's CART ``S_pMSE`` divides the pMSE by *half* the mean pMSE over label permutations
(``simpMSE[i] <- ... / N / 2``; :func:`pseudopost.evaluate.propensity_utility` explains the two
nulls): 1 is what a synthesizer scores when only its own sampling noise separates it from the
real file, and an independent sample of the same population scores about 2. A *proper*
synthesis (parameters drawn from their posterior, as the pseudo posterior mechanism must: its
guarantee is for releasing one draw) adds the posterior's spread on top of a model fitted to
these very data. This script measures, on the same data in the same run:

* **a known model** (``--sim-reps`` files of ``--n`` records: a 3-level category a, x | a normal,
  y | x, a normal): an independent sample of the true model ("population"), synthpop's
  parametric synthesizer with its parameters fixed at their estimates (``proper = FALSE``) and
  drawn from their posterior (``proper = TRUE``), pseudopost's unweighted synthesizer with the
  true families (one posterior draw), and synthpop's CART;
* **the real files** of ``benchmarks/whole_file.py`` (``--files``): synthpop CART, synthpop
  parametric (estimates and proper) and pseudopost unweighted with ``FILES``' declarations,
  ``--syn-reps`` synthetic files each (seeds 1, 2, ...).

It prints mean, sd and count of S_pMSE per synthesizer. Run: ``.venv/bin/python
benchmarks/spmse_reference.py [--sim-reps 10] [--n 3000] [--files yrbss] [--syn-reps 3]``.
Writes ``benchmarks/results/spmse_reference.{md,csv}``. Needs R and synthpop
(``../shared/peers/install-synthpop.sh``); exits with a message without them.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import _synthpop
import numpy as np
import pandas as pd
from _common import report

import pseudopost as pp

RESULTS = Path(__file__).resolve().parent / "results"


def known_model(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """a ~ (0.5, 0.3, 0.2); x | a ~ N(mu_a, 1); y | x, a ~ N(2 + 0.8 x - 0.5 [a = q], 0.7^2)."""
    a = rng.choice(["p", "q", "r"], n, p=[0.5, 0.3, 0.2])
    mu = pd.Series(a).map({"p": 0.0, "q": 1.0, "r": -1.0}).to_numpy()
    x = mu + rng.normal(size=n)
    y = 2 + 0.8 * x - 0.5 * (a == "q") + rng.normal(scale=0.7, size=n)
    return pd.DataFrame({"a": a, "x": np.round(x, 6), "y": np.round(y, 6)})


def _spmse(real: pd.DataFrame, syn: pd.DataFrame, seed: int) -> float:
    return _synthpop.utility_gen(real, syn[list(real.columns)], seed=seed)["S_pMSE"]


def _synthpop_rows(real, label_base, seed, file) -> list[dict]:
    rows = []
    for label, method, proper in (
        ("synthpop CART", "cart", False),
        ("synthpop parametric, estimates", "parametric", False),
        ("synthpop parametric, proper", "parametric", True),
    ):
        syn = _synthpop.synthesize(real, seed=seed, method=method, proper=proper)
        rows.append({"data": file, "synthesizer": label, **label_base,
                     "S_pMSE": _spmse(real, syn.synthetic, seed)})  # fmt: skip
    return rows


def simulate(reps: int, n: int, draws: int) -> list[dict]:
    rows = []
    for rep in range(reps):
        rng = np.random.default_rng(100 + rep)
        real = known_model(rng, n)
        base = {"rep": rep, "records": n}
        rows.append({"data": "known model", "synthesizer": "population sample", **base,
                     "S_pMSE": _spmse(real, known_model(rng, n), rep)})  # fmt: skip
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = pp.synthesize(real, models={"x": "normal", "y": "normal"}, draws=draws,
                                tune=draws, chains=1, seed=rep, progress=False)  # fmt: skip
        syn = out.synthesize(seed=rep + 50, weighted=False)
        rows.append({"data": "known model", "synthesizer": "pseudopost unweighted", **base,
                     "S_pMSE": _spmse(real, syn, rep)})  # fmt: skip
        rows += _synthpop_rows(real, base, rep + 1, "known model")
        print(pd.DataFrame(rows[-5:])[["synthesizer", "S_pMSE"]].to_string(), flush=True)
    return rows


def real_files(files: list[str], syn_reps: int, draws: int) -> list[dict]:
    import whole_file as wf

    rows = []
    for name in files:
        spec = wf.FILES[name]
        real = spec["load"]()
        base = {"records": len(real)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = pp.synthesize(real, **wf._declarations(spec, real), draws=draws, tune=draws,
                                chains=1, seed=1, progress=False)  # fmt: skip
        for rep in range(syn_reps):
            syn = out.synthesize(seed=2 + rep, weighted=False)
            rows.append({"data": name, "synthesizer": "pseudopost unweighted", "rep": rep,
                         **base, "S_pMSE": _spmse(real, syn, 1)})  # fmt: skip
            rows += _synthpop_rows(real, {"rep": rep, **base}, 1 + rep, name)
            print(pd.DataFrame(rows[-4:])[["synthesizer", "S_pMSE"]].to_string(), flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sim-reps", type=int, default=10)
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--files", nargs="*", default=["yrbss"])
    parser.add_argument("--syn-reps", type=int, default=3)
    parser.add_argument("--draws", type=int, default=100)
    args = parser.parse_args(argv)
    if not _synthpop.synthpop_available():
        print("R and synthpop are needed for this comparison; nothing measured.")
        return 0
    t0 = time.perf_counter()
    rows = simulate(args.sim_reps, args.n, args.draws) + real_files(
        args.files, args.syn_reps, args.draws
    )
    frame = pd.DataFrame(rows)
    table = (
        frame.groupby(["data", "synthesizer"], sort=False)["S_pMSE"]
        .agg(["mean", "std", "count"])
        .round(3)
        .reset_index()
    )
    title = (
        f"S_pMSE references (synthpop's utility.gen, CART, 50 permutations; known model: "
        f"{args.sim_reps} files of {args.n} records; real files: {args.syn_reps} synthetic "
        f"files each; pseudopost 1 chain x {args.draws} + {args.draws}; "
        f"{time.perf_counter() - t0:.0f} s)"
    )
    report(table, "spmse_reference", title)
    frame.to_csv(RESULTS / "spmse_reference_runs.csv", index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
