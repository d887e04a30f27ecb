"""Reproduce the range-restricted paper: sections 4.1 (orderings, utility, over repetitions),
4.2 (calibration to a common epsilon), 4.3 (wider tail ranges) and 5 (fatigue, Table 1).

    .venv/bin/python benchmarks/range_restricted.py [--reps 100] [--n 2000] [--draws 1000]

Prints tables and writes them (and the violin figures) under benchmarks/results/.
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from _common import RESULTS, report

from pseudopost import PseudoPosterior
from pseudopost.datasets import load_fatigue, simulate_lognormal
from pseudopost.evaluate.utility import ecdf_utility
from pseudopost.models import LogNormalRegression
from pseudopost.risk import MultiplicativeRange, TailRange

RANGES = [(0.4, 1.8), (0.6, 1.2)]


def synthesizers(model) -> dict[str, PseudoPosterior]:
    """The paper's line-up (Unweighted comes from the weighted run's unweighted fit)."""
    out = {"Weighted": PseudoPosterior(model)}
    for a, b in RANGES:
        for method, short in (("averaged", "avg"), ("truncated", "trunc")):
            out[f"({a}, {b}) {short}"] = PseudoPosterior(
                model, sensitive_range=MultiplicativeRange(a, b), range_method=method
            )
    return out


def run_all(data, model, column, mechs, *, draws, seed, m=1):
    """Fit every synthesizer on ``data``; return per-synthesizer summaries and the results."""
    rows, results = [], {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for label, mech in mechs.items():
            res = mech.fit(data, draws=draws, tune=draws, chains=2, seed=seed, progress=False)
            results[label] = res
            for j, syn in enumerate(res.synthesize_datasets(m, seed=seed + 1)):
                u = ecdf_utility(data[[column]], syn[[column]]).iloc[0]
                x = syn[column].to_numpy()
                rows.append(
                    {
                        "synthesizer": label,
                        "epsilon": res.epsilon,
                        "dataset": j,
                        "U_m": u.U_m,
                        "U_a": u.U_a,
                        "mean": x.mean(),
                        "median": np.median(x),
                        "q90": np.quantile(x, 0.9),
                    }
                )
    unweighted = results[next(iter(results))]
    rows.append({"synthesizer": "Unweighted", "epsilon": unweighted.unweighted_epsilon})
    return pd.DataFrame(rows), results


def violins(results, path, what="lipschitz"):
    import matplotlib.pyplot as plt

    from pseudopost.evaluate.plots import plot_violins

    first = next(iter(results.values()))
    groups = {
        "Unweighted": (
            first.unweighted_lipschitz if what == "lipschitz" else np.ones(first.alpha.size)
        )
    }
    groups.update({k: getattr(r, what) for k, r in results.items()})
    ax = plot_violins(
        groups, ylabel="by-record Lipschitz bound" if what == "lipschitz" else "weight alpha*"
    )
    ax.figure.tight_layout()
    ax.figure.savefig(path, dpi=110)
    plt.close(ax.figure)


def section_41(reps, n, draws):
    model = LogNormalRegression("x", ["z"])
    mechs = synthesizers(model)
    frames = []
    for r in range(reps):
        t0 = time.perf_counter()
        table, results = run_all(
            simulate_lognormal(n, seed=1000 + r), model, "x", mechs, draws=draws, seed=r
        )
        frames.append(table.assign(rep=r))
        if r == 0:
            violins(results, RESULTS / "range_restricted_fig1_lipschitz.png")
            violins(results, RESULTS / "range_restricted_weights.png", what="alpha_star")
        print(f"  rep {r + 1}/{reps}: {time.perf_counter() - t0:.1f} s")
    all_reps = pd.concat(frames, ignore_index=True)
    summary = (
        all_reps.groupby("synthesizer", sort=False)
        .agg(
            epsilon=("epsilon", "mean"),
            epsilon_sd=("epsilon", "std"),
            U_m=("U_m", "mean"),
            U_a=("U_a", "mean"),
            q90=("q90", "mean"),
        )
        .reset_index()
    )
    order = all_reps.pivot_table(index="rep", columns="synthesizer", values="epsilon")
    checks = {
        "Unweighted > Weighted": (order["Unweighted"] > order["Weighted"]).mean(),
        "Weighted > trunc(0.4,1.8)": (order["Weighted"] > order["(0.4, 1.8) trunc"]).mean(),
        "trunc(0.4,1.8) > trunc(0.6,1.2)": (
            order["(0.4, 1.8) trunc"] > order["(0.6, 1.2) trunc"]
        ).mean(),
        "avg < trunc (0.4,1.8)": (order["(0.4, 1.8) avg"] < order["(0.4, 1.8) trunc"]).mean(),
        "avg < trunc (0.6,1.2)": (order["(0.6, 1.2) avg"] < order["(0.6, 1.2) trunc"]).mean(),
    }
    report(
        summary,
        "range_restricted_s41",
        f"Section 4.1: n = {n}, {reps} repetition(s), {draws} draws (means over repetitions)",
    )
    report(
        pd.DataFrame({"ordering": list(checks), "share of repetitions": list(checks.values())}),
        "range_restricted_s41_orderings",
        "Section 4.1: how often each ordering holds",
    )
    return all_reps


def section_42(n, draws):
    """Scale Weighted and trunc (0.4, 1.8) to the epsilon of trunc (0.6, 1.2)."""
    model, data = LogNormalRegression("x", ["z"]), simulate_lognormal(n, seed=42)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        anchor = PseudoPosterior(model, sensitive_range=MultiplicativeRange(0.6, 1.2)).fit(
            data, draws=draws, tune=draws, seed=1, progress=False
        )
        rows = [
            {
                "synthesizer": "(0.6, 1.2) trunc",
                "scale": 1.0,
                "epsilon": anchor.epsilon,
                "refits": 0,
                "seconds": float("nan"),
            }
        ]
        for label, rng_ in (
            ("Weighted", None),
            ("(0.4, 1.8) trunc", MultiplicativeRange(0.4, 1.8)),
        ):
            t0 = time.perf_counter()
            res = PseudoPosterior(model, sensitive_range=rng_, target_epsilon=anchor.epsilon).fit(
                data, draws=draws, tune=draws, seed=1, progress=False
            )
            rows.append(
                {
                    "synthesizer": label,
                    "scale": res.calibration.scale,
                    "epsilon": res.epsilon,
                    "refits": res.calibration.refits,
                    "seconds": time.perf_counter() - t0,
                }
            )
    report(
        pd.DataFrame(rows),
        "range_restricted_s42",
        "Section 4.2: calibrated to a common epsilon (paper: scales 0.73 and 0.88, eps 5.7)",
    )


def section_43(n, draws, reps):
    model = LogNormalRegression("x", ["z"])
    mechs = {
        "(0.4, 1.8) avg": PseudoPosterior(
            model, sensitive_range=MultiplicativeRange(0.4, 1.8), range_method="averaged"
        )
    }
    for q in (0.01, 0.05, 0.10):
        mechs[f"Top {q:.0%}"] = PseudoPosterior(
            model, sensitive_range=TailRange(0.4, 1.8, 0.2, 2.4, q=q), range_method="averaged"
        )
    frames = [
        run_all(simulate_lognormal(n, seed=2000 + r), model, "x", mechs, draws=draws, seed=r)[
            0
        ].assign(rep=r)
        for r in range(reps)
    ]
    table = (
        pd.concat(frames)
        .groupby("synthesizer", sort=False)[["epsilon", "U_m", "median", "q90"]]
        .mean()
        .reset_index()
    )
    report(
        table,
        "range_restricted_s43",
        f"Section 4.3: wider (0.2, 2.4) range for the top q of x ({reps} repetition(s))",
    )


def section_5(draws):
    data = load_fatigue()
    model = LogNormalRegression("cycle", ["stress"])
    table, results = run_all(data, model, "cycle", synthesizers(model), draws=draws, seed=7, m=20)
    violins(results, RESULTS / "range_restricted_fig15_fatigue.png")
    t1 = table.groupby("synthesizer", sort=False)[["epsilon", "mean", "median", "q90"]].mean()
    conf = pd.DataFrame(
        [
            {
                "epsilon": np.nan,
                "mean": data.cycle.mean(),
                "median": data.cycle.median(),
                "q90": data.cycle.quantile(0.9),
            }
        ],
        index=["confidential"],
    )
    report(
        pd.concat([conf, t1]).reset_index(names="synthesizer"),
        "range_restricted_table1",
        "Section 5 (fatigue), Table 1: statistics of synthetic cycle, mean of 20 datasets "
        "(paper's confidential: 57771, 15616, 165385)",
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--reps-43", type=int, default=None)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--draws", type=int, default=1000)
    args = ap.parse_args()
    t0 = time.perf_counter()
    section_41(args.reps, args.n, args.draws)
    section_42(args.n, args.draws)
    section_43(args.n, args.draws, args.reps_43 or max(1, args.reps // 4))
    section_5(args.draws)
    print(f"total {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
