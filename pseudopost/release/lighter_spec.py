r"""Spec sections of the lighter releases: REPS, PRISM and the entropy-calibrated histogram.

These mechanisms are :math:`(\varepsilon, \delta)`-DP with a *global* guarantee fixed before the
data are seen, so a spec states the budget the release spends (``[mechanism] epsilon``,
``delta``) and the mechanism's own structure in a section named after it. There is no
``[model]`` or ``[sampling]`` section (no MCMC); the seed sits under ``[release]``::

    [data]
    path = "../data/breast_cancer_wdbc.csv"

    [mechanism]
    name = "reps"                    # reps | prism | entropy
    epsilon = 2.0                    # spent once: the m datasets are samples of one release
    delta = 1e-6                     # REPS, PRISM: default 1/n^2; entropy: Gaussian noise only

    [reps]                           # or [prism] / [entropy]: the mechanism's own keys
    label = "diagnosis"

    [release]
    m = 2
    seed = 2026
    out = "../breast-cancer-reps"

    [budget]
    total_epsilon = 20.0             # the dataset's lifetime (epsilon, delta), kept in the ledger
    total_delta = 1e-4

Each mechanism's keys (:data:`SCHEMAS`) are the constructor arguments of
:class:`~pseudopost.mechanisms.REPS`, :class:`~pseudopost.mechanisms.PRISM` and
:class:`~pseudopost.mechanisms.EntropyHistogram` (the joint histogram of the listed columns, see
:mod:`pseudopost.mechanisms.entropy.joint`); they are type-checked here, passed through the
constructor (which checks their ranges) and checked against the data's columns by
:func:`check_data`, all before any noise is drawn.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "LIGHTER",
    "NEIGHBOURING",
    "SCHEMAS",
    "build",
    "check_data",
    "check_options",
    "columns_of",
    "default_delta",
    "target_of",
]

LIGHTER = ("reps", "prism", "entropy")

#: neighbouring relation of each mechanism, from its docstring
NEIGHBOURING = {
    "reps": "replace-one with the null record (record i replaced by a record with phi = 0; "
    "n public), REPS section 3.1",
    "prism": "replace-one (same n, one record changed), PRISM section 3.2",
    "entropy": "replace-one (same n, one record changed; REAEDP Theorem 3)",
    "entropy/add-remove": "add/remove one record (counts only; n not public)",
}

# key: (required, kind); kinds are those of spec._check_kind plus the ones in _KIND_CHECKS
SCHEMAS: dict[str, dict[str, tuple[bool, str]]] = {
    "reps": {
        "label": (True, "str"),
        "features": (False, "list[str]"),
        "categorical": (False, "list[str]"),
        "weight_map": (False, "str"),
        "gamma": (False, "nonnegfloat"),
        "tau": (False, "posfloat"),
        "percentile": (False, "float"),
        "threshold": (False, "threshold"),
        "quantile_share": (False, "float"),
        "epsilon_out": (False, "posfloat"),
        "clip": (False, "posfloat"),
        "scoring_share": (False, "float"),
        "bins": (False, "posint"),
        "p_min": (False, "float"),
        "calibration": (False, "str"),
        "scaling": (False, "table"),
        "categories": (False, "table"),
    },
    "prism": {
        "target": (True, "str"),
        "columns": (False, "list[str]"),
        "regime": (True, "str"),
        "parents": (False, "list[str]"),
        "dag": (False, "table"),
        "k": (False, "posint"),
        "allocation": (False, "str"),
        "backend": (False, "str"),
        "accounting": (False, "str"),
        "pools": (False, "table"),
        "m3": (False, "nonnegint"),
        "task_weights": (False, "str"),
        "joint_cells": (False, "nonnegint"),
        "bins": (False, "table"),
        "bounds": (False, "table"),
        "domain": (False, "table"),
        "bins_fraction": (False, "float"),
        "gaussian_method": (False, "str"),
        "iters": (False, "posint"),
        "max_model_cells": (False, "posfloat"),
    },
    "entropy": {
        "columns": (True, "list[str]"),
        "bins": (False, "table"),
        "bounds": (False, "table"),
        "domain": (False, "table"),
        "noise": (False, "str"),
        "neighbouring": (False, "str"),
        "calibration": (False, "str"),
        "entropy_share": (False, "float"),
        "max_cells": (False, "posint"),
    },
}


def _err(message: str):
    from pseudopost.release.spec import SpecError

    return SpecError(message)


def _fail(key: str, value: Any, expected: str, fix: str):
    from pseudopost.release.spec import _fail as fail

    return fail(key, value, expected, fix)


def _choice(key: str, value: Any, choices) -> Any:
    if value not in choices:
        raise _fail(key, value, f"one of {list(choices)}", f"set '{key}' to one of them.")
    return value


def _in(key: str, value: float, low: float, high: float, closed: str, example: str) -> None:
    lo = value >= low if closed in ("both", "left") else value > low
    hi = value <= high if closed in ("both", "right") else value < high
    if not (lo and hi):
        lb = "[" if closed in ("both", "left") else "("
        rb = "]" if closed in ("both", "right") else ")"
        raise _fail(key, value, f"a number in {lb}{low}, {high}{rb}", f"e.g. {example}.")


def _pair(key: str, value: Any) -> tuple[float, float]:
    ok = (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        and all(math.isfinite(v) for v in value)
        and value[0] < value[1]
    )
    if not ok:
        raise _fail(
            key,
            value,
            "a list [low, high] of two finite numbers, low < high",
            f"write {key} = [low, high].",
        )
    return float(value[0]), float(value[1])


def _edges_or_count(key: str, value: Any) -> int | list[float]:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 2:
        return value
    if (
        isinstance(value, list)
        and len(value) >= 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        and all(math.isfinite(v) for v in value)
        and all(b > a for a, b in itertools.pairwise(value))
    ):
        return [float(v) for v in value]
    raise _fail(
        key,
        value,
        "a bin count >= 2 or a list of >= 2 increasing edges",
        f"e.g. {key} = 8 (with bounds) or [0, 10, 20, 50].",
    )


def _table_of(key: str, table: dict, convert) -> dict:
    return {col: convert(f"{key}.{col}", v) for col, v in table.items()}


def _levels(key: str, value: Any) -> list:
    if not (isinstance(value, list) and value and all(isinstance(v, str | int) for v in value)):
        raise _fail(
            key,
            value,
            "a non-empty list of levels (strings or integers)",
            f'e.g. {key} = ["a", "b"].',
        )
    if len(set(value)) != len(value):
        raise _fail(key, value, "distinct levels", "drop the duplicates.")
    return list(value)


def _str_list(key: str, value: Any) -> list[str]:
    if not (isinstance(value, list) and all(isinstance(v, str) and v for v in value)):
        raise _fail(key, value, "a list of column names", f'e.g. {key} = ["a", "b"].')
    return list(value)


def check_kind(key: str, value: Any, kind: str) -> Any:
    """The kinds only lighter mechanisms use ('table', 'threshold'); ``None`` if not one."""
    if kind == "table":
        if not isinstance(value, dict) or not value:
            raise _fail(
                key,
                value,
                "a non-empty table {column = value, ...}",
                f"write {key} = {{ column = ... }}.",
            )
        return value
    if kind == "threshold":
        if value in ("dp", "empirical") or (
            isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        ):
            return float(value) if not isinstance(value, str) else value
        raise _fail(key, value, "'dp', 'empirical' or a public number", f'set {key} = "dp".')
    return None


def check_options(name: str, mech: dict[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
    """Check the ``[mechanism]`` budget and the mechanism section's values; returns the cleaned
    section. Ranges the release class checks itself are checked by building it (:func:`build`
    without data)."""
    sec = name
    opts = dict(opts)
    if "delta" in mech:
        _in("mechanism.delta", mech["delta"], 0.0, 1.0, "neither", "1e-6")
    if name == "reps":
        for key, choices in (
            ("weight_map", ("hinge_exp", "cap", "targeted", "uniform")),
            ("calibration", ("classic", "analytic")),
        ):
            if key in opts:
                _choice(f"{sec}.{key}", opts[key], choices)
        for key, lo, hi, closed, ex in (
            ("percentile", 0.0, 100.0, "neither", "90"),
            ("quantile_share", 0.0, 1.0, "neither", "0.5"),
            ("scoring_share", 0.0, 1.0, "left", "0.1"),
            ("p_min", 0.0, 1.0, "neither", "1e-4"),
        ):
            if key in opts:
                _in(f"{sec}.{key}", opts[key], lo, hi, closed, ex)
        if opts.get("bins", 2) < 2:
            raise _fail(f"{sec}.bins", opts["bins"], "an integer >= 2", "e.g. 16.")
        if opts.get("weight_map") == "targeted" and "epsilon_out" not in opts:
            raise _err(
                "spec key 'reps.epsilon_out' is missing: weight_map = \"targeted\" needs the "
                "high-risk cap. Fix: add epsilon_out = ... under [reps]."
            )
        if opts.get("scoring_share") == 0.0 and opts.get("weight_map", "hinge_exp") != "uniform":
            raise _fail(
                f"{sec}.scoring_share",
                0.0,
                "a number in (0, 1) unless weight_map is "
                "'uniform' (the weights need Stage-1 scores)",
                "e.g. 0.1.",
            )
        if "scaling" in opts:
            opts["scaling"] = _table_of(f"{sec}.scaling", opts["scaling"], _scaling_pair)
        if "categories" in opts:
            opts["categories"] = _table_of(f"{sec}.categories", opts["categories"], _levels)
    elif name == "prism":
        regime = _choice(f"{sec}.regime", opts["regime"], ("causal", "graphical", "predictive"))
        needs = {"causal": "parents", "graphical": "dag", "predictive": "k"}[regime]
        if needs not in opts:
            raise _err(
                f"spec key '{sec}.{needs}' is missing: regime = \"{regime}\" needs it. Fix: add "
                f"{needs} = ... under [prism] or choose another regime."
            )
        for other in {"parents", "dag", "k"} - {needs}:
            if other in opts:
                raise _fail(
                    f"{sec}.{other}",
                    opts[other],
                    f"no '{other}' with regime = \"{regime}\" (it uses '{needs}')",
                    f"remove '{other}'.",
                )
        if "dag" in opts:
            opts["dag"] = _table_of(f"{sec}.dag", opts["dag"], _str_list)
        for key, choices in (
            ("allocation", ("closed_form", "uniform")),
            ("backend", ("pgm", "naive_bayes")),
            ("accounting", ("approx", "zcdp")),
            ("task_weights", ("uniform", "mi")),
            ("gaussian_method", ("classic", "analytic")),
        ):
            if key in opts:
                _choice(f"{sec}.{key}", opts[key], choices)
        if "bins_fraction" in opts:
            _in(f"{sec}.bins_fraction", opts["bins_fraction"], 0.0, 1.0, "neither", "0.05")
        if "pools" in opts:
            pools = opts["pools"]
            want = {"sel", "mi", "task", "bg"}
            ok = set(pools) == want and all(
                isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
                for v in pools.values()
            )
            if not ok or not math.isclose(sum(pools.values()), 1.0) or not pools["task"] > 0:
                raise _fail(
                    f"{sec}.pools",
                    pools,
                    "fractions >= 0 for sel, mi, task (> 0) and bg summing to 1",
                    "e.g. { sel = 0.1, mi = 0.05, task = 0.65, bg = 0.2 }.",
                )
        if "bins" in opts:
            opts["bins"] = _table_of(f"{sec}.bins", opts["bins"], _edges_or_count)
        if "bounds" in opts:
            opts["bounds"] = _table_of(f"{sec}.bounds", opts["bounds"], _pair)
        if "domain" in opts:
            opts["domain"] = _table_of(f"{sec}.domain", opts["domain"], _levels)
        for col, b in opts.get("bins", {}).items():
            if isinstance(b, int) and col not in opts.get("bounds", {}):
                raise _err(
                    f"spec key 'prism.bins.{col}' asks for {b} DP bins, which need public "
                    f"bounds. Fix: add bounds.{col} = [low, high] under [prism] or give edges."
                )
    else:
        noise = _choice(f"{sec}.noise", opts.get("noise", "laplace"), ("laplace", "gaussian"))
        neigh = _choice(
            f"{sec}.neighbouring",
            opts.get("neighbouring", "replace-one"),
            ("replace-one", "add-remove"),
        )
        _choice(f"{sec}.calibration", opts.get("calibration", "analytic"), ("analytic", "classic"))
        if noise == "gaussian" and "delta" not in mech:
            raise _err(
                "spec key 'mechanism.delta' is missing: entropy.noise = \"gaussian\" needs "
                "delta in (0, 1). Fix: add delta = 1e-6 under [mechanism]."
            )
        if noise == "laplace" and "delta" in mech:
            raise _fail(
                "mechanism.delta",
                mech["delta"],
                "no delta with Laplace noise (pure epsilon-DP)",
                'remove delta or set entropy.noise = "gaussian".',
            )
        share = opts.get("entropy_share", 0.0)
        _in(f"{sec}.entropy_share", share, 0.0, 1.0, "left", "0.1")
        if share > 0 and neigh != "replace-one":
            raise _fail(
                f"{sec}.entropy_share",
                share,
                "0 under add/remove neighbours (the entropy bound needs a public n, Theorem 3)",
                'set neighbouring = "replace-one" or entropy_share = 0.',
            )
        if "bins" in opts:
            opts["bins"] = _table_of(f"{sec}.bins", opts["bins"], _edges_or_count)
        if "bounds" in opts:
            opts["bounds"] = _table_of(f"{sec}.bounds", opts["bounds"], _pair)
        if "domain" in opts:
            opts["domain"] = _table_of(f"{sec}.domain", opts["domain"], _levels)
        cols = opts["columns"]
        for key in ("bins", "bounds", "domain"):
            for col in opts.get(key, {}):
                if col not in cols:
                    raise _fail(
                        f"{sec}.{key}.{col}",
                        col,
                        f"one of entropy.columns {cols}",
                        f"add {col!r} to columns or remove {key}.{col}.",
                    )
        for col, b in opts.get("bins", {}).items():
            if isinstance(b, int) and col not in opts.get("bounds", {}):
                raise _err(
                    f"spec key 'entropy.bins.{col}' is a bin count and needs public bounds. "
                    f"Fix: add bounds.{col} = [low, high] under [entropy] or give edges."
                )
    for key in ("columns", "features", "categorical", "parents"):
        if key in opts and len(set(opts[key])) != len(opts[key]):
            raise _fail(f"{sec}.{key}", opts[key], "distinct column names", "drop duplicates.")
    try:
        build(name, mech, opts, seed=0)
    except (TypeError, ValueError) as exc:
        raise _err(f"spec section [{sec}]: {exc} Fix: correct the [{sec}] section.") from None
    return opts


def _scaling_pair(key: str, value: Any) -> tuple[float, float]:
    ok = (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        and all(math.isfinite(v) for v in value)
        and value[1] > 0
    )
    if not ok:
        raise _fail(key, value, "a list [centre, scale] with scale > 0", f"e.g. {key} = [0, 1].")
    return float(value[0]), float(value[1])


def default_delta(n: int) -> float:
    """The papers' default :math:`\\delta = 1/n^2` (REPS section 7.4, PRISM appendix C.2)."""
    return 1.0 / n**2


