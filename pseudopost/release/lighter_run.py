r"""Run a lighter release (REPS, PRISM, entropy histogram) and describe its privacy.

Each of these releases one DP summary of the data (noisy statistics, noisy marginals, a noisy
histogram) at a budget fixed before the data are seen, and the m synthetic datasets are samples
from that one summary: post-processing, so the whole release costs the mechanism's
:math:`(\varepsilon, \delta)` once, whatever m. The guarantee is *global* (worst case over
neighbouring databases), unlike the pseudo posterior's local :math:`\varepsilon_x`:

* REPS (Asiaee et al., Theorem 1): :math:`(\varepsilon_s + \varepsilon_t, \delta_s + \delta_t)`
  under replacement of one record by the null record (n public);
* PRISM (Theorem 6.1): the basic composition of every step's :math:`(\varepsilon_q, \delta_q)`,
  replace-one (or zCDP converted once, ``accounting = "zcdp"``);
* entropy histogram (REAEDP Theorems 1 and 3): the joint counts and optionally their entropy,
  replace-one (or add/remove for the counts only).

The seed: ``SeedSequence(release.seed)`` spawns one seed for the fit and one per synthetic
dataset, so the same spec gives byte-identical synthetic CSVs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pseudopost.release.lighter_spec import NEIGHBOURING
from pseudopost.release.spec import ReleaseSpec

__all__ = ["Produced", "privacy_record", "produce"]

GUARANTEE = "global (epsilon, delta)-DP: a worst-case guarantee over all neighbouring databases"


@dataclass
class Produced:
    """What a lighter release produced, before anything is written."""

    release: Any
    synthetic: list[pd.DataFrame]
    epsilon: float
    delta: float
    privacy: dict[str, Any]
    timings: dict[str, float] = field(default_factory=dict)
    #: per-record figures for the report, e.g. REPS's per-instance epsilon (name -> values)
    per_record: dict[str, np.ndarray] = field(default_factory=dict)


def _say(message: str) -> None:
    import sys

    print(f"pseudopost: {message}", file=sys.stderr, flush=True)


def produce(spec: ReleaseSpec, data: pd.DataFrame) -> Produced:
    """Fit the release the spec describes and draw its m synthetic datasets."""
    fit_seed, *sample_seeds = np.random.SeedSequence(spec.seed).spawn(spec.m + 1)
    frame = data[spec.columns]
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    _say(f"fitting the {spec.mechanism} release (epsilon {spec.epsilon:.4g})")
    release = _fit(spec, frame, fit_seed)
    timings["fit_total"] = time.perf_counter() - t0
    eps, delta = _guarantee(spec, release)
    rows = spec.rows or (release.public_rows() if spec.mechanism == "entropy" else len(frame))
    _say(f"epsilon = {eps:.4f}, delta = {delta:.3g}; synthesizing m = {spec.m}")
    t0 = time.perf_counter()
    synthetic = [release.sample(rows, seed=s) for s in sample_seeds]
    timings["synthesize"] = time.perf_counter() - t0
    privacy = privacy_record(spec, release, eps, delta, rows)
    per_record = {}
    if spec.mechanism == "reps":
        per_record["per-instance epsilon (Corollary 1 + 2)"] = release.per_instance_epsilon_
        per_record["weights w_i"] = release.weights_
    return Produced(release, synthetic, eps, delta, privacy, timings, per_record)


def _fit(spec: ReleaseSpec, frame: pd.DataFrame, seed):
    release = spec.build_release(seed)
    if spec.mechanism == "reps":
        opts = spec.options
        return release.fit(
            frame,
            opts["label"],
            features=opts.get("features"),
            categorical=opts.get("categorical"),
        )
    if spec.mechanism == "prism":
        return release.fit(frame, spec.target)
    return release.fit(frame, seed=seed)


def _guarantee(spec: ReleaseSpec, release) -> tuple[float, float]:
    """The (epsilon, delta) charged: the release's own figure, never below what was declared."""
    if spec.mechanism == "reps":
        eps, delta = release.epsilon_, release.delta_
    elif spec.mechanism == "prism":
        rep = release.privacy_report()
        eps, delta = rep["epsilon"], rep["delta"]
    else:
        stages = release.stages()
        eps = sum(s["epsilon"] for s in stages)
        delta = sum(s["delta"] for s in stages)
    declared_delta = spec.delta or 0.0
    return max(float(eps), float(spec.epsilon)), max(float(delta), float(declared_delta))


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, float) and not np.isfinite(v):
        return None
    return v


