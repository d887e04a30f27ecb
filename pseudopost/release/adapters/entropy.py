r"""The entropy-calibrated histogram release in the release command: the ``[entropy]`` section.

The joint histogram of the listed columns on public bins with Laplace (pure
:math:`\varepsilon`) or Gaussian noise, plus optionally its Shannon entropy with noise
calibrated to REAEDP Theorem 3's bound (``entropy_share`` of the budget); synthetic records are
drawn from the noisy histogram (:class:`~pseudopost.mechanisms.entropy.joint.JointHistogramRelease`).
Global DP under replace-one neighbours (n public; the rows per dataset are n), or add/remove
for the counts alone (the rows are the rounded noisy total). Numeric columns need public bins
(edges, or a count with public bounds) or their levels in ``domain``. See
:mod:`pseudopost.release.adapters.fully_synthetic` for the rest of the layout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import pandas as pd

from pseudopost.release.adapters.fully_synthetic import (
    FullySyntheticAdapter,
    FullySyntheticSettings,
    coding_tables,
    present,
)
from pseudopost.release.errors import SpecError
from pseudopost.release.schema import ReleaseSpec, Schema, choice, fail, in_range

__all__ = ["EntropyAdapter"]


class EntropyAdapter(FullySyntheticAdapter):
    """The entropy-calibrated joint histogram release (module docstring)."""

    name = "entropy"
    description = "entropy-calibrated joint histogram release (REAEDP Algorithm 1)"
    schema: ClassVar[Schema] = {
        "columns": (True, "list[str]"),
        "bins": (False, "table"),
        "bounds": (False, "table"),
        "domain": (False, "table"),
        "noise": (False, "str"),
        "neighbouring": (False, "str"),
        "calibration": (False, "str"),
        "entropy_share": (False, "float"),
        "max_cells": (False, "posint"),
    }

    def check_options(self, mech: Mapping[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
        noise = choice("entropy.noise", opts.get("noise", "laplace"), ("laplace", "gaussian"))
        neigh = choice(
            "entropy.neighbouring",
            opts.get("neighbouring", "replace-one"),
            ("replace-one", "add-remove"),
        )
        choice("entropy.calibration", opts.get("calibration", "analytic"), ("analytic", "classic"))
        if noise == "gaussian" and "delta" not in mech:
            raise SpecError(
                "spec key 'mechanism.delta' is missing: entropy.noise = \"gaussian\" needs "
                "delta in (0, 1). Fix: add delta = 1e-6 under [mechanism]."
            )
        if noise == "laplace" and "delta" in mech:
            raise fail(
                "mechanism.delta",
                mech["delta"],
                "no delta with Laplace noise (pure epsilon-DP)",
                'remove delta or set entropy.noise = "gaussian".',
            )
        share = opts.get("entropy_share", 0.0)
        in_range("entropy.entropy_share", share, 0.0, 1.0, "left", "0.1")
        if share > 0 and neigh != "replace-one":
            raise fail(
                "entropy.entropy_share",
                share,
                "0 under add/remove neighbours (the entropy bound needs a public n, Theorem 3)",
                'set neighbouring = "replace-one" or entropy_share = 0.',
            )
        coding_tables("entropy", opts)
        cols = opts["columns"]
        for key in ("bins", "bounds", "domain"):
            for col in opts.get(key, {}):
                if col not in cols:
                    raise fail(
                        f"entropy.{key}.{col}",
                        col,
                        f"one of entropy.columns {cols}",
                        f"add {col!r} to columns or remove {key}.{col}.",
                    )
        for col, b in opts.get("bins", {}).items():
            if isinstance(b, int) and col not in opts.get("bounds", {}):
                raise SpecError(
                    f"spec key 'entropy.bins.{col}' is a bin count and needs public bounds. "
                    f"Fix: add bounds.{col} = [low, high] under [entropy] or give edges."
                )
        return opts

    def spends_delta(self, mech: Mapping[str, Any], opts: Mapping[str, Any]) -> bool:
        """Only with Gaussian noise; Laplace noise is pure epsilon-DP."""
        return opts.get("noise") == "gaussian"

    def columns_of(self, opts: Mapping[str, Any], frame: pd.DataFrame) -> list[str]:
        return list(opts["columns"])

    def check_columns(self, opts: Mapping[str, Any], frame: pd.DataFrame) -> None:
        cols = opts["columns"]
        present("entropy.columns", cols, frame)
        for c in cols:
            s = frame[c]
            numeric = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
            if numeric and c not in opts.get("bins", {}) and c not in opts.get("domain", {}):
                raise SpecError(
                    f"spec key 'entropy.bins.{c}' is missing: numeric column {c!r} needs public "
                    f"bins. Fix: add bins.{c} = [edges] (or a count with bounds.{c}) under "
                    "[entropy], or list its levels in domain."
                )

    def build(self, st: FullySyntheticSettings, seed: Any) -> Any:
        """The release (its noise is seeded at :meth:`fit_release`)."""
        from pseudopost.mechanisms.entropy.joint import JointHistogramRelease

        opts = st.options
        return JointHistogramRelease(
            epsilon=st.epsilon,
            delta=st.delta,
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

    def check_release(self, release, spec: ReleaseSpec, frame: pd.DataFrame) -> None:
        release.check(frame)

    def fit_release(self, release, frame: pd.DataFrame, st: FullySyntheticSettings, seed):
        return release.fit(frame, seed=seed)

    def default_rows(self, release, frame: pd.DataFrame) -> int:
        """n under replace-one (public), else the rounded noisy total."""
        return release.public_rows()

    def neighbouring_text(self, release) -> str:
        if release.neighbouring == "replace-one":
            return "replace-one (same n, one record changed; REAEDP Theorem 3)"
        return "add/remove one record (counts only; n not public)"

    def stages(self, release) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
        u = release.utility_
        histogram = {
            "cells": len(release.histogram_.counts),
            "columns": {
                c["name"]: {"kind": c["kind"], "size": release.sizes_[i], "source": c["source"]}
                for i, c in enumerate(release.coding_)
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
        notes = [
            f"column {c['name']!r}: levels read from the data (assumed public)"
            for c in release.coding_
            if c["source"].startswith("data")
        ]
        return release.stages(), {"histogram": histogram}, notes
