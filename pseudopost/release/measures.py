r"""Utility and disclosure measures of a release, for ``privacy.json`` and the report.

Two sets, one per kind of synthetic data (an adapter picks the one that fits its release):

* :func:`partially_synthetic` (the pseudo posterior: the outcome is synthetic, the predictors
  are released as given): per dataset and column the ECDF measures :math:`U_m, U_a` and the
  pMSE; the confidence-interval overlap of the regression coefficients; identification risk
  (expected match risk, true match rate) and attribute risk of the record-linked data.
* :func:`fully_synthetic` (REPS, PRISM, the entropy histogram: no row belongs to a real
  record): ECDF measures of numeric columns and the total variation distance of the category
  shares of the others; pMSE and, for a two-class target, TSTR AUROC beside TRTR; key-matching
  disclosure measures (:func:`~pseudopost.evaluate.disclosure.match_risk`,
  :func:`~pseudopost.evaluate.disclosure.synthetic_attribute_risk`).

These read the confidential data: they are for the data holder.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pseudopost.release.schema import ReleaseSpec

__all__ = ["Measures", "fully_synthetic", "partially_synthetic", "spec_args"]


@dataclass(frozen=True)
class Measures:
    """The tables of one release: ``utility`` (name -> table, in report order) and
    ``disclosure``, with the explanatory note the report shows above each (by table name, and
    ``"disclosure"``), and optionally the ``verdicts`` that lead the report."""

    utility: Mapping[str, pd.DataFrame]
    disclosure: pd.DataFrame
    notes: Mapping[str, str] = field(default_factory=dict)
    #: measure, value, reference, verdict (:mod:`pseudopost.release.verdicts`): the report's
    #: first section when given
    verdicts: pd.DataFrame | None = None


def spec_args(spec: ReleaseSpec) -> dict[str, Any]:
    """The arguments both measure sets take from a resolved spec: the released columns, the
    disclosure keys, sensitive column and radius, and the seed (of the pMSE's model)."""
    return {
        "columns": spec.columns,
        "keys": spec.disclosure_keys,
        "sensitive": spec.disclosure_sensitive,
        "radius": spec.disclosure_radius,
        "seed": spec.seed,
    }


def _is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def partially_synthetic(
    real: pd.DataFrame,
    synthetic: Sequence[pd.DataFrame],
    *,
    columns: Sequence[str],
    outcome: str,
    predictors: Sequence[str],
    log_outcome: bool,
    keys: Sequence[str],
    sensitive: str,
    radius: float,
    seed: int,
) -> Measures:
    """Measures of partially synthetic datasets (module docstring)."""
    from pseudopost.evaluate.disclosure import attribute_risk, identification_risk
    from pseudopost.evaluate.utility import ci_overlap, ecdf_utility, pmse

    cols = list(columns)
    util, overlap, disc = [], [], []
    for j, s in enumerate(synthetic, start=1):
        ecdf = ecdf_utility(real, s, cols).reset_index()
        ecdf.insert(0, "dataset", j)
        ecdf["pMSE"] = pmse(real, s, cols, seed=seed)
        util.append(ecdf)
        try:
            ci = ci_overlap(
                real, s, outcome, list(predictors), log_outcome=log_outcome
            ).reset_index()
            overlap.append(ci[["coefficient", "overlap"]].assign(dataset=j, note=""))
        except ValueError as exc:  # e.g. a synthetic 0 under a log outcome: say so in the report
            overlap.append(
                pd.DataFrame(
                    {"coefficient": ["-"], "overlap": [np.nan], "dataset": [j], "note": [str(exc)]}
                )
            )
        ir = identification_risk(real, s, list(keys), outcome, radius)
        ar = attribute_risk(real, s, list(keys), sensitive, radius)
        disc.append(
            {
                "dataset": j,
                "radius": radius,
                "expected_match_risk": ir["expected_match_risk"],
                "true_match_rate": ir["true_match_rate"],
                f"attribute_risk ({sensitive})": ar["attribute_risk"],
                "attribute_baseline": ar["baseline"],
            }
        )
    overlap = pd.concat(overlap, ignore_index=True)[["dataset", "coefficient", "overlap", "note"]]
    return Measures(
        utility={"ecdf_and_pmse": pd.concat(util, ignore_index=True), "ci_overlap": overlap},
        disclosure=pd.DataFrame(disc),
        notes={
            "ecdf_and_pmse": "Per synthetic dataset and column: ECDF measures U_m (max) and U_a "
            "(mean squared) of the difference of real and synthetic empirical CDFs (0 is "
            "perfect), and the pMSE of a propensity model telling real from synthetic (smaller "
            "is better).",
            "ci_overlap": "Confidence-interval overlap of the regression coefficients (1 = same "
            "interval as on the real data, below 0 = disjoint).",
            "disclosure": "Identification: an intruder who knows a record's key columns and "
            "value matches synthetic records within the radius; expected match risk is a count "
            "over records, true match rate a share. Attribute risk: share of records whose "
            "sensitive value is guessed within the radius from key-matched synthetic records "
            "(baseline: guessing from the whole synthetic column).",
        },
    )


def fully_synthetic(
    real: pd.DataFrame,
    synthetic: Sequence[pd.DataFrame],
    *,
    columns: Sequence[str],
    target: str | None,
    keys: Sequence[str],
    sensitive: str,
    radius: float,
    seed: int,
) -> Measures:
    """Measures of fully synthetic datasets (module docstring). TSTR AUROC: a logistic
    regression of the two-class ``target`` trained on the synthetic data and scored on the real
    data the release used (in sample, not a held-out test), beside the same model trained on
    the real data (TRTR)."""
    from pseudopost.evaluate.disclosure import match_risk, synthetic_attribute_risk
    from pseudopost.evaluate.tstr import tstr_auroc
    from pseudopost.evaluate.utility import ecdf_utility, pmse

    cols = list(columns)
    real = real[cols]
    two_class = target is not None and real[target].nunique() == 2
    trtr = tstr_auroc(real, real, target) if two_class else None
    marg, models, disc = [], [], []
    for j, s in enumerate(synthetic, start=1):
        for c in cols:
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
        model = {"dataset": j, "pMSE": pmse(real, s, cols, seed=seed)}
        if two_class:
            model["TSTR AUROC"] = tstr_auroc(s, real, target)
            model["TRTR AUROC (real, in sample)"] = trtr
        models.append(model)
        ir = match_risk(real, s, list(keys), radius)
        row = {
            "dataset": j,
            "radius": radius,
            "unique_match_share": ir["unique_match_share"],
            "singled_out_share": ir["singled_out_share"],
            "matched_share": ir["matched_share"],
        }
        if sensitive and sensitive not in keys:
            ar = synthetic_attribute_risk(real, s, list(keys), sensitive, radius)
            row[f"attribute_risk ({sensitive})"] = ar["attribute_risk"]
            row["attribute_baseline"] = ar["baseline"]
        disc.append(row)
    return Measures(
        utility={"marginals": pd.DataFrame(marg), "models": pd.DataFrame(models)},
        disclosure=pd.DataFrame(disc),
        notes={
            "marginals": "Per synthetic dataset and column: ECDF measures U_m (max) and U_a "
            "(mean squared) for numeric columns, total variation distance of the category "
            "shares for categorical ones (0 is perfect).",
            "models": "pMSE of a propensity model telling real from synthetic (smaller is "
            "better); TSTR: AUROC on the real data of a logistic regression of the target "
            "trained on the synthetic data, beside the same model trained on the real data.",
            "disclosure": "Fully synthetic rows: a synthetic record matches a real one when the "
            "categorical keys agree and the numeric keys lie within the radius (relative to the "
            "real value). Unique match share: synthetic records matching exactly one real "
            "record; singled-out share: real records that are the only match of some synthetic "
            "record; attribute risk: share of real records whose sensitive value is guessed "
            "from the key-matched synthetic records (baseline: guessing from the whole "
            f"synthetic column). Keys: {', '.join(map(str, keys))}.",
        },
    )