def _reps_stages(release) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    rel = release.release_
    b = rel.budget
    stages = []
    if rel.rarity is not None:
        stages.append(
            {
                "stage": "Stage 1: noisy per-feature histograms (rarity scores), one Gaussian "
                f"release, L2 sensitivity sqrt(d) = {rel.rarity.sensitivity:.4g}, "
                f"sigma {rel.rarity.sigma:.4g}",
                "epsilon": b.epsilon_s - rel.threshold_epsilon,
                "delta": b.delta_s,
            }
        )
        if rel.threshold_epsilon > 0:
            stages.append(
                {
                    "stage": "Stage 1: DP percentile threshold of the rarity scores",
                    "epsilon": rel.threshold_epsilon,
                    "delta": 0.0,
                }
            )
    else:
        stages.append(
            {
                "stage": "Stage 1: no scoring (uniform weights); its share is unspent",
                "epsilon": 0.0,
                "delta": 0.0,
            }
        )
    stages += [
        {
            "stage": "Stage 1.5: weights w_i from the released scores",
            "epsilon": 0.0,
            "delta": 0.0,
            "note": "post-processing of Stage 1 and record i only (Lemma 1)",
        },
        {
            "stage": "Stage 2: weighted clipped statistics f_w(D) + N(0, sigma^2 I), one "
            f"Gaussian release, sensitivity C/n = {rel.clip:.4g}/{rel.n}, sigma {rel.sigma:.4g}",
            "epsilon": b.epsilon_t,
            "delta": b.delta_t,
        },
        {
            "stage": "naive Bayes fit and m synthetic datasets",
            "epsilon": 0.0,
            "delta": 0.0,
            "note": "post-processing",
        },
    ]
    schema = rel.schema
    blocks = [{"statistic": "weighted count", "size": 1}]
    blocks += [
        {"statistic": f"counts of {c}", "size": len(lv)}
        for c, lv in zip(schema.categorical, schema.levels, strict=True)
    ]
    blocks += [{"statistic": f"mean of {c}", "size": 1} for c in schema.numeric]
    blocks += [{"statistic": f"second moment of {c}", "size": 1} for c in schema.numeric]
    per_stat = {
        "note": "every statistic below, for each of the "
        f"{len(schema.classes)} classes of the label, is one coordinate block of the single "
        "Stage-2 Gaussian release: each carries the whole Stage-2 budget (they are measured "
        "jointly, not split) with the same sigma",
        "classes": [str(c) for c in schema.classes],
        "epsilon": b.epsilon_t,
        "delta": b.delta_t,
        "sigma": rel.sigma,
        "clip": rel.clip,
        "statistics": blocks,
    }
    if rel.rarity is not None:
        per_stat["stage1_histograms"] = {
            "columns": [*rel.rarity.numeric, *rel.rarity.categorical],
            "epsilon": b.epsilon_s - rel.threshold_epsilon,
            "delta": b.delta_s,
            "sigma": rel.rarity.sigma,
        }
    return stages, per_stat


_PRISM_POOLS = {
    "bins": "DP bin edges (Laplace)",
    "sel": "feature selection (exponential mechanism on mutual information)",
    "mi": "noisy (conditional) mutual informations (Laplace)",
    "task": "task marginals (X_j, Y) (Gaussian, Theorem 6.3 allocation)",
    "bg": "background: spanning tree (exponential) and marginals (Gaussian)",
}