def build(name: str, mech: dict[str, Any], opts: dict[str, Any], *, seed) -> Any:
    """The release object the spec describes (REPS, PRISM, or the joint-histogram release)."""
    eps = mech["epsilon"]
    delta = mech.get("delta")
    if name == "reps":
        from pseudopost.mechanisms.reps.core import REPS

        kw = {k: v for k, v in opts.items() if k not in ("label", "features", "categorical")}
        return REPS(eps, delta, seed=seed, **kw)
    if name == "prism":
        from pseudopost.mechanisms.prism import PRISM

        kw = {k: v for k, v in opts.items() if k not in ("target", "columns")}
        return PRISM(eps, delta, target=opts["target"], seed=seed, **kw)
    from pseudopost.mechanisms.entropy.joint import JointHistogramRelease

    return JointHistogramRelease(
        epsilon=eps,
        delta=delta,
        columns=tuple(opts["columns"]),
        bins=opts.get("bins", {}),
        bounds=opts.get("bounds", {}),
        domain=opts.get("domain", {}),
        noise=opts.get("noise", "laplace"),
        neighbouring=opts.get("neighbouring", "replace-one"),
        calibration=opts.get("calibration", "analytic"),
        entropy_share=opts.get("entropy_share", 0.0),
        max_cells=opts.get("max_cells", 1_000_000),
    )


