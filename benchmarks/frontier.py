"""DP synthesizers side by side at equal epsilon on Adult (issue 30, item 3; first version).

For global epsilon in {1, 3, 10} (``--quick``: 1 only, no AIM), every mechanism gets the same
input and the same budget:

* **Input.** Private-PGM's coded Adult (``prism_adult.data``: d = 11 features + ``income>50K``,
  the same 80/20 stratified split, seed 0), with the four columns of more than 16 codes (age,
  capital-gain, capital-loss, hours-per-week) cut into 8 equal-width bins over their *public*
  code range; every column then has a public domain, so no mechanism spends budget on bins or
  reads its domain from the data. (``prism_adult.py`` instead gives PRISM and MST 8 DP quantile
  bins at 5 % of the budget; the row ``PRISM (DP bins)`` keeps that coding for comparison.)
* **Budget.** (epsilon, delta) with delta = 1/n^2 (n = 39,073 training records), converted to
  rho-zCDP by one formula for everyone, rho = (sqrt(ln(1/delta) + eps) - sqrt(ln(1/delta)))^2
  (``pseudopost.mechanisms.prism.budget.epsilon_to_rho``; smartnoise's own ``cdp_rho``, the
  tighter exact conversion, is replaced by it in ``_dp_bench_venv.py``). PRISM runs with
  ``accounting="zcdp"`` (the same rho; its default ``"approx"``, basic composition of
  (eps_q, delta_q), is the row ``PRISM (approx)``).
* **Neighbours.** pseudopost's PRISM and MST: replace-one (n public, normalised marginals,
  L2 sensitivity sqrt(2)/n). smartnoise's AIM and MST (Private-PGM): add/remove one record
  (counts, L2 sensitivity 1, n not public). A rho-zCDP add/remove mechanism is at most
  4 rho-zCDP under replace-one (group privacy of 2; 2 rho for its Gaussian measurements), so at
  the same rho the outside rows carry the stronger guarantee: the comparison does not favour
  them.
* **Censored pseudo posterior** (``pp.synthesize(frame, censor_epsilon=eps)``, add/remove,
  pure epsilon, plus its structure stage's ``structure_epsilon``): O(n) Python per gradient;
  run only with ``--censored`` on 2,000 records of 4 columns (a different file: its row is not
  comparable with the others' and is reported apart).

Measures, all on the public-binned columns: mean total variation distance over all 66 2-way
marginals (synthetic vs training records), S_pMSE (``pseudopost.evaluate.propensity_utility``,
CART, on 5,000 records of each), TSTR AUC for ``income>50K`` (logistic regression with
categorical encoding, as ``prism_adult.py``, trained on the full-size synthetic file, scored on
the real test split), wall time (fit + sampling n_train records, each run in a fresh process:
imports excluded, JAX compilation included). The machine is shared: wall times vary.

Usage: ``python benchmarks/frontier.py [--seed S] [--quick] [--no-outside] [--censored]
[--report]``; results in ``benchmarks/results/frontier.{csv,md,png}``. The outside
mechanisms need ``bash benchmarks/setup_dp_bench.sh`` (``.bench-dp-venv``).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time
from itertools import combinations

import numpy as np
import pandas as pd

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
OUT = HERE / "results"
ROOT = HERE.parent
# beside the package's .venv (in a git worktree whose .venv links to the main checkout's, there)
DP_VENV = pathlib.Path(
    os.environ.get("BENCH_DP_VENV", (ROOT / ".venv").resolve().parent / ".bench-dp-venv")
)
EPS = [1.0, 3.0, 10.0]
BINS = 8
N_PMSE = 5000
PACKAGE = ["PRISM (zCDP)", "PRISM (approx)", "PRISM (DP bins)", "MST (pseudopost)"]
OUTSIDE = {"MST (smartnoise)": "mst", "AIM (smartnoise)": "aim"}
NEIGHBOURS = {
    "PRISM (zCDP)": "replace-one",
    "PRISM (approx)": "replace-one",
    "PRISM (DP bins)": "replace-one",
    "MST (pseudopost)": "replace-one",
    "MST (smartnoise)": "add/remove",
    "AIM (smartnoise)": "add/remove",
}


def frames():
    """Train and test (codes), their public-binned versions, and the binned coding."""
    from prism_adult import data

    train, test, coding = data()
    from pseudopost.mechanisms.prism.datasets import adult_pgm

    _, dom = adult_pgm()
    big = list(coding["bins"])

    def disc(f: pd.DataFrame) -> pd.DataFrame:
        f = f.copy()
        for c in [c for c in big if c in f.columns]:
            f[c] = (f[c].astype(int) * BINS // dom[c]).clip(0, BINS - 1)
        return f.astype(int)

    dom_disc = {c: (BINS if c in big else dom[c]) for c in train.columns}
    pub = {"domain": {c: list(range(k)) for c, k in dom_disc.items()}}
    return train, test, disc, pub, coding


def run_package(method: str, eps: float, seed: int, folder: pathlib.Path) -> None:
    """Fit + sample one package mechanism in this (fresh) process; write into ``folder``."""
    from prism_adult import TARGET

    from pseudopost.mechanisms.prism import MST, PRISM

    train, _, disc, pub, coding = frames()
    delta = 1.0 / len(train) ** 2
    x = train if method == "PRISM (DP bins)" else disc(train)
    kw = {"target": TARGET, "regime": "predictive", "k": 8, "task_weights": "mi", "seed": seed}
    if method == "PRISM (zCDP)":
        model = PRISM(eps, delta, accounting="zcdp", **kw, **pub)
    elif method == "PRISM (approx)":
        model = PRISM(eps, delta, **kw, **pub)
    elif method == "PRISM (DP bins)":
        model = PRISM(eps, delta, **kw, **coding)
    else:
        model = MST(eps, delta, seed=seed, **pub)
    t0 = time.perf_counter()
    model.fit(x)
    t1 = time.perf_counter()
    syn = model.sample(len(train), seed=seed)
    t2 = time.perf_counter()
    syn.to_csv(folder / "synthetic.csv", index=False)
    rep = model.privacy_report()
    out = {
        "fit_s": t1 - t0,
        "sample_s": t2 - t1,
        "rho": float(rep["rho_zcdp"]),
        "eps_reported": float(rep["epsilon"]),
    }
    (folder / "result.json").write_text(json.dumps(out))


def one_run(method: str, eps: float, seed: int, n: int) -> tuple[pd.DataFrame, dict]:
    with tempfile.TemporaryDirectory(prefix="frontier-") as tmp:
        folder = pathlib.Path(tmp)
        load = os.getloadavg()[0]
        if method in OUTSIDE:
            train, _, disc, _, _ = frames()
            disc(train).to_csv(folder / "train.csv", index=False)
            job = {
                "method": OUTSIDE[method],
                "epsilon": eps,
                "delta": 1.0 / n**2,
                "n_syn": n,
                "seed": seed,
                "rho_formula": "package",
            }
            (folder / "job.json").write_text(json.dumps(job))
            cmd = [str(DP_VENV / "bin" / "python"), str(HERE / "_dp_bench_venv.py"), tmp]
        else:
            cmd = [sys.executable, __file__, "--one", method, str(eps), str(seed), tmp]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"{method} eps={eps}: {proc.stderr[-2000:]}")
        res = json.loads((folder / "result.json").read_text())
        res.update(load1=load, process_s=wall)
        return pd.read_csv(folder / "synthetic.csv"), res


def tvd_2way(real: pd.DataFrame, syn: pd.DataFrame) -> float:
    out = []
    for a, b in combinations(real.columns, 2):
        p = real.groupby([a, b]).size() / len(real)
        q = syn.groupby([a, b]).size() / len(syn)
        p, q = p.align(q, fill_value=0.0)
        out.append(0.5 * float(np.abs(p - q).sum()))
    return float(np.mean(out))


def measures(syn: pd.DataFrame, train_d: pd.DataFrame, test_d: pd.DataFrame, seed: int) -> dict:
    from prism_adult import TARGET

    from pseudopost.evaluate import propensity_utility, tstr_auroc

    syn = syn[train_d.columns].astype(int)
    rng = np.random.default_rng(seed)
    r = train_d.iloc[rng.choice(len(train_d), min(N_PMSE, len(train_d)), replace=False)]
    s = syn.iloc[rng.choice(len(syn), min(N_PMSE, len(syn)), replace=False)]
    cat = lambda f: f.astype(str).astype("category")  # noqa: E731
    pu = propensity_utility(
        cat(r).reset_index(drop=True), cat(s).reset_index(drop=True), method="cart", seed=seed
    )
    return {
        "tvd2": tvd_2way(train_d, syn),
        "s_pmse": float(pu.S_pMSE),
        "auc": tstr_auroc(syn, test_d, TARGET, encoding="categorical"),
    }


SMALL = ["age", "sex", "education-num", "income>50K"]
N_SMALL = 2000


def small_file(args) -> None:
    """The censored whole-file pseudo posterior against PRISM on 2,000 records x 4 columns.

    The code ranges and levels are declared (public, as the other mechanisms' domains; without
    them the structure stage's DP bounds at 0.1 eps let education-num run to 86 on codes 0-15).
    Budget: ``structure_epsilon`` = 0.1 eps (the file's bounds, bins and levels) and
    ``censor_epsilon`` = 0.9 eps, so the file's total is eps (add/remove, pure; "global given
    the weights"); PRISM (zCDP, replace-one, delta = 1/n^2) at eps with the public coding."""
    from prism_adult import TARGET

    import pseudopost as pp
    from pseudopost._cards import diagnostics_verdict
    from pseudopost.mechanisms.prism import PRISM

    train, test, disc, pub, _ = frames()
    sub = train.sample(N_SMALL, random_state=args.seed)[SMALL].reset_index(drop=True)
    sub_d, test_d = disc(sub), disc(test)[SMALL]
    rows = []
    for i, eps in enumerate([1.0] if args.quick else EPS):
        seed = args.seed * 1000 + i
        frame = sub.copy()
        for c in ("sex", TARGET):
            frame[c] = frame[c].astype("category")
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        res = pp.synthesize(
            frame,
            censor_epsilon=0.9 * eps,
            structure_epsilon=0.1 * eps,
            bounds={"age": (0, 84), "education-num": (0, 15)},  # public code ranges
            levels={"sex": [0, 1], TARGET: [0, 1]},
            seed=seed,
            progress=False,
        )
        wall = time.perf_counter() - t0
        syn = disc(res.synthetic[SMALL].astype(int))
        m = measures_small(syn, sub_d, test_d, seed)
        rows.append(
            {
                "method": "censored PP",
                "epsilon": eps,
                "seed": seed,
                "load1": load,
                "wall_s": wall,
                "eps_total": float(res.total_epsilon),
                "diagnostics": diagnostics_verdict(res.diagnostics),
                **m,
            }
        )
        print(rows[-1], flush=True)
        model = PRISM(
            eps,
            1.0 / N_SMALL**2,
            target=TARGET,
            regime="predictive",
            k=3,
            task_weights="mi",
            accounting="zcdp",
            seed=seed,
            domain={c: pub["domain"][c] for c in SMALL},
        )
        t0 = time.perf_counter()
        syn = model.fit(sub_d).sample(N_SMALL, seed=seed)
        wall = time.perf_counter() - t0
        rows.append(
            {
                "method": "PRISM (zCDP)",
                "epsilon": eps,
                "seed": seed,
                "load1": load,
                "wall_s": wall,
                "eps_total": eps,
                "diagnostics": "",
                **measures_small(syn, sub_d, test_d, seed),
            }
        )
        print(rows[-1], flush=True)
        pd.DataFrame(rows).to_csv(OUT / "frontier-small.csv", index=False)


def measures_small(syn, real_d, test_d, seed) -> dict:
    from prism_adult import TARGET

    from pseudopost.evaluate import propensity_utility, tstr_auroc

    syn = syn[real_d.columns].astype(int)
    cat = lambda f: f.astype(str).astype("category")  # noqa: E731
    pu = propensity_utility(cat(real_d), cat(syn.reset_index(drop=True)), method="cart", seed=seed)
    return {
        "tvd2": tvd_2way(real_d, syn),
        "s_pmse": float(pu.S_pMSE),
        "auc": tstr_auroc(syn, test_d, TARGET, encoding="categorical"),
    }


def main(args) -> None:
    OUT.mkdir(exist_ok=True)
    train, test, disc, _, _ = frames()
    train_d, test_d = disc(train), disc(test)
    eps_list = [1.0] if args.quick else EPS
    methods = list(PACKAGE)
    if not args.no_outside:
        if (DP_VENV / "bin" / "python").exists():
            methods += ["MST (smartnoise)"] + ([] if args.quick else ["AIM (smartnoise)"])
        else:
            print(f"no {DP_VENV}: outside mechanisms not run (bash benchmarks/setup_dp_bench.sh)")
    if args.methods:
        methods = [m for m in methods if m in args.methods]
    if args.eps:
        eps_list = [e for e in eps_list if e in args.eps]
    csv = OUT / ("frontier-quick.csv" if args.quick else "frontier.csv")
    if args.part:  # a share of the runs in a parallel process; --report merges the parts
        csv = OUT / f"frontier-part-{args.part}.csv"
    rows = pd.read_csv(csv).to_dict("records") if csv.exists() and args.resume else []
    done = {(r["method"], r["epsilon"]) for r in rows}
    for method in methods:  # the package's first: a table exists early
        for eps in eps_list:
            seed = args.seed * 1000 + EPS.index(eps)
            if (method, eps) in done:
                continue
            syn, res = one_run(method, eps, seed, len(train))
            row = {
                "method": method,
                "epsilon": eps,
                "seed": seed,
                "neighbours": NEIGHBOURS[method],
                **res,
                "wall_s": res["fit_s"] + res["sample_s"],
                **measures(syn, train_d, test_d, seed),
            }
            rows.append(row)
            print(
                {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()},
                flush=True,
            )
            pd.DataFrame(rows).to_csv(csv, index=False)
    report(collect(args.quick), args.quick)


def collect(quick: bool) -> pd.DataFrame:
    """The run's rows with those of the parallel parts (the first row of a cell kept)."""
    main_csv = OUT / ("frontier-quick.csv" if quick else "frontier.csv")
    parts = [] if quick else sorted(OUT.glob("frontier-part-*.csv"))
    frames = [pd.read_csv(f) for f in [main_csv, *parts] if f.exists()]
    return pd.concat(frames).drop_duplicates(["method", "epsilon"]).reset_index(drop=True)


def report(tab: pd.DataFrame, quick: bool) -> None:
    tab = tab.sort_values(["epsilon", "method"])
    lines = [
        "## DP synthesizers at equal epsilon on Adult (issue 30 item 3, first version)",
        "",
        "(eps, delta = 1/n^2) -> rho by one formula for all; public 8-bin coding of the 4 wide "
        "columns for all but `PRISM (DP bins)`; one seed per cell; 2-core machine shared with "
        f"other jobs (1-min load {tab.load1.min():.1f}-{tab.load1.max():.1f} before the runs).",
        "",
        "| eps | method | neighbours | rho | 2-way TVD (mean) | S_pMSE (CART) | TSTR AUC "
        "| wall s (fit + sample) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in tab.itertuples():
        lines.append(
            f"| {r.epsilon:g} | {r.method} | {r.neighbours} | {r.rho:.4f} | {r.tvd2:.4f} "
            f"| {r.s_pmse:.2f} | {r.auc:.3f} | {r.wall_s:.1f} |"
        )
    small = OUT / "frontier-small.csv"
    if small.exists():
        sm = pd.read_csv(small).sort_values(["epsilon", "method"])
        lines += [
            "",
            f"### Small file: {N_SMALL:,} training records x {len(SMALL)} columns "
            f"({', '.join(SMALL)})",
            "",
            "Censored whole-file pseudo posterior (structure 0.1 eps + censoring 0.9 eps, "
            "add/remove, pure, global given the weights; code ranges and levels declared) "
            "against PRISM (zCDP, replace-one, delta = 1/n^2, k = 3). Measures against the "
            "2,000 records; TSTR on 3 features, so not comparable with the table above.",
            "",
            "| eps | method | 2-way TVD | S_pMSE | TSTR AUC | wall s | sampler |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in sm.itertuples():
            diag = r.diagnostics if isinstance(r.diagnostics, str) else ""
            lines.append(
                f"| {r.epsilon:g} | {r.method} | {r.tvd2:.4f} | {r.s_pmse:.2f} | {r.auc:.3f} "
                f"| {r.wall_s:.1f} | {diag} |"
            )
    md = "\n".join(lines)
    name = "frontier-quick" if quick else "frontier"
    (OUT / f"{name}.md").write_text(md + "\n")
    print(md)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for m, g in tab.groupby("method"):
        g = g.sort_values("epsilon")
        axes[0].plot(g.epsilon, g.tvd2, marker="o", label=m)
        axes[1].plot(g.epsilon, g.auc, marker="o", label=m)
    for ax, lab in zip(
        axes, ["mean 2-way TVD (lower is better)", "TSTR AUC, income>50K"], strict=True
    ):
        ax.set_xscale("log")
        ax.set_xlabel("global epsilon (delta = 1/n^2)")
        ax.set_ylabel(lab)
    axes[0].set_yscale("log")
    axes[1].legend(fontsize=7)
    fig.suptitle("Adult: DP synthesizers at equal epsilon")
    fig.tight_layout()
    fig.savefig(OUT / f"{name}.png", dpi=120)


if __name__ == "__main__":
    if "--one" in sys.argv:
        i = sys.argv.index("--one")
        a = sys.argv[i + 1 : i + 5]
        run_package(a[0], float(a[1]), int(a[2]), pathlib.Path(a[3]))
        sys.exit(0)
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--no-outside", action="store_true")
    p.add_argument(
        "--censored",
        action="store_true",
        help="only the small file: censored pseudo posterior against PRISM",
    )
    p.add_argument("--methods", nargs="+", help="run only these methods")
    p.add_argument("--eps", nargs="+", type=float, help="run only these epsilons")
    p.add_argument("--part", help="write frontier-part-PART.csv (a parallel share of the runs)")
    p.add_argument("--resume", action="store_true", help="keep the rows already in the csv")
    p.add_argument("--report", action="store_true", help="only rewrite the table and plot")
    args = p.parse_args()
    if args.report:
        report(collect(args.quick), args.quick)
    elif args.censored:
        small_file(args)
    else:
        main(args)
