r"""PRISM on the paper's SCM benchmarks and the allocation-wins dataset (appendix C).

Tables 1, 2 and 5 (eps = 1, 10 seeds, mean and 95% CI half-width) with the paper's numbers
beside ours, and the eps sweeps of Figures 1, 2 and 5. PRISM variants use the naive Bayes backend
as in the paper (appendix C.2); PRISM-Causal with the PGM backend and MST run at eps = 1 on
fewer seeds (each fit compiles a new JAX program).

Allocation wins (appendix C.5, Table 5, Figure 5) follows the paper's setup exactly: naive Bayes
backend, S = all 20 features, oracle weights :math:`(P(X=1|Y=1)-P(X=1|Y=0))^2`, and the paper's
classic Gaussian calibration :math:`\sigma_q = \Delta_2\sqrt{2\ln(1.25/\delta_q)}/\varepsilon_q`
(section 5.5). PRISM's default, Balle & Wang's analytic calibration, adds about 1.5x less noise
at these per-query budgets (eps_q ~ 0.04), which moves both curves to lower epsilon: with it the
two allocations tie at eps = 1 and the gap shows at eps <= 0.5 only. Tables 1 and 2 keep the
analytic default (PRISM-Causal is flat in epsilon there). "Clearly above" is the paired test of
the suite: mean gain (closed form - uniform, same seed) >= 0.05 AUC with a 95% t-interval above 0.

Usage: ``python benchmarks/prism_scm.py [--quick] [--part=scm] [--part=alloc]`` (both parts by
default; a part not run is read back from its CSV); writes ``benchmarks/results/prism_scm*.csv``,
``prism_allocation_wins.csv`` and ``prism_scm.md``.
"""

from __future__ import annotations

import pathlib
import sys
import time

import numpy as np
import pandas as pd
from scipy import stats

from pseudopost.evaluate import tstr_auroc
from pseudopost.mechanisms.prism import (
    MST,
    PRISM,
    AllFeaturesUniform,
    CorrelationTopK,
    IndependenceOnly,
)
from pseudopost.mechanisms.prism.datasets import (
    SCM_DAG,
    allocation_wins,
    allocation_wins_weights,
    scm_marginal_shift,
    scm_spurious_shift,
)

OUT = pathlib.Path(__file__).resolve().parent / "results"
EPS = [0.2, 0.5, 1.0, 2.0, 4.0]
N_SYN = 5000

PAPER_T1 = {  # Table 1, SCM spurious shift, eps = 1
    "PRISM-Causal (Unif)": 0.733,
    "PRISM-Causal (Opt)": 0.732,
    "MST (Private-PGM)": 0.519,
    "PRISM-Graphical (Opt)": 0.513,
    "PRISM-Graphical (Unif)": 0.513,
    "All Features (Unif)": 0.512,
    "Independence Only": 0.502,
    "Corr Top-k (Oracle)": 0.490,
}
PAPER_T2 = {  # Table 2, SCM marginal shift, eps = 1
    "MST (Private-PGM)": 1.000,
    "PRISM-Graphical (Unif)": 1.000,
    "PRISM-Graphical (Opt)": 1.000,
    "All Features (Unif)": 1.000,
    "Corr Top-k (Oracle)": 0.942,
    "PRISM-Causal (Unif)": 0.713,
    "PRISM-Causal (Opt)": 0.710,
    "Independence Only": 0.465,
}
PAPER_T5 = {"Closed-form allocation (oracle weights)": 0.900, "Uniform allocation": 0.769}


def scm_methods(eps: float, seed: int) -> dict:
    nb = {"backend": "naive_bayes", "seed": seed}
    return {
        "PRISM-Causal (Opt)": lambda: PRISM(eps, target="Y", parents=["A", "B"], **nb),
        "PRISM-Causal (Unif)": lambda: PRISM(
            eps, target="Y", parents=["A", "B"], allocation="uniform", **nb
        ),
        "PRISM-Graphical (Opt)": lambda: PRISM(
            eps, target="Y", regime="graphical", dag=SCM_DAG, **nb
        ),
        "PRISM-Graphical (Unif)": lambda: PRISM(
            eps, target="Y", regime="graphical", dag=SCM_DAG, allocation="uniform", **nb
        ),
        "All Features (Unif)": lambda: AllFeaturesUniform(eps, target="Y", **nb),
        "Independence Only": lambda: IndependenceOnly(eps, seed=seed),
        "Corr Top-k (Oracle)": lambda: CorrelationTopK(eps, target="Y", k=8, **nb),
    }


def heavy_methods(eps: float, seed: int) -> dict:
    return {
        "PRISM-Causal (Opt, PGM)": lambda: PRISM(eps, target="Y", parents=["A", "B"], seed=seed),
        "MST (Private-PGM)": lambda: MST(eps, seed=seed),
    }


def ci(x) -> tuple[float, float]:
    x = np.asarray(x, dtype=float)
    return float(x.mean()), float(1.96 * x.std(ddof=1) / np.sqrt(x.size)) if x.size > 1 else 0.0


def run(generator, seeds, eps_list, heavy_seeds) -> pd.DataFrame:
    rows = []
    for s in seeds:
        train, test = generator(seed=s)
        for eps in eps_list:
            for name, make in scm_methods(eps, 1000 + s).items():
                t = time.perf_counter()
                auc = tstr_auroc(
                    make().fit(train).sample(N_SYN, seed=s), test, "Y", encoding="categorical"
                )
                rows.append(
                    {
                        "method": name,
                        "epsilon": eps,
                        "seed": s,
                        "auc": auc,
                        "seconds": time.perf_counter() - t,
                    }
                )
        if s in heavy_seeds:
            for name, make in heavy_methods(1.0, 1000 + s).items():
                t = time.perf_counter()
                auc = tstr_auroc(
                    make().fit(train).sample(N_SYN, seed=s), test, "Y", encoding="categorical"
                )
                rows.append(
                    {
                        "method": name,
                        "epsilon": 1.0,
                        "seed": s,
                        "auc": auc,
                        "seconds": time.perf_counter() - t,
                    }
                )
        print(f"  seed {s} done", flush=True)
    return pd.DataFrame(rows)