def target_of(name: str, opts: dict[str, Any]) -> str | None:
    """The class/target column (REPS label, PRISM target), None for the histogram release."""
    return opts.get("label") if name == "reps" else opts.get("target")


def columns_of(name: str, opts: dict[str, Any], frame: pd.DataFrame) -> list[str]:
    """The released columns, in the data's order for defaults."""
    if name == "reps":
        label = opts["label"]
        feats = opts.get("features") or [c for c in frame.columns if c != label]
        return [*feats, label]
    if name == "prism":
        cols = opts.get("columns") or list(frame.columns)
        return cols if opts["target"] in cols else [*cols, opts["target"]]
    return list(opts["columns"])


def _present(key: str, cols, frame: pd.DataFrame, what: str = "a column") -> None:
    for c in cols:
        if c not in frame.columns:
            raise _fail(
                key,
                c,
                f"{what} of the data (columns: {list(frame.columns)})",
                "correct the column name.",
            )


def check_data(name: str, opts: dict[str, Any], frame: pd.DataFrame, path_name: str) -> None:
    """Check the section's columns against the data: present, no missing values, numeric where
    the mechanism needs numbers, and the structure (parents, DAG, k) consistent with them."""
    sec = name
    if name == "reps":
        label = opts["label"]
        _present(f"{sec}.label", [label], frame)
        feats = opts.get("features") or [c for c in frame.columns if c != label]
        _present(f"{sec}.features", feats, frame)
        if label in feats:
            raise _fail(
                f"{sec}.features",
                feats,
                f"columns other than the label {label!r}",
                f"remove {label!r} from features.",
            )
        cats = opts.get("categorical", [])
        for c in cats:
            if c not in feats:
                raise _fail(
                    f"{sec}.categorical",
                    c,
                    f"one of the features {feats}",
                    "list only feature columns.",
                )
        if frame[label].nunique(dropna=True) < 2:
            raise _fail(
                f"{sec}.label", label, "a column with at least 2 classes", "choose a class column."
            )
        used = [*feats, label]
    elif name == "prism":
        target = opts["target"]
        _present(f"{sec}.target", [target], frame)
        cols = columns_of(name, opts, frame)
        _present(f"{sec}.columns", cols, frame)
        features = [c for c in cols if c != target]
        if not features:
            raise _fail(
                f"{sec}.columns",
                cols,
                "at least one feature besides the target",
                "add feature columns.",
            )
        if "parents" in opts:
            for p in opts["parents"]:
                if p not in features:
                    raise _fail(
                        f"{sec}.parents",
                        p,
                        f"a released feature column {features}",
                        "name causal parents among prism.columns.",
                    )
        if "dag" in opts:
            from pseudopost.mechanisms.prism.regimes import markov_blanket

            try:
                blanket = markov_blanket(opts["dag"], target)
            except (TypeError, ValueError) as exc:
                raise _err(f"spec key 'prism.dag': {exc} Fix: correct the DAG.") from None
            bad = [b for b in blanket if b not in features]
            if bad or not blanket:
                raise _fail(
                    f"{sec}.dag",
                    opts["dag"],
                    f"a DAG whose Markov blanket of "
                    f"{target!r} is non-empty and among the features {features}",
                    f"fix nodes {bad or blanket} or prism.columns.",
                )
        if "k" in opts and opts["k"] > len(features):
            raise _fail(
                f"{sec}.k",
                opts["k"],
                f"at most the number of features d = {len(features)}",
                f"set k <= {len(features)}.",
            )
        for key in ("bins", "bounds", "domain"):
            for c in opts.get(key, {}):
                if c not in cols:
                    raise _fail(
                        f"{sec}.{key}.{c}",
                        c,
                        f"a released column {cols}",
                        f"remove {key}.{c} or add {c!r} to prism.columns.",
                    )
        if frame[target].nunique(dropna=True) < 2:
            raise _fail(
                f"{sec}.target", target, "a column with at least 2 values", "choose another target."
            )
        used = cols
    else:
        cols = opts["columns"]
        _present(f"{sec}.columns", cols, frame)
        for c in cols:
            numeric = pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(
                frame[c]
            )
            if numeric and c not in opts.get("bins", {}) and c not in opts.get("domain", {}):
                raise _err(
                    f"spec key 'entropy.bins.{c}' is missing: numeric column {c!r} needs public "
                    f"bins. Fix: add bins.{c} = [edges] (or a count with bounds.{c}) under "
                    "[entropy], or list its levels in domain."
                )
        used = cols
    for c in used:
        if frame[c].isna().any():
            raise _err(
                f"data file {path_name!r}: column {c!r} has {int(frame[c].isna().sum())} missing "
                "value(s). Fix: fill or drop them before the release, or leave the column out."
            )
    for c in used:
        s = frame[c]
        if pd.api.types.is_numeric_dtype(s) and not np.isfinite(s.to_numpy(float)).all():
            raise _err(
                f"data file {path_name!r}: column {c!r} holds non-finite values. Fix: remove them."
            )
