r"""The shared shape of the releases that publish one DP summary and sample from it.

REPS, PRISM and the entropy-calibrated histogram each release one DP summary of the data (noisy
statistics, noisy marginals, a noisy histogram) at a budget fixed before the data are seen, and
the m synthetic datasets are samples from that one summary: post-processing, so their
:class:`~pseudopost.privacy.PrivacyStatement` is per release (``unit="release"``) and the
whole release is charged its :math:`(\varepsilon, \delta)` once, whatever m. Their spec states
the budget the release spends under ``[mechanism]``, the mechanism's structure in a section named
after it, and the seed under ``[release]``; there is no ``[model]`` or ``[sampling]``::

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
    rows = 500                       # optional: rows per dataset (default: n, public)
    out = "../breast-cancer-reps"

    [budget]
    total_epsilon = 20.0             # the dataset's lifetime (epsilon, delta), kept in the ledger
    total_delta = 1e-4

The seed: ``SeedSequence(release.seed)`` spawns one seed for the fit and one per synthetic
dataset, so the same spec gives byte-identical synthetic CSVs. The section's keys are the
constructor arguments of the release class; they are type-checked by the one loader, checked by
the subclass, passed through the constructor (which checks their ranges) and checked against the
data's columns, all before any noise is drawn.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from pseudopost.release import report
from pseudopost.release.adapters.base import MechanismAdapter, Produced
from pseudopost.release.errors import SpecError
from pseudopost.release.files import say
from pseudopost.release.measures import Measures, fully_synthetic, spec_args
from pseudopost.release.schema import (
    ReleaseSpec,
    Schema,
    distinct,
    edges_or_count,
    fail,
    in_range,
    levels,
    pair,
    table_of,
)

__all__ = [
    "M_NOTE",
    "FullySyntheticAdapter",
    "FullySyntheticSettings",
    "coding_tables",
    "present",
]

#: the sentence on m that every composition text ends with
M_NOTE = (
    "; the m synthetic datasets are samples of one release (post-processing), so they cost "
    "nothing more"
)
_GUARANTEE = {
    "global": "global (epsilon, delta)-DP: a worst-case guarantee over all neighbouring databases",
    "global given the weights": "global (epsilon, delta)-DP given the weights: a worst-case "
    "guarantee that holds if the weights did not depend on the data",
    "local": "local (epsilon, delta): holds for this database and its neighbours only",
}


@dataclass(frozen=True)
class FullySyntheticSettings:
    """``[mechanism]`` (the declared budget), the mechanism's section and the seed.

    ``delta`` is the declared delta until :meth:`FullySyntheticAdapter.resolve` fills in the
    mechanism's default for the data (e.g. :math:`1/n^2`)."""

    epsilon: float
    delta: float | None
    options: dict[str, Any]
    seed: int
    rows: int | None
    target: str | None


def present(key: str, cols, frame: pd.DataFrame, what: str = "a column") -> None:
    """Refuse column names that are not columns of the data."""
    for c in cols:
        if c not in frame.columns:
            raise fail(
                key,
                c,
                f"{what} of the data (columns: {list(frame.columns)})",
                "correct the column name.",
            )


def coding_tables(sec: str, opts: dict[str, Any]) -> None:
    """Convert the public coding tables ``bins`` (counts or edges), ``bounds`` ([low, high])
    and ``domain`` (levels) of section ``sec`` in place."""
    for key, convert in (("bins", edges_or_count), ("bounds", pair), ("domain", levels)):
        if key in opts:
            opts[key] = table_of(f"{sec}.{key}", opts[key], convert)