def _composition(spec: ReleaseSpec) -> str:
    m = (
        "; the m synthetic datasets are samples of one release (post-processing), so they "
        "cost nothing more"
    )
    if spec.mechanism == "prism" and spec.options.get("accounting") == "zcdp":
        return (
            "zCDP: the steps' rho add up and the sum is converted once to (epsilon, delta) "
            "(Bun & Steinke 2016, Prop. 1.3); the per-stage epsilons are each step's own" + m
        )
    return "basic: the release's stages add up in epsilon and in delta (Theorem 1)" + m


def privacy_record(
    spec: ReleaseSpec, release, eps: float, delta: float, rows: int
) -> dict[str, Any]:
    """The content of ``privacy.json`` for a lighter release."""
    name = spec.mechanism
    neighbouring = NEIGHBOURING[name]
    notes: list[str] = []
    extra: dict[str, Any] = {}
    if name == "reps":
        stages, per_stat = _reps_stages(release)
        extra["per_statistic_budgets"] = per_stat
        rel = release.release_
        extra["reps"] = {
            "weight_map": rel.weight_map,
            "threshold": rel.threshold,
            "calibration": rel.calibration,
            "per_instance_epsilon": {
                "min": float(release.per_instance_epsilon_.min()),
                "median": float(np.median(release.per_instance_epsilon_)),
                "max": float(release.per_instance_epsilon_.max()),
                "note": "Corollaries 1-2; a function of the confidential data, for the data "
                "holder only",
            },
        }
        notes.append(
            "the standardisation of numeric features and the categorical levels are read from "
            "the data and taken as public (REPS module notes) unless reps.scaling / "
            "reps.categories give them"
        )
        description = "REPS: risk-equalized private synthesis (DP rarity weights, weighted "
        description += "Gaussian naive Bayes), Asiaee et al. Algorithm 1"
    elif name == "prism":
        rep = release.privacy_report()
        pools = rep["pools"]
        counts = {}
        for q in rep["measurements"]:
            counts[q["pool"]] = counts.get(q["pool"], 0) + 1
        stages = [
            {
                "stage": f"pool '{p}': {_PRISM_POOLS.get(p, p)}"
                + (f", {counts[p]} marginals" if p in counts else ""),
                "epsilon": v["epsilon"],
                "delta": v["delta"],
                "rho": v["rho"],
            }
            for p, v in pools.items()
        ]

        stages.append(
            {
                "stage": "graphical model / naive Bayes fit and m synthetic datasets",
                "epsilon": 0.0,
                "delta": 0.0,
                "note": "post-processing",
            }
        )
        extra["pools"] = pools
        extra["prism"] = {
            k: rep[k]
            for k in (
                "accounting",
                "regime",
                "backend",
                "allocation",
                "target",
                "selected_features",
                "epsilon_basic_composition",
                "delta_basic_composition",
                "rho_zcdp",
                "epsilon_from_zcdp",
                "measurements",
                "column_domains",
            )
        }
        notes += list(rep.get("notes", []))
        description = "PRISM: prediction-centric DP marginal release, Asiaee et al. Algorithm 1"
    else:
        stages = release.stages()
        if release.neighbouring != "replace-one":
            neighbouring = NEIGHBOURING["entropy/add-remove"]
        u = release.utility_
        extra["histogram"] = {
            "cells": len(release.histogram_.counts),
            "columns": {
                c["name"]: {"kind": c["kind"], "size": release._size(c), "source": c["source"]}
                for c in release.coding_
            },
            "released_entropy_bits": release.histogram_.entropy,
            "released_entropy_estimate_bits": None
            if release.entropy_ is None
            else release.entropy_.entropy,
            "evaluation (reads the confidential counts)": {
                "entropy_original_bits": u.entropy_original,
                "entropy_error_bits": u.entropy_error,
                "theorem3_bound": u.entropy_bound,
                "count_mae": u.count_mae,
            },
        }
        notes += [
            f"column {c['name']!r}: levels read from the data (assumed public)"
            for c in release.coding_
            if c["source"].startswith("data")
        ]
        description = "entropy-calibrated joint histogram release (REAEDP Algorithm 1)"
    return _jsonable(
        {
            "mechanism": name,
            "description": description,
            "epsilon": eps,
            "delta": delta,
            "epsilon_per_dataset": eps,
            "epsilon_total": eps,
            "delta_total": delta,
            "m": spec.m,
            "rows_per_dataset": rows,
            "composition": _composition(spec),
            "guarantee_type": GUARANTEE,
            "guarantee_kind": "global",
            "guarantee": f"({eps:.6g}, {delta:.3g})-DP for the whole release, {neighbouring}",
            "neighbouring_relation": neighbouring,
            "stages": stages,
            "notes": notes,
            "mechanism_options": spec.options,
            "budget": {
                "total_epsilon": spec.total_epsilon,
                "total_delta": spec.total_delta,
                "charge": eps,
                "delta_charge": delta,
                "ledger": str(spec.ledger_path),
            },
            **extra,
        }
    )


