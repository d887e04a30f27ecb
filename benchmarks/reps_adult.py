"""REPS on Adult: speed of one release and of the attack evaluation, and the eps = 4 comparison.

Adult (train and test files pooled, rows with missing values dropped, n = 45,222), 56/14/30
split, so about 25k training rows. Prints two tables and writes them to
``benchmarks/results/reps_adult.md``:

1. Wall-clock seconds (median of 3 runs) for one REPS release (``fit`` with Stage 1, weights and
   Stage 2, then ``sample(n_train)``), and for the attack evaluation (DOMIAS-style and distance
   attacks with decile stratification; plus TSTR, timed separately).
2. Top-decile DOMIAS and distance advantage, REPS vs DP uniform at eps = 4, over 3 seeds.

Run: ``.venv/bin/python benchmarks/reps_adult.py``. Timings are printed, never asserted.
"""

from __future__ import annotations

import pathlib
import time

import numpy as np

from pseudopost.evaluate import run_attacks, tstr_auroc
from pseudopost.mechanisms.reps.baselines import make_method
from pseudopost.mechanisms.reps.core import REPS
from pseudopost.mechanisms.reps.data import load_adult, split_train_validation_test

RESULTS = pathlib.Path(__file__).resolve().parent / "results"


def timed(fn, repeats=3):
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


def main() -> None:
    task = load_adult()
    train, _, test = split_train_validation_test(task.frame, task.label, seed=0)
    lines = [f"Adult: n_train = {len(train)}, n_test = {len(test)}", ""]
    t_fit, reps = timed(lambda: REPS(4.0, seed=0).fit(train, task.label))
    t_sample, syn = timed(lambda: reps.sample(len(train)))
    t_attack, _ = timed(lambda: run_attacks(train, test, syn), repeats=1)
    t_tstr, _ = timed(lambda: tstr_auroc(syn, test, task.label), repeats=1)
    lines += [
        "| step | seconds | target |",
        "|---|---|---|",
        f"| REPS fit (Stage 1 + weights + Stage 2) | {t_fit:.3f} | |",
        f"| REPS sample(n_train) | {t_sample:.3f} | |",
        f"| REPS release (fit + sample) | {t_fit + t_sample:.3f} | < 1 s |",
        f"| attack evaluation (DOMIAS + distance, by decile) | {t_attack:.1f} | < 30 s |",
        f"| TSTR AUROC (logistic regression) | {t_tstr:.1f} | |",
        "",
        "Top-decile advantage at eps = 4 (DOMIAS / distance attack):",
        "",
        "| seed | DP uniform | REPS | REPS down-weighted | REPS TSTR | uniform TSTR |",
        "|---|---|---|---|---|---|",
    ]
    rows = []
    for seed in range(3):
        tr, _, te = split_train_validation_test(task.frame, task.label, seed=seed)
        out = {}
        for m in ("dp_uniform", "reps"):
            est = make_method(m, 4.0, gamma=4.0, seed=seed).fit(tr, task.label)
            s = est.sample(len(tr))
            att = run_attacks(tr, te, s)
            out[m] = (
                att["domias"].top_decile_advantage,
                att["distance"].top_decile_advantage,
                tstr_auroc(s, te, task.label),
                float(np.mean(est.weights_ < 1)),
            )
        rows.append(out)
        u, r = out["dp_uniform"], out["reps"]
        lines.append(
            f"| {seed} | {u[0]:.3f} / {u[1]:.3f} | {r[0]:.3f} / {r[1]:.3f} | {r[3]:.1%} "
            f"| {r[2]:.3f} | {u[2]:.3f} |"
        )
    mu = np.mean([[r["dp_uniform"][0], r["dp_uniform"][1]] for r in rows], axis=0)
    mr = np.mean([[r["reps"][0], r["reps"][1]] for r in rows], axis=0)
    lines.append(f"| mean | {mu[0]:.3f} / {mu[1]:.3f} | {mr[0]:.3f} / {mr[1]:.3f} | | | |")
    text = "\n".join(lines)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "reps_adult.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