class FullySyntheticAdapter(MechanismAdapter):
    """A release of one DP summary, sampled m times (module docstring). A subclass names its
    section's keys (``schema``), checks them (:meth:`check_options`) and the data
    (:meth:`check_columns`), builds and fits its release object, and describes its stages."""

    #: the keys of the mechanism's own section ``[NAME]``
    schema: ClassVar[Schema]
    #: what the release is, for privacy.json and the report
    description: ClassVar[str]
    release_keys: ClassVar[Schema] = {"seed": (True, "nonnegint"), "rows": (False, "posint")}
    release_required = True
    hints: ClassVar[Mapping[str, str]] = {
        "model": "the {name} release has no [model]: its structure goes under [{name}]",
        "sampling": "the {name} release does not sample a posterior: put seed under [release]",
        "budget.max_epsilon": "the {name} release spends exactly mechanism.epsilon, so there is "
        "no per-dataset cap",
        "frontier": "[frontier] chooses the risk weights of a single-outcome pseudo posterior "
        "release; the {name} release has no weights to choose and spends exactly "
        "mechanism.epsilon",
    }

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "schema" in cls.__dict__:
            cls.sections = {
                "mechanism": {
                    "name": (True, "str"),
                    "epsilon": (True, "posfloat"),
                    "delta": (False, "float"),
                },
                cls.name: cls.schema,
            }
            cls.required = ("mechanism", cls.name)

    # ------------------------------------------------------------------ the subclass's part
    @abstractmethod
    def check_options(self, mech: Mapping[str, Any], opts: dict[str, Any]) -> dict[str, Any]:
        """Check (and convert) the section's values against each other and ``[mechanism]``."""

    @abstractmethod
    def columns_of(self, opts: Mapping[str, Any], frame: pd.DataFrame) -> list[str]:
        """The released columns, in the data's order for defaults."""

    @abstractmethod
    def check_columns(self, opts: Mapping[str, Any], frame: pd.DataFrame) -> None:
        """Check the section's columns and structure against the data."""

    @abstractmethod
    def build(self, st: FullySyntheticSettings, seed: Any) -> Any:
        """The unfitted release object."""

    @abstractmethod
    def fit_release(self, release: Any, frame: pd.DataFrame, st: FullySyntheticSettings, seed):
        """Fit ``release`` on the released columns; returns the fitted release."""

    @abstractmethod
    def stages(self, release: Any) -> tuple[list[dict[str, Any]], dict[str, Any], list[str]]:
        """The budget per stage (each with ``stage``, ``epsilon``, ``delta``), the mechanism's
        extra privacy.json blocks, and notes on what is assumed public."""

    def target_of(self, opts: Mapping[str, Any]) -> str | None:
        """The class/target column, if the mechanism has one."""
        return None

    def default_delta(self, n: int) -> float | None:
        """The delta used when ``mechanism.delta`` is not given (None: the release spends
        none unless told)."""
        return None

    def spends_delta(self, mech: Mapping[str, Any], opts: Mapping[str, Any]) -> bool:
        """Whether the release spends delta (then the ledger needs a total delta)."""
        return True

    def check_release(self, release: Any, spec: ReleaseSpec, frame: pd.DataFrame) -> None:
        """Checks the built release can run on the data without releasing anything."""
        return None

    def default_rows(self, release: Any, frame: pd.DataFrame) -> int:
        """Rows per synthetic dataset when ``release.rows`` is not given: n (public)."""
        return len(frame)

    def per_record(self, release: Any) -> dict[str, np.ndarray]:
        """Per-record figures for the report (data holder only)."""
        return {}

    def neighbouring_text(self, release: Any) -> str:
        """The neighbouring relation in words, with the paper's section."""
        return release.privacy_statement.neighbouring

    def composition(self, st: FullySyntheticSettings) -> str:
        """How the stages compose, in words."""
        return "basic: the release's stages add up in epsilon and in delta (Theorem 1)" + M_NOTE

    # ------------------------------------------------------------------ spec
    def parse(self, sections: Mapping[str, Mapping[str, Any]]) -> FullySyntheticSettings:
        mech, bud, rel = sections["mechanism"], sections["budget"], sections["release"]
        opts = dict(sections[self.name])
        if "delta" in mech:
            in_range("mechanism.delta", mech["delta"], 0.0, 1.0, "neither", "1e-6")
        opts = self.check_options(mech, opts)
        for key in ("columns", "features", "categorical", "parents"):
            if key in opts:
                distinct(f"{self.name}.{key}", opts[key])
        st = FullySyntheticSettings(
            epsilon=mech["epsilon"],
            delta=mech.get("delta"),
            options=opts,
            seed=rel["seed"],
            rows=rel.get("rows"),
            target=self.target_of(opts),
        )
        try:
            self.build(st, seed=0)
        except (TypeError, ValueError) as exc:
            raise SpecError(
                f"spec section [{self.name}]: {exc} Fix: correct the [{self.name}] section."
            ) from None
        total_delta = bud.get("total_delta")
        if self.spends_delta(mech, opts) and total_delta is None:
            raise SpecError(
                f"spec key 'budget.total_delta' is missing: a {self.name} release spends delta, "
                "so the dataset needs a lifetime delta. Fix: add total_delta = 1e-4 (say) under "
                "[budget]."
            )
        if st.epsilon > bud["total_epsilon"]:
            raise fail(
                "mechanism.epsilon",
                st.epsilon,
                f"at most budget.total_epsilon = {bud['total_epsilon']}",
                "lower epsilon or raise total_epsilon.",
            )
        if st.delta is not None and total_delta is not None and st.delta > total_delta:
            raise fail(
                "mechanism.delta",
                st.delta,
                f"at most budget.total_delta = {total_delta}",
                "lower delta or raise total_delta.",
            )
        return st

    def cap(self, spec: ReleaseSpec) -> tuple[float, float]:
        """The declared (epsilon, delta), spent once whatever m."""
        return spec.settings.epsilon, spec.settings.delta or 0.0

    # ------------------------------------------------------------------ data
    def check_data(self, spec: ReleaseSpec, frame: pd.DataFrame) -> None:
        """The section's columns (:meth:`check_columns`), then: no missing or non-finite
        values in the released columns, at least 2 rows."""
        opts, path = spec.settings.options, str(spec.data_path)
        self.check_columns(opts, frame)
        used = self.columns_of(opts, frame)
        for c in used:
            if frame[c].isna().any():
                raise SpecError(
                    f"data file {path!r}: column {c!r} has {int(frame[c].isna().sum())} missing "
                    "value(s). Fix: fill or drop them before the release, or leave the column out."
                )
        for c in used:
            s = frame[c]
            if pd.api.types.is_numeric_dtype(s) and not np.isfinite(s.to_numpy(float)).all():
                raise SpecError(
                    f"data file {path!r}: column {c!r} holds non-finite values. Fix: remove them."
                )
        if len(frame) < 2:
            raise SpecError(
                f"data file {path!r} must have at least 2 rows; got {len(frame)}. "
                "Fix: release a larger dataset."
            )

    def resolve(self, spec: ReleaseSpec, frame: pd.DataFrame) -> ReleaseSpec:
        """The released columns, delta (:meth:`default_delta` when not given), the disclosure
        keys (the released columns but the sensitive one) and the sensitive column (the
        target, or the last column)."""
        st = spec.settings
        cols = tuple(self.columns_of(st.options, frame))
        delta = st.delta if st.delta is not None else self.default_delta(len(frame))
        sensitive = spec.disclosure_sensitive or (st.target or cols[-1])
        keys = spec.disclosure_keys or tuple(c for c in cols if c != sensitive)
        return replace(
            spec,
            released=cols,
            settings=replace(st, delta=delta),
            disclosure_keys=keys,
            disclosure_sensitive=sensitive,
        )

    def check_build(self, spec: ReleaseSpec, frame: pd.DataFrame) -> None:
        st = spec.settings
        if st.delta is not None and spec.total_delta is not None and st.delta > spec.total_delta:
            raise fail(
                "mechanism.delta",
                st.delta,
                f"at most budget.total_delta = {spec.total_delta} (delta defaults to 1/n^2)",
                "set mechanism.delta or raise total_delta.",
            )
        try:
            self.check_release(self.build(st, seed=None), spec, frame)
        except (TypeError, ValueError) as exc:
            raise SpecError(
                f"data file {str(spec.data_path)!r}: {exc} Fix: correct the data or the "
                f"[{self.name}] section."
            ) from None

    # ------------------------------------------------------------------ produce
    def fit(self, spec: ReleaseSpec, data: pd.DataFrame, progress: bool | None = None) -> Produced:
        """Fit the release on the released columns, seeded by the first of the m + 1 children
        of ``SeedSequence(release.seed)``."""
        st = spec.settings
        fit_seed = np.random.SeedSequence(st.seed).spawn(spec.m + 1)[0]
        frame = data[spec.columns]
        t0 = time.perf_counter()
        say(f"fitting the {self.name} release (epsilon {st.epsilon:.4g})")
        release = self.fit_release(self.build(st, seed=fit_seed), frame, st, fit_seed)
        timings = {"fit_total": time.perf_counter() - t0}
        rows = st.rows or self.default_rows(release, frame)
        return Produced(release, timings, per_record=self.per_record(release), rows=rows)

    def synthesize(self, spec: ReleaseSpec, produced: Produced) -> list[pd.DataFrame]:
        """m samples of the one release, dataset j seeded by child j + 1."""
        _, *seeds = np.random.SeedSequence(spec.seed).spawn(spec.m + 1)
        return [produced.result.sample(produced.rows, seed=s) for s in seeds]

    # ------------------------------------------------------------------ describe
    def measures(
        self, spec: ReleaseSpec, data: pd.DataFrame, synthetic: list[pd.DataFrame]
    ) -> Measures:
        return fully_synthetic(data, synthetic, target=spec.settings.target, **spec_args(spec))

    def privacy_record(self, spec: ReleaseSpec, produced: Produced) -> dict[str, Any]:
        release, statement = produced.result, produced.statement
        eps, delta = statement.epsilon, statement.delta
        eps_charge, delta_charge = statement.charge(spec.m)
        stages, extra, notes = self.stages(release)
        neighbouring = self.neighbouring_text(release)
        return {
            "description": self.description,
            "epsilon": eps,
            "delta": delta,
            "epsilon_per_dataset": eps,
            "epsilon_total": eps_charge,
            "delta_total": delta_charge,
            "rows_per_dataset": produced.rows,
            "composition": self.composition(spec.settings),
            "guarantee_type": _GUARANTEE[statement.scope],
            "guarantee": f"({eps:.6g}, {delta:.3g})-DP for the whole release, {neighbouring}",
            "neighbouring_relation": neighbouring,
            "stages": stages,
            "notes": notes,
            "mechanism_options": spec.settings.options,
            "budget": {
                "total_epsilon": spec.total_epsilon,
                "total_delta": spec.total_delta,
                "charge": eps_charge,
                "delta_charge": delta_charge,
                "ledger": str(spec.ledger_path),
            },
            **extra,
        }

    def report_parts(
        self, spec: ReleaseSpec, produced: Produced, privacy: Mapping[str, Any]
    ) -> report.ReportParts:
        budget = privacy["budget"]
        total_delta = budget.get("total_delta")
        facts = {
            "mechanism": privacy["description"],
            "epsilon": f"{privacy['epsilon']:.4g}",
            "delta": f"{privacy['delta']:.3g}",
            "guarantee": privacy["guarantee_type"],
            "neighbouring relation": privacy["neighbouring_relation"],
            "synthetic datasets (m)": spec.m,
            "rows per dataset": privacy["rows_per_dataset"],
            "composition": privacy["composition"],
            "budget total epsilon / delta": (
                f"{budget['total_epsilon']:.4g} / "
                + ("not set" if total_delta is None else f"{total_delta:.3g}")
            ),
        }
        stages = pd.DataFrame(
            [
                {k: v for k, v in st.items() if k in ("stage", "epsilon", "delta", "note")}
                for st in privacy["stages"]
            ]
        ).fillna("")
        before = [
            report.note(
                "Fully synthetic data: every released row is drawn from the DP summary below; no "
                "row corresponds to a real record. This page and the evaluation parts of "
                "privacy.json read the confidential data: they are for the data holder."
            ),
            "<h3>Budget per stage</h3>",
            report.table(stages),
            report.stage_bars(privacy["stages"]),
        ]
        if privacy["notes"]:
            before.append(report.warning_box("Assumptions", privacy["notes"]))
        if produced.per_record:
            before += [
                "<h2>Per-record privacy (data holder only)</h2>",
                report.note(
                    "Each record's own epsilon and weight: rare records get low weight and so a "
                    "smaller epsilon than the global bound."
                ),
                *(
                    report.violins({name: values}, name, name.split(" ")[0])
                    for name, values in produced.per_record.items()
                ),
            ]
        return report.ReportParts(facts, before)
