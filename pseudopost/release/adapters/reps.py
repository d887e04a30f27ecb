r"""REPS in the release command: the ``[reps]`` section, its checks, and its stages.

REPS (Asiaee et al., Algorithm 1): DP rarity scores (Stage 1), weights that shrink rare
records' influence (Stage 1.5, post-processing), one Gaussian release of weighted clipped
statistics (Stage 2) and a class-conditional Gaussian naive Bayes synthesizer. Global
:math:`(\varepsilon_s + \varepsilon_t, \delta_s + \delta_t)`-DP (Theorem 1) under replacement of
one record by the null record (n public); ``delta`` defaults to :math:`1/n^2` (section 7.4).
The keys of ``[reps]`` are the arguments of :class:`~pseudopost.mechanisms.REPS` (plus the
label, features and categorical columns); see
:mod:`pseudopost.release.adapters.fully_synthetic` for the rest of the layout.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from pseudopost.release.adapters.fully_synthetic import (
    FullySyntheticAdapter,
    FullySyntheticSettings,
    present,
)
from pseudopost.release.errors import SpecError
from pseudopost.release.schema import Schema, choice, fail, in_range, levels, table_of

__all__ = ["REPSAdapter"]


def _threshold(key: str, value: Any) -> str | float:
    """``"dp"``, ``"empirical"`` or a public number."""
    if value in ("dp", "empirical"):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    raise fail(key, value, "'dp', 'empirical' or a public number", f'set {key} = "dp".')


_threshold.expected = "'dp', 'empirical' or a number"  # type: ignore[attr-defined]


def _scaling_pair(key: str, value: Any) -> tuple[float, float]:
    ok = (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        and all(math.isfinite(v) for v in value)
        and value[1] > 0
    )
    if not ok:
        raise fail(key, value, "a list [centre, scale] with scale > 0", f"e.g. {key} = [0, 1].")
    return float(value[0]), float(value[1])


class REPSAdapter(FullySyntheticAdapter):
    """REPS (module docstring)."""

    name = "reps"
    description = (
        "REPS: risk-equalized private synthesis (DP rarity weights, weighted Gaussian naive "
        "Bayes), Asiaee et al. Algorithm 1"
    )
    schema: ClassVar[Schema] = {
        "label": (True, "str"),
        "features": (False, "list[str]"),
        "categorical": (False, "list[str]"),
        "weight_map": (False, "str"),
        "gamma": (False, "nonnegfloat"),
        "tau": (False, "posfloat"),
        "percentile": (False, "float"),
        "threshold": (False, _threshold),
        "quantile_share": (False, "float"),
        "epsilon_out": (False, "posfloat"),
        "clip": (False, "posfloat"),
        "scoring_share": (False, "float"),
        "bins": (False, "posint"),
        "p_min": (False, "float"),
        "calibration": (False, "str"),
        "scaling": (False, "table"),
        "categories": (False, "table"),
    }

    def check_options(self, mech: Mapping[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
        for key, choices in (
            ("weight_map", ("hinge_exp", "cap", "targeted", "uniform")),
            ("calibration", ("classic", "analytic")),
        ):
            if key in opts:
                choice(f"reps.{key}", opts[key], choices)
        for key, lo, hi, closed, ex in (
            ("percentile", 0.0, 100.0, "neither", "90"),
            ("quantile_share", 0.0, 1.0, "neither", "0.5"),
            ("scoring_share", 0.0, 1.0, "left", "0.1"),
            ("p_min", 0.0, 1.0, "neither", "1e-4"),
        ):
            if key in opts:
                in_range(f"reps.{key}", opts[key], lo, hi, closed, ex)
        if opts.get("bins", 2) < 2:
            raise fail("reps.bins", opts["bins"], "an integer >= 2", "e.g. 16.")
        if opts.get("weight_map") == "targeted" and "epsilon_out" not in opts:
            raise SpecError(
                "spec key 'reps.epsilon_out' is missing: weight_map = \"targeted\" needs the "
                "high-risk cap. Fix: add epsilon_out = ... under [reps]."
            )
        if opts.get("scoring_share") == 0.0 and opts.get("weight_map", "hinge_exp") != "uniform":
            raise fail(
                "reps.scoring_share",
                0.0,
                "a number in (0, 1) unless weight_map is 'uniform' (the weights need Stage-1 "
                "scores)",
                "e.g. 0.1.",
            )
        if "scaling" in opts:
            opts["scaling"] = table_of("reps.scaling", opts["scaling"], _scaling_pair)
        if "categories" in opts:
            opts["categories"] = table_of("reps.categories", opts["categories"], levels)
        return opts

    def target_of(self, opts: Mapping[str, Any]) -> str | None:
        return opts.get("label")

    def default_delta(self, n: int) -> float:
        """The paper's default :math:`\\delta = 1/n^2` (REPS section 7.4)."""
        return 1.0 / n**2

    def columns_of(self, opts: Mapping[str, Any], frame: pd.DataFrame) -> list[str]:
        label = opts["label"]
        feats = opts.get("features") or [c for c in frame.columns if c != label]
        return [*feats, label]

    def check_columns(self, opts: Mapping[str, Any], frame: pd.DataFrame) -> None:
        label = opts["label"]
        present("reps.label", [label], frame)
        feats = opts.get("features") or [c for c in frame.columns if c != label]
        present("reps.features", feats, frame)
        if label in feats:
            raise fail(
                "reps.features",
                feats,
                f"columns other than the label {label!r}",
                f"remove {label!r} from features.",
            )
        for c in opts.get("categorical", []):
            if c not in feats:
                raise fail(
                    "reps.categorical",
                    c,
                    f"one of the features {feats}",
                    "list only feature columns.",
                )
        if frame[label].nunique(dropna=True) < 2:
            raise fail(
                "reps.label", label, "a column with at least 2 classes", "choose a class column."
            )

    def build(self, st: FullySyntheticSettings, seed: Any) -> Any:
        from pseudopost.mechanisms.reps.core import REPS

        kw = {k: v for k, v in st.options.items() if k not in ("label", "features", "categorical")}
        return REPS(st.epsilon, st.delta, seed=seed, **kw)

    def fit_release(self, release, frame: pd.DataFrame, st: FullySyntheticSettings, seed):
        opts = st.options
        return release.fit(
            frame, opts["label"], features=opts.get("features"), categorical=opts.get("categorical")
        )

    def per_record(self, release) -> dict[str, np.ndarray]:
        return {
            "per-instance epsilon (Corollary 1 + 2)": release.per_instance_epsilon_,
            "weights w_i": release.weights_,
        }

    def neighbouring_text(self, release) -> str:
        return (
            "replace-one with the null record (record i replaced by a record with phi = 0; "
            "n public), REPS section 3.1"
        )

    def stages(self, release) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
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
                f"Gaussian release, sensitivity C/n = {rel.clip:.4g}/{rel.n}, "
                f"sigma {rel.sigma:.4g}",
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
        extra = {
            "per_statistic_budgets": _per_statistic(rel),
            "reps": {
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
            },
        }
        notes = [
            "the standardisation of numeric features and the categorical levels are read from "
            "the data and taken as public (REPS module notes) unless reps.scaling / "
            "reps.categories give them"
        ]
        return stages, extra, notes


def _per_statistic(rel) -> dict[str, Any]:
    """Every statistic of the one Stage-2 Gaussian release, per class, with its budget."""
    b, schema = rel.budget, rel.schema
    blocks = [{"statistic": "weighted count", "size": 1}]
    blocks += [
        {"statistic": f"counts of {c}", "size": len(lv)}
        for c, lv in zip(schema.categorical, schema.levels, strict=True)
    ]
    blocks += [{"statistic": f"mean of {c}", "size": 1} for c in schema.numeric]
    blocks += [{"statistic": f"second moment of {c}", "size": 1} for c in schema.numeric]
    out = {
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
        out["stage1_histograms"] = {
            "columns": [*rel.rarity.numeric, *rel.rarity.categorical],
            "epsilon": b.epsilon_s - rel.threshold_epsilon,
            "delta": b.delta_s,
            "sigma": rel.rarity.sigma,
        }
    return out