def allocation_rows(seeds, eps_list) -> pd.DataFrame:
    rows = []
    w = allocation_wins_weights()
    for s in seeds:
        train, test = allocation_wins(seed=s)
        feats = [c for c in train.columns if c != "Y"]
        for eps in eps_list:
            for name, alloc in (
                ("Closed-form allocation (oracle weights)", "closed_form"),
                ("Uniform allocation", "uniform"),
            ):
                p = PRISM(
                    eps,
                    target="Y",
                    parents=feats,
                    backend="naive_bayes",
                    allocation=alloc,
                    task_weights=w,
                    gaussian_method="classic",
                    seed=1000 + s,
                ).fit(train)
                rows.append(
                    {
                        "method": name,
                        "epsilon": eps,
                        "seed": s,
                        "auc": tstr_auroc(
                            p.sample(N_SYN, seed=s), test, "Y", encoding="categorical"
                        ),
                    }
                )
    return pd.DataFrame(rows)


def table(df: pd.DataFrame, paper: dict, title: str) -> str:
    at1 = df[df.epsilon == 1.0].groupby("method")["auc"].apply(list)
    lines = [
        f"### {title}",
        "",
        "| Method | ours AUC (95% CI) | seeds | paper |",
        "|---|---|---|---|",
    ]
    order = sorted(at1.index, key=lambda m: -np.mean(at1[m]))
    for m in order:
        mu, h = ci(at1[m])
        p = paper.get(m.replace(", PGM", ""), paper.get(m))
        lines.append(
            f"| {m} | {mu:.3f} ± {h:.3f} | {len(at1[m])} | {'' if p is None else f'{p:.3f}'} |"
        )
    return "\n".join(lines)


def allocation_gain(df: pd.DataFrame) -> str:
    """Paired gain of the closed form over uniform per epsilon (same seeds)."""
    piv = df.pivot_table(index=["epsilon", "seed"], columns="method", values="auc")
    gain = piv["Closed-form allocation (oracle weights)"] - piv["Uniform allocation"]
    lines = [
        "### Allocation wins: paired gain (closed form - uniform)",
        "",
        "| eps | mean gain | 95% t-interval | seeds | clearly above (gain >= 0.05, CI > 0) |",
        "|---|---|---|---|---|",
    ]
    for eps, g in gain.groupby(level="epsilon"):
        g = g.to_numpy()
        h = stats.t.ppf(0.975, g.size - 1) * g.std(ddof=1) / np.sqrt(g.size) if g.size > 1 else 0
        ok = g.mean() >= 0.05 and g.mean() - h > 0
        lines.append(
            f"| {eps:g} | {g.mean():+.3f} | [{g.mean() - h:+.3f}, {g.mean() + h:+.3f}] "
            f"| {g.size} | {ok} |"
        )
    return "\n".join(lines)


def sweep(df: pd.DataFrame, title: str) -> str:
    piv = df.groupby(["method", "epsilon"])["auc"].mean().unstack("epsilon")
    return f"### {title}: mean TSTR AUC by epsilon\n\n" + piv.round(3).to_markdown()


def main(quick: bool = False, parts: frozenset[str] = frozenset({"scm", "alloc"})) -> None:
    seeds = range(2) if quick else range(10)
    heavy = set(range(1)) if quick else set(range(3))
    eps_list = [1.0] if quick else EPS
    OUT.mkdir(exist_ok=True)
    t0 = time.perf_counter()
    if "scm" in parts:
        print("SCM spurious shift", flush=True)
        run(scm_spurious_shift, seeds, eps_list, heavy).to_csv(
            OUT / "prism_scm_spurious.csv", index=False
        )
        print("SCM marginal shift", flush=True)
        run(scm_marginal_shift, seeds, eps_list, heavy).to_csv(
            OUT / "prism_scm_marginal.csv", index=False
        )
    if "alloc" in parts:
        print("allocation wins", flush=True)
        allocation_rows(seeds, eps_list).to_csv(OUT / "prism_allocation_wins.csv", index=False)
    spur = pd.read_csv(OUT / "prism_scm_spurious.csv")
    marg = pd.read_csv(OUT / "prism_scm_marginal.csv")
    alloc = pd.read_csv(OUT / "prism_allocation_wins.csv")
    md = "\n\n".join(
        [
            "## PRISM: SCM benchmarks and allocation wins (eps = 1 tables; delta = 1/n^2)",
            table(spur, PAPER_T1, "Table 1: SCM spurious shift"),
            table(marg, PAPER_T2, "Table 2: SCM marginal shift"),
            table(alloc, PAPER_T5, "Table 5: allocation wins (classic calibration, section 5.5)"),
            allocation_gain(alloc),
            sweep(spur, "Figure 1 (spurious shift)"),
            sweep(marg, "Figure 2 (marginal shift)"),
            sweep(alloc, "Figure 5 (allocation wins)"),
            f"_parts run now: {sorted(parts)}, {time.perf_counter() - t0:.0f} s on a shared "
            "2-core machine_",
        ]
    )
    (OUT / "prism_scm.md").write_text(md + "\n")
    print(md)


if __name__ == "__main__":
    chosen = frozenset(a.split("=", 1)[1] for a in sys.argv if a.startswith("--part="))
    main(quick="--quick" in sys.argv, parts=chosen or frozenset({"scm", "alloc"}))
