"""Whole-record synthesis of Adult: weighted vs unweighted pseudo posterior (issue 9).

A sequential model of eight mixed columns of Adult (train file; a random subsample of n rows
at a fixed seed): sex (logistic), race (multinomial logit), age (negative binomial), education
(ordinal, its public order by years of schooling), marital status (multinomial logit), hours
per week (negative binomial), capital gain (hurdle log-normal) and income class (logistic),
each conditioned on the columns before it. Predictors enter through public transforms only:
age and hours as (x - 40) / 10, capital gain as log1p; education by its levels (one-hot: the
whole-file models' encoding of a categorical predictor, since ``pp.synthesize`` fits the file
model; the integer-code transform of the earlier runs, with a one-PyMC-model sequential
synthesizer since moved to the tests as a reference, is no longer accepted).

One fit of the mechanism gives both synthesizers: the unweighted posterior (the risk step) and
the risk-weighted one. For each: the local epsilon (2 max_i Delta_i, add/remove neighbours, per
synthetic dataset), the per-record bounds, utility (pMSE over all columns with its null ratio,
mean per-column TV / ECDF U_m, mean |association difference|) and identification risk (expected
match risk and true match rate for age and capital gain given sex, race and marital status;
share of synthetic records that single out one real record on sex, race, age, education,
marital status).

Run: ``.venv/bin/python benchmarks/adult_whole_record.py [n] [draws]`` (defaults 2000, 400).
Writes ``benchmarks/results/adult_whole_record.{md,csv}``.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np
import pandas as pd
from _common import report

import pseudopost as pp
from pseudopost.evaluate.whole_record import (
    identification_risk_table,
    match_risk_table,
    whole_record_utility,
)

COLUMNS = [
    "sex",
    "race",
    "age",
    "education",
    "marital-status",
    "hours-per-week",
    "capital-gain",
    "income",
]
TRANSFORMS = {"age": (40.0, 10.0), "hours-per-week": (40.0, 10.0)}


def adult_frame(n: int, seed: int) -> pd.DataFrame:
    """n rows of Adult's eight modelled columns; education an ordered Categorical in the
    codebook's order (by education-num)."""
    raw = pp.datasets.load_adult("train")
    order = raw.groupby("education")["education-num"].first().sort_values().index.tolist()
    frame = raw[COLUMNS].sample(n, random_state=seed).reset_index(drop=True)
    frame["education"] = pd.Categorical(frame["education"], categories=order, ordered=True)
    return frame


def summarise(real, label, syn, epsilon, lipschitz, seed) -> dict:
    util = whole_record_utility(real, syn, seed=seed)
    cols = util.columns
    risk = identification_risk_table(
        real, syn, ["sex", "race", "marital-status"], ["age", "capital-gain"], radius=0.1
    ).set_index("outcome")
    match = match_risk_table(
        real, syn, ["sex", "race", "age", "education", "marital-status"], radius=0.0
    ).iloc[0]
    return {
        "synthesizer": label,
        "epsilon": epsilon,
        "median Delta_i": float(np.median(lipschitz)),
        "pMSE": util.pmse.pmse,
        "pMSE ratio": util.pmse.ratio,
        "mean TV (categorical)": float(cols["tv"].mean()),
        "mean U_m (numeric)": float(cols["U_m"].mean()),
        "mean abs assoc. diff": util.mean_abs_association_difference,
        "EMR age": risk.loc["age", "expected_match_risk"],
        "TMR age": risk.loc["age", "true_match_rate"],
        "EMR capital-gain": risk.loc["capital-gain", "expected_match_risk"],
        "TMR capital-gain": risk.loc["capital-gain", "true_match_rate"],
        "unique match share": match["unique_match_share"],
    }


def main(n: int = 2000, draws: int = 400, seed: int = 2026) -> pd.DataFrame:
    real = adult_frame(n, seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pp.SamplingWarning)
        out = pp.synthesize(
            real,
            transforms=TRANSFORMS,
            draws=draws,
            tune=draws,
            chains=2,
            seed=seed,
        )
    seconds = time.perf_counter() - t0
    print(out.choices.to_markdown(index=False))
    print(f"\nn = {n}, draws = {draws} x 2 chains: {seconds:.0f} s wall (machine shared).")
    print("timings (s):", {k: round(v, 1) for k, v in out.result.timings.items()})
    for name, d in out.result.diagnostics.items():
        print(f"{name} fit: {len(d.problems())} diagnostic problem(s)")
    unweighted = out.synthesize(seed=seed + 1, weighted=False)
    rows = [
        summarise(
            real,
            "unweighted",
            unweighted,
            out.unweighted_epsilon,
            out.result.unweighted_lipschitz.to_numpy(),
            seed,
        ),
        summarise(
            real, "weighted", out.synthetic, out.epsilon, out.result.lipschitz.to_numpy(), seed
        ),
    ]
    table = pd.DataFrame(rows)
    report(
        table,
        "adult_whole_record",
        f"Adult whole-record synthesis (n = {n}, draws = {draws} x 2, seed = {seed})",
    )
    return table


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    main(*args)
