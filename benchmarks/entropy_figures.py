"""REAEDP figures 1-7 (and Table IV / S3 analogues) on the shipped data and a simulated process.

Every number comes from running the mechanisms in ``pseudopost`` (pass rates are measured, not
computed from a formula). Run ``python benchmarks/entropy_figures.py`` to print the tables and
write them (CSV and PNG) under ``benchmarks/results/entropy/``; the notebook
``notebooks/entropy_release.ipynb`` calls the same functions.
"""

from __future__ import annotations

import json
import pathlib
import time
from itertools import permutations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pseudopost._rng import spawn_seeds
from pseudopost.evaluate.release_attacks import (
    dp_accuracy_bound,
    linkage_attack,
    release_membership_inference,
)
from pseudopost.mechanisms.entropy.histogram import EntropyHistogram, synthetic_counts
from pseudopost.mechanisms.privacy_testing import (
    PrivacyTestSynthesizer,
    ResampleProposal,
)
from pseudopost.mechanisms.wiener import WienerMean
from pseudopost.privacy.entropy import (
    shannon_entropy,
    shannon_entropy_sensitivity,
)

__all__ = [
    "figure1_pass_rate",
    "figure2_wiener",
    "figure3_bound",
    "figure4_empirical_sensitivity",
    "figure5_baselines",
    "figure6_bins",
    "figure7_attacks",
    "plot_all",
    "simulate_chi_square_process",
    "table_multi_dataset",
]

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
RESULTS = ROOT / "benchmarks" / "results" / "entropy"
ADULT_COLUMNS = [
    "age",
    "workclass",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "hours-per-week",
    "native-country",
    "income>50K",
]
AGE_BOUNDS = (17.0, 91.0)  # public range of the Adult ages (UCI documentation: 17-90)


def _adult_ages() -> np.ndarray:
    return pd.read_csv(DATA / "adult_train.csv", usecols=["age"])["age"].to_numpy(dtype=float)


# ----------------------------------------------------------------------------- figure 1
def figure1_pass_rate(
    k_values: tuple[int, ...] = (10, 20, 30, 50),
    gammas: tuple[float, ...] = (1.25, 1.5, 2.0, 3.0, 4.0, 8.0, 16.0, 32.0),
    t: int = 2,
    epsilon0: float = 1.0,
    n_resample: int = 6,
    n_records: int = 5000,
    n_candidates: int = 300,
    seed: int = 0,
) -> pd.DataFrame:
    """Measured pass rate of F on Adult (Private-PGM codes), t = 2.

    D: ``n_records`` rows of the UCI training part; the proposal's marginals come from the UCI
    test part (disjoint, treated as public).
    """
    codes = pd.read_csv(DATA / "adult_pgm.csv")[ADULT_COLUMNS]
    domain = json.loads((DATA / "adult_pgm-domain.json").read_text())
    private = codes.iloc[:32561].sample(n_records, random_state=seed)
    public = codes.iloc[32561:].to_numpy()
    proposal = ResampleProposal.from_public_data(
        public, [domain[c] for c in ADULT_COLUMNS], n_resample
    )
    rows = []
    seeds = iter(spawn_seeds(seed, len(k_values) * len(gammas)))
    for k in k_values:
        for g in gammas:
            mech = PrivacyTestSynthesizer(k, t, g, epsilon0, proposal)
            res = mech.sample(private, n_candidates, seed=next(seeds))
            rows.append(
                {
                    "k": k,
                    "gamma": g,
                    "pass_rate": res.pass_rate,
                    "n_passed": res.n_passed,
                    "epsilon": mech.epsilon,
                    "delta": mech.delta,
                }
            )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- figure 2