def _is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def measures(
    spec: ReleaseSpec, data: pd.DataFrame, synthetic: list[pd.DataFrame]
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Utility and disclosure tables for fully synthetic datasets.

    Marginals: per dataset and column, the ECDF measures U_m, U_a (numeric) or the total
    variation distance of the category shares (categorical). Models: pMSE of a propensity
    model, and where a two-class target exists TSTR AUROC (logistic regression trained on the
    synthetic data, scored on the real data the release used: in sample, not a held-out test)
    beside the same model trained on the real data (TRTR). Disclosure: :func:`match_risk` and
    :func:`synthetic_attribute_risk` over the disclosure keys.
    """
    from pseudopost.evaluate.disclosure import match_risk, synthetic_attribute_risk
    from pseudopost.evaluate.tstr import tstr_auroc
    from pseudopost.evaluate.utility import ecdf_utility, pmse

    real = data[spec.columns]
    target = spec.target
    two_class = target is not None and real[target].nunique() == 2
    trtr = tstr_auroc(real, real, target) if two_class else None
    marg, models, disc = [], [], []
    for j, s in enumerate(synthetic, start=1):
        for c in spec.columns:
            row = {"dataset": j, "column": c}
            if _is_numeric(real[c]) and _is_numeric(s[c]):
                e = ecdf_utility(real, s, [c]).iloc[0]
                row.update(
                    kind="numeric", U_m=float(e["U_m"]), U_a=float(e["U_a"]), total_variation=np.nan
                )
            else:
                p = real[c].astype(str).value_counts(normalize=True)
                q = s[c].astype(str).value_counts(normalize=True)
                tv = 0.5 * float(p.sub(q, fill_value=0.0).abs().sum())
                row.update(kind="categorical", U_m=np.nan, U_a=np.nan, total_variation=tv)
            marg.append(row)
        model = {"dataset": j, "pMSE": pmse(real, s, spec.columns, seed=spec.seed)}
        if two_class:
            model["TSTR AUROC"] = tstr_auroc(s, real, target)
            model["TRTR AUROC (real, in sample)"] = trtr
        models.append(model)
        ir = match_risk(real, s, spec.disclosure_keys, spec.disclosure_radius)
        row = {
            "dataset": j,
            "radius": spec.disclosure_radius,
            "unique_match_share": ir["unique_match_share"],
            "singled_out_share": ir["singled_out_share"],
            "matched_share": ir["matched_share"],
        }
        sens = spec.disclosure_sensitive
        if sens and sens not in spec.disclosure_keys:
            ar = synthetic_attribute_risk(
                real, s, spec.disclosure_keys, sens, spec.disclosure_radius
            )
            row[f"attribute_risk ({sens})"] = ar["attribute_risk"]
            row["attribute_baseline"] = ar["baseline"]
        disc.append(row)
    return pd.DataFrame(marg), pd.DataFrame(models), pd.DataFrame(disc)
