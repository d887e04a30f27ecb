r"""PRISM in the release command: the ``[prism]`` section, its checks, and its pools.

PRISM (Asiaee et al., Algorithm 1): feature selection by the exponential mechanism on mutual
information, noisy (conditional) mutual informations, Theorem 6.3's allocation across the
workload marginals, Gaussian measurements and synthesis by Private-PGM or naive Bayes. Global
:math:`(\varepsilon, \delta)`-DP by basic composition over every step (Theorem 6.1; or zCDP
converted once, ``accounting = "zcdp"``) under replace-one neighbours; ``delta`` defaults to
:math:`1/n^2` (appendix C.2). The keys of ``[prism]`` are the arguments of
:class:`~pseudopost.mechanisms.PRISM` (plus the released columns); see
:mod:`pseudopost.release.adapters.fully_synthetic` for the rest of the layout.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

import pandas as pd

from pseudopost.release.adapters.fully_synthetic import (
    M_NOTE,
    FullySyntheticAdapter,
    FullySyntheticSettings,
    coding_tables,
    present,
)
from pseudopost.release.errors import SpecError
from pseudopost.release.schema import (
    ReleaseSpec,
    Schema,
    choice,
    fail,
    in_range,
    str_list,
    table_of,
)

__all__ = ["PRISMAdapter"]

_POOLS = {
    "bins": "DP bin edges (Laplace)",
    "sel": "feature selection (exponential mechanism on mutual information)",
    "mi": "noisy (conditional) mutual informations (Laplace)",
    "task": "task marginals (X_j, Y) (Gaussian, Theorem 6.3 allocation)",
    "bg": "background: spanning tree (exponential) and marginals (Gaussian)",
}
_REPORTED = (
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


class PRISMAdapter(FullySyntheticAdapter):
    """PRISM (module docstring)."""

    name = "prism"
    description = "PRISM: prediction-centric DP marginal release, Asiaee et al. Algorithm 1"
    schema: ClassVar[Schema] = {
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
    }

    def check_options(self, mech: Mapping[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
        regime = choice("prism.regime", opts["regime"], ("causal", "graphical", "predictive"))
        needs = {"causal": "parents", "graphical": "dag", "predictive": "k"}[regime]
        if needs not in opts:
            raise SpecError(
                f"spec key 'prism.{needs}' is missing: regime = \"{regime}\" needs it. Fix: add "
                f"{needs} = ... under [prism] or choose another regime."
            )
        for other in {"parents", "dag", "k"} - {needs}:
            if other in opts:
                raise fail(
                    f"prism.{other}",
                    opts[other],
                    f"no '{other}' with regime = \"{regime}\" (it uses '{needs}')",
                    f"remove '{other}'.",
                )
        if "dag" in opts:
            opts["dag"] = table_of("prism.dag", opts["dag"], str_list)
        for key, choices in (
            ("allocation", ("closed_form", "uniform")),
            ("backend", ("pgm", "naive_bayes")),
            ("accounting", ("approx", "zcdp")),
            ("task_weights", ("uniform", "mi")),
            ("gaussian_method", ("classic", "analytic")),
        ):
            if key in opts:
                choice(f"prism.{key}", opts[key], choices)
        if "bins_fraction" in opts:
            in_range("prism.bins_fraction", opts["bins_fraction"], 0.0, 1.0, "neither", "0.05")
        if "pools" in opts:
            _check_pools(opts["pools"])
        coding_tables("prism", opts)
        for col, b in opts.get("bins", {}).items():
            if isinstance(b, int) and col not in opts.get("bounds", {}):
                raise SpecError(
                    f"spec key 'prism.bins.{col}' asks for {b} DP bins, which need public "
                    f"bounds. Fix: add bounds.{col} = [low, high] under [prism] or give edges."
                )
        return opts

    def target_of(self, opts: Mapping[str, Any]) -> str | None:
        return opts.get("target")

    def default_delta(self, n: int) -> float:
        """The paper's default :math:`\\delta = 1/n^2` (PRISM appendix C.2)."""
        return 1.0 / n**2

    def columns_of(self, opts: Mapping[str, Any], frame: pd.DataFrame) -> list[str]:
        cols = opts.get("columns") or list(frame.columns)
        return cols if opts["target"] in cols else [*cols, opts["target"]]

    def check_columns(self, opts: Mapping[str, Any], frame: pd.DataFrame) -> None:
        target = opts["target"]
        present("prism.target", [target], frame)
        cols = self.columns_of(opts, frame)
        present("prism.columns", cols, frame)
        features = [c for c in cols if c != target]
        if not features:
            raise fail(
                "prism.columns",
                cols,
                "at least one feature besides the target",
                "add feature columns.",
            )
        for p in opts.get("parents", []):
            if p not in features:
                raise fail(
                    "prism.parents",
                    p,
                    f"a released feature column {features}",
                    "name causal parents among prism.columns.",
                )
        if "dag" in opts:
            _check_dag(opts["dag"], target, features)
        if "k" in opts and opts["k"] > len(features):
            raise fail(
                "prism.k",
                opts["k"],
                f"at most the number of features d = {len(features)}",
                f"set k <= {len(features)}.",
            )
        for key in ("bins", "bounds", "domain"):
            for c in opts.get(key, {}):
                if c not in cols:
                    raise fail(
                        f"prism.{key}.{c}",
                        c,
                        f"a released column {cols}",
                        f"remove {key}.{c} or add {c!r} to prism.columns.",
                    )
        if frame[target].nunique(dropna=True) < 2:
            raise fail(
                "prism.target", target, "a column with at least 2 values", "choose another target."
            )

    def build(self, st: FullySyntheticSettings, seed: Any) -> Any:
        from pseudopost.mechanisms.prism import PRISM

        kw = {k: v for k, v in st.options.items() if k not in ("target", "columns")}
        return PRISM(st.epsilon, st.delta, target=st.options["target"], seed=seed, **kw)

    def check_release(self, release, spec: ReleaseSpec, frame: pd.DataFrame) -> None:
        """The column coding (levels, bins) and the regime's structure, without any release."""
        from pseudopost.mechanisms.prism.discretize import fit_encoding

        opts, cols = spec.settings.options, spec.columns
        bins = opts.get("bins", {})
        fit_encoding(
            frame[cols],
            cols,
            bins=bins,
            bounds=opts.get("bounds"),
            domain=opts.get("domain"),
            epsilon=1.0 if any(isinstance(b, int) for b in bins.values()) else None,
            seed=0,
        )
        release._features(frame[cols], spec.settings.target)

    def fit_release(self, release, frame: pd.DataFrame, st: FullySyntheticSettings, seed):
        return release.fit(frame, st.target)

    def neighbouring_text(self, release) -> str:
        return "replace-one (same n, one record changed), PRISM section 3.2"

    def composition(self, st: FullySyntheticSettings) -> str:
        if st.options.get("accounting") == "zcdp":
            return (
                "zCDP: the steps' rho add up and the sum is converted once to (epsilon, delta) "
                "(Bun & Steinke 2016, Prop. 1.3); the per-stage epsilons are each step's own"
                + M_NOTE
            )
        return super().composition(st)

    def stages(self, release) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
        rep = release.privacy_report()
        pools = rep["pools"]
        counts: dict[str, int] = {}
        for q in rep["measurements"]:
            counts[q["pool"]] = counts.get(q["pool"], 0) + 1
        stages = [
            {
                "stage": f"pool '{p}': {_POOLS.get(p, p)}"
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
        extra = {"pools": pools, "prism": {k: rep[k] for k in _REPORTED}}
        return stages, extra, list(rep.get("notes", []))


def _check_pools(pools: Mapping[str, Any]) -> None:
    want = {"sel", "mi", "task", "bg"}
    ok = set(pools) == want and all(
        isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in pools.values()
    )
    if not ok or not math.isclose(sum(pools.values()), 1.0) or not pools["task"] > 0:
        raise fail(
            "prism.pools",
            pools,
            "fractions >= 0 for sel, mi, task (> 0) and bg summing to 1",
            "e.g. { sel = 0.1, mi = 0.05, task = 0.65, bg = 0.2 }.",
        )


def _check_dag(dag: Mapping[str, list[str]], target: str, features: list[str]) -> None:
    from pseudopost.mechanisms.prism.regimes import markov_blanket

    try:
        blanket = markov_blanket(dag, target)
    except (TypeError, ValueError) as exc:
        raise SpecError(f"spec key 'prism.dag': {exc} Fix: correct the DAG.") from None
    bad = [b for b in blanket if b not in features]
    if bad or not blanket:
        raise fail(
            "prism.dag",
            dag,
            f"a DAG whose Markov blanket of {target!r} is non-empty and among the features "
            f"{features}",
            f"fix nodes {bad or blanket} or prism.columns.",
        )