def simulate_chi_square_process(
    n_paths: int = 50, n_steps: int = 80, df: int = 3, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Chi-square process :math:`X(t) = \\sum_{l \\le df} W_l(t)^2` on ``t_j = j / n_steps``."""
    rng = np.random.default_rng(seed)
    grid = np.arange(1, n_steps + 1) / n_steps
    w = np.cumsum(rng.normal(0.0, np.sqrt(1.0 / n_steps), size=(n_paths, df, n_steps)), axis=2)
    return grid, (w**2).sum(axis=1)


def figure2_wiener(
    rhos: tuple[float, ...] = (1e-6, 1e-3, 0.1),
    epsilon: float = 1.0,
    delta: float = 1e-5,
    norm_bound: float = 5.0,
    seed: int = 0,
) -> dict:
    """Sample mean, penalised mean and private mean of 50 chi-square paths for each rho."""
    grid, paths = simulate_chi_square_process(seed=seed)
    out = {"grid": grid, "sample_mean": paths.mean(axis=0), "panels": [], "table": []}
    for rho, s in zip(rhos, spawn_seeds(seed, len(rhos)), strict=True):
        mech = WienerMean(epsilon, delta, rho=rho, norm_bound=norm_bound)
        rel = mech.release(paths, seed=s)
        mu = mech.penalised_mean(paths)
        out["panels"].append({"rho": rho, "penalised": mu, "private": rel.mean})
        l2 = lambda f: float(np.sqrt(np.mean(f**2)))  # noqa: E731
        out["table"].append(
            {
                "rho": rho,
                "sensitivity": rel.sensitivity,
                "bound_tau/(N sqrt rho)": mech.sensitivity_bound(paths.shape[0]),
                "sigma": rel.sigma,
                "L2(private - penalised)": l2(rel.mean - mu),
                "L2(private - sample mean)": l2(rel.mean - out["sample_mean"]),
                "L2(penalised - sample mean)": l2(mu - out["sample_mean"]),
            }
        )
    out["table"] = pd.DataFrame(out["table"])
    return out


# ----------------------------------------------------------------------------- figures 3, 4
def figure3_bound(ns: tuple[int, ...] = (50, 100, 200, 500, 1000, 2000, 5000)) -> pd.DataFrame:
    """Theorem 3 bound and the exact sensitivity against n."""
    return pd.DataFrame(
        {
            "n": ns,
            "theorem3_bound": [shannon_entropy_sensitivity(n) for n in ns],
            "exact_sensitivity": [shannon_entropy_sensitivity(n, tight=True) for n in ns],
        }
    )


def figure4_empirical_sensitivity(
    ns: tuple[int, ...] = (50, 100, 200, 500, 1000, 2000, 5000),
    bins: int = 10,
    n_histograms: int = 50,
    seed: int = 0,
) -> pd.DataFrame:
    """Mean and max |H(c) - H(c')| over every adjacent pair of random multinomial histograms."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in ns:
        changes = []
        for _ in range(n_histograms):
            c = rng.multinomial(n, rng.dirichlet(np.ones(bins))).astype(float)
            h = shannon_entropy(c)
            for i, j in permutations(range(bins), 2):
                if c[i] > 0:
                    d = c.copy()
                    d[i] -= 1
                    d[j] += 1
                    changes.append(abs(shannon_entropy(d) - h))
        bound = shannon_entropy_sensitivity(n)
        rows.append(
            {
                "n": n,
                "mean_change": float(np.mean(changes)),
                "max_change": float(np.max(changes)),
                "bound": bound,
                "ratio_max": float(np.max(changes)) / bound,
                "ratio_exact": shannon_entropy_sensitivity(n, tight=True) / bound,
            }
        )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- figures 5, 6
def _utility_runs(data, mech: EntropyHistogram, n_reps: int, seed: int, synthetic: bool):
    c = mech.counts(data)
    h0, n = shannon_entropy(c), int(c.sum())
    errs, maes = [], []
    for s in spawn_seeds(seed, n_reps):
        rel = mech.release_counts(c, seed=s)
        out = synthetic_counts(rel, n, seed=s + 1) if synthetic else rel.counts
        errs.append(abs(h0 - shannon_entropy(out)))
        maes.append(float(np.mean(np.abs(out - c))))
    return float(np.mean(errs)), float(np.mean(maes))


def figure5_baselines(
    epsilons: tuple[float, ...] = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0),
    bins: int = 30,
    delta: float = 1e-5,
    n_reps: int = 30,
    seed: int = 0,
) -> pd.DataFrame:
    """Entropy error and count MAE vs epsilon on Adult ages (replace-one)."""
    ages = _adult_ages()
    rows = []
    for eps in epsilons:
        lap = EntropyHistogram(eps, bins=bins, bounds=AGE_BOUNDS)
        gau = EntropyHistogram(eps, bins=bins, bounds=AGE_BOUNDS, mechanism="gaussian", delta=delta)
        for name, mech, syn in [
            ("Laplace", lap, False),
            ("Gaussian", gau, False),
            ("DP synthetic (Laplace)", lap, True),
            ("DP synthetic (Gaussian)", gau, True),
        ]:
            err, mae = _utility_runs(ages, mech, n_reps, seed, syn)
            rows.append({"epsilon": eps, "method": name, "entropy_error": err, "count_mae": mae})
    out = pd.DataFrame(rows)
    out["bound"] = shannon_entropy_sensitivity(ages.size)
    return out


def figure6_bins(
    bins_list: tuple[int, ...] = (5, 10, 20, 30, 50, 100),
    epsilon: float = 1.0,
    n_reps: int = 30,
    seed: int = 0,
) -> pd.DataFrame:
    """Entropy error vs number of bins at epsilon = 1 (Laplace, Adult ages)."""
    ages = _adult_ages()
    rows = []
    for m in bins_list:
        mech = EntropyHistogram(epsilon, bins=m, bounds=AGE_BOUNDS)
        err, mae = _utility_runs(ages, mech, n_reps, seed, False)
        rows.append({"bins": m, "entropy_error": err, "count_mae": mae})
    out = pd.DataFrame(rows)
    out["bound"] = shannon_entropy_sensitivity(ages.size)
    return out


# ----------------------------------------------------------------------------- figure 7
def figure7_attacks(
    epsilons: tuple[float, ...] = (0.1, 0.5, 1.0, 2.0, 5.0, 10.0),
    n_records: int = 1000,
    bins: int = 30,
    n_releases: int = 200,
    n_repeats: int = 5,
    n_trials: int = 400,
    seed: int = 0,
) -> pd.DataFrame:
    """MIA (entropy, total count; logistic regression) and linkage on Adult-age histograms.

    D_in: ``n_records`` ages; D_out: D_in without its oldest record (add/remove neighbours).
    """
    ages = np.random.default_rng(seed).choice(_adult_ages(), n_records, replace=False)
    target = int(np.argmax(ages))
    d_in, d_out = ages, np.delete(ages, target)
    rows = []
    for eps in epsilons:
        mech = EntropyHistogram(eps, bins=bins, bounds=AGE_BOUNDS, neighbouring="add-remove")

        def release(data, s, mech=mech):
            return mech.release(data, s).counts

        mia = release_membership_inference(
            release, d_in, d_out, n_releases=n_releases, n_repeats=n_repeats, seed=seed
        )
        link = linkage_attack(
            release,
            d_in,
            d_out,
            mech.counts(d_in),
            mech.counts(d_out),
            n_trials=n_trials,
            seed=seed + 1,
        )
        rows.append(
            {
                "epsilon": eps,
                "mia_accuracy": mia.accuracy,
                "mia_ci_low": mia.accuracy_ci[0],
                "mia_ci_high": mia.accuracy_ci[1],
                "mia_auc": mia.auc,
                "linkage_accuracy": link.accuracy,
                "linkage_ci_low": link.accuracy_ci[0],
                "linkage_ci_high": link.accuracy_ci[1],
                "dp_bound": dp_accuracy_bound(eps),
            }
        )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- Table IV / S3
def table_multi_dataset(epsilon: float = 1.0, bins: int = 30, seed: int = 0) -> pd.DataFrame:
    """One Laplace release per shipped numeric column (replace-one, public bounds)."""
    columns = [
        ("adult_train", "age", (17.0, 91.0)),
        ("adult_train", "hours-per-week", (1.0, 100.0)),
        ("german_credit", "credit_amount", (0.0, 20000.0)),
        ("breast_cancer_wdbc", "mean_radius", (5.0, 30.0)),
        ("fatigue", "cycle", (0.0, 250000.0)),
    ]
    rows = []
    for (name, col, bounds), s in zip(columns, spawn_seeds(seed, len(columns)), strict=True):
        x = pd.read_csv(DATA / f"{name}.csv", usecols=[col])[col].to_numpy(dtype=float)
        mech = EntropyHistogram(epsilon, bins=bins, bounds=bounds)
        rel = mech.release(x, seed=s)
        u = mech.utility(x, rel)
        rows.append(
            {
                "dataset": f"{name} ({col})",
                "n": x.size,
                "bins": bins,
                "epsilon": epsilon,
                "H_orig": u.entropy_original,
                "H_noisy": u.entropy_released,
                "delta_H_bound": u.entropy_bound,
            }
        )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- plots
def plot_all(results: dict) -> dict[str, plt.Figure]:
    """One matplotlib figure per paper figure from the outputs of the functions above."""
    figs = {}
    f1 = results["figure1"]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for k, g in f1.groupby("k"):
        ax.plot(g["gamma"], g["pass_rate"], marker="o", label=f"k = {k}")
    ax.set(xscale="log", xlabel="gamma", ylabel="pass rate (measured)", title="Fig. 1 (t = 2)")
    ax.legend()
    figs["figure1"] = fig

    f2 = results["figure2"]
    fig, axes = plt.subplots(1, len(f2["panels"]), figsize=(13, 3.5))
    for ax, panel in zip(axes, f2["panels"], strict=True):
        ax.plot(f2["grid"], f2["sample_mean"], label="sample mean")
        ax.plot(f2["grid"], panel["penalised"], label="penalised mean (non-private)")
        ax.plot(f2["grid"], panel["private"], label="private mean", alpha=0.8)
        ax.set(title=f"rho = {panel['rho']:g}", xlabel="t")
    axes[0].set_ylabel("X(t)")
    axes[0].legend(fontsize=7)
    figs["figure2"] = fig

    f3 = results["figure3"]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(f3["n"], f3["theorem3_bound"], marker="o", label="Theorem 3 bound")
    ax.plot(f3["n"], f3["exact_sensitivity"], marker="s", label="exact sensitivity")
    ax.set(xscale="log", yscale="log", xlabel="n", ylabel="Delta_H (bits)", title="Fig. 3")
    ax.legend()
    figs["figure3"] = fig

    f4 = results["figure4"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    axes[0].plot(f4["n"], f4["bound"], marker="o", label="bound")
    axes[0].plot(f4["n"], f4["max_change"], marker="s", label="max over pairs")
    axes[0].plot(f4["n"], f4["mean_change"], marker="^", label="mean over pairs")
    axes[0].set(xscale="log", yscale="log", xlabel="n", ylabel="|H - H'|", title="Fig. 4")
    axes[0].legend()
    axes[1].plot(f4["n"], f4["ratio_max"], marker="o", label="empirical max / bound")
    axes[1].plot(f4["n"], f4["ratio_exact"], marker="s", label="exact / bound")
    axes[1].set(xscale="log", xlabel="n", ylabel="ratio")
    axes[1].legend()
    figs["figure4"] = fig

    f5 = results["figure5"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    for name, g in f5.groupby("method", sort=False):
        axes[0].plot(g["epsilon"], g["entropy_error"], marker="o", label=name)
        axes[1].plot(g["epsilon"], g["count_mae"], marker="o", label=name)
    axes[0].axhline(f5["bound"].iloc[0], color="k", ls="--", label="Delta_H bound")
    axes[0].set(xscale="log", yscale="log", xlabel="epsilon", ylabel="|H_orig - H_noisy|")
    axes[1].set(xscale="log", yscale="log", xlabel="epsilon", ylabel="count MAE")
    axes[0].legend(fontsize=7)
    fig.suptitle("Fig. 5: Adult ages, 30 bins")
    figs["figure5"] = fig

    f6 = results["figure6"]
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(f6["bins"], f6["entropy_error"], marker="o", label="Laplace, eps = 1")
    ax.axhline(f6["bound"].iloc[0], color="k", ls="--", label="Delta_H bound")
    ax.set(xscale="log", yscale="log", xlabel="bins m", ylabel="|H_orig - H_noisy|", title="Fig. 6")
    ax.legend()
    figs["figure6"] = fig

    f7 = results["figure7"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.5))
    err = [f7["mia_accuracy"] - f7["mia_ci_low"], f7["mia_ci_high"] - f7["mia_accuracy"]]
    axes[0].errorbar(f7["epsilon"], f7["mia_accuracy"], yerr=err, marker="o", capsize=3)
    axes[0].set(ylabel="MIA accuracy (95% CI)")
    axes[1].plot(f7["epsilon"], f7["mia_auc"], marker="o")
    axes[1].set(ylabel="MIA AUC")
    err = [
        f7["linkage_accuracy"] - f7["linkage_ci_low"],
        f7["linkage_ci_high"] - f7["linkage_accuracy"],
    ]
    axes[2].errorbar(f7["epsilon"], f7["linkage_accuracy"], yerr=err, marker="o", capsize=3)
    axes[2].set(ylabel="linkage accuracy (95% CI)")
    for ax in axes:
        ax.axhline(0.5, color="grey", ls=":", label="random guess")
        ax.set(xscale="log", xlabel="epsilon", ylim=(0.4, 1.02))
    for ax in (axes[0], axes[2]):
        ax.plot(f7["epsilon"], f7["dp_bound"], "k--", label="DP bound (e^eps/(1+e^eps))")
    axes[0].legend(fontsize=7)
    fig.suptitle("Fig. 7: attacks on Adult-age histogram releases (add/remove target)")
    figs["figure7"] = fig
    for f in figs.values():
        f.tight_layout()
        plt.close(f)  # keep the Figure objects, but out of pyplot's automatic display
    return figs


# Sizes of the notebook's small mode (CI): the same computations on fewer points and repetitions.
SMALL_SIZES = {
    "figure1": {
        "k_values": (10, 30),
        "gammas": (1.5, 4.0, 16.0),
        "n_records": 1000,
        "n_candidates": 40,
    },
    "figure4": {"ns": (50, 200, 1000), "n_histograms": 10},
    "figure5": {"epsilons": (0.1, 1.0, 5.0), "n_reps": 10},
    "figure6": {"bins_list": (5, 30, 100), "n_reps": 10},
    "figure7": {"epsilons": (0.5, 2.0, 10.0), "n_releases": 60, "n_repeats": 2, "n_trials": 100},
}


def run_all(seed: int = 0, small: bool = False) -> dict:
    """Compute every figure's data; prints the time each took.

    ``small=True`` uses the reduced sizes in :data:`SMALL_SIZES` (seconds instead of a minute; the
    notebook's CI mode); the default is the full size of the paper's figures.
    """
    kw = SMALL_SIZES if small else {}
    steps = {
        "figure1": lambda: figure1_pass_rate(seed=seed, **kw.get("figure1", {})),
        "figure2": lambda: figure2_wiener(seed=seed),
        "figure3": figure3_bound,
        "figure4": lambda: figure4_empirical_sensitivity(seed=seed, **kw.get("figure4", {})),
        "figure5": lambda: figure5_baselines(seed=seed, **kw.get("figure5", {})),
        "figure6": lambda: figure6_bins(seed=seed, **kw.get("figure6", {})),
        "figure7": lambda: figure7_attacks(seed=seed, **kw.get("figure7", {})),
        "table_multi_dataset": lambda: table_multi_dataset(seed=seed),
    }
    out = {}
    for name, step in steps.items():
        t0 = time.perf_counter()
        out[name] = step()
        print(f"[{name}: {time.perf_counter() - t0:.1f} s]")
    return out


def main() -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    results = run_all()
    pd.set_option("display.width", 160)
    for name, value in results.items():
        table = value["table"] if name == "figure2" else value
        print(f"\n== {name} ==")
        print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        table.to_csv(RESULTS / f"{name}.csv", index=False)
    for name, fig in plot_all(results).items():
        fig.savefig(RESULTS / f"{name}.png", dpi=110)


if __name__ == "__main__":
    main()
