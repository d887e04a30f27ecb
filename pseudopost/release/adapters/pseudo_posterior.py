r"""The pseudo posterior in the release command: spec sections, checks, fit, privacy record.

Spec layout (``examples/fatigue.toml``)::

    [model]
    family = "lognormal"              # normal | lognormal | poisson | negative_binomial
    outcome = "cycle"
    predictors = ["stress"]

    [mechanism]
    name = "pseudo_posterior"
    scale = 1.0                       # c in alpha = clip(c (1 - r) + g, 0, 1)
    shift = 0.0                       # g

    [sampling]
    draws = 500
    tune = 500
    chains = 2
    seed = 2026

    [budget]
    total_epsilon = 200.0             # the dataset's lifetime budget (kept in the ledger)
    max_epsilon = 60.0                # most this release may spend per synthetic dataset

    [frontier]                        # optional: choose (scale, shift) on the frontier, then refit
    scales = [0.25, 0.5, 0.75, 1.0]   # the grid's c (each > 0)
    shifts = [0.0]                    # the grid's g (default: [mechanism.shift])
    choose = "max_utility"            # lowest S_pMSE among settings with estimated epsilon <= max_epsilon
    max_epsilon = 12.0                # the target epsilon per synthetic dataset (<= budget.max_epsilon)
    datasets = 1                      # synthetic datasets per setting for the frontier's S_pMSE
    max_refits = 3                    # settings refitted, best first, before the release is refused

``model.family`` is a name of :data:`pseudopost.models.registry.MODEL_NAMES`; the release
supports the regressions of :attr:`PseudoPosteriorAdapter.families`. The mechanism's
range-restriction, calibration and censoring options are passed to
:class:`~pseudopost.PseudoPosterior`: ``sensitive_range = [a, b]`` (a
:class:`~pseudopost.risk.MultiplicativeRange`, the range :math:`[a x_i, b x_i]` around each
outcome value), ``range_method = "truncated" | "averaged"`` and ``lambda_draws``;
``target_epsilon`` (calibrate the weights to this local epsilon) with ``rtol`` and
``max_refits``; and ``censor_epsilon`` (global DP by censoring; not combinable with the range or
the target). A key the installed PseudoPosterior does not accept is refused with a message
saying so.

The guarantee (the result's :class:`~pseudopost.privacy.PrivacyStatement`) is per synthetic
dataset: the local :math:`\varepsilon_x = 2\max_i\Delta_i` (Savitsky, Williams & Hu 2022,
Theorem 3; range-restricted paper eq. 7), or the global :math:`2B` under censoring (Hu, Williams
& Savitsky 2025), under add/remove neighbours. m datasets from m posterior draws cost
:math:`m\varepsilon` (basic composition), so the pre-check cap is ``m * budget.max_epsilon`` and
a fit whose epsilon exceeds ``max_epsilon`` is refused (:class:`BudgetError`) before any
synthesis. The saved fit (``fit.nc``) lets ``pseudopost account`` recompute epsilon.

With ``[frontier]`` (:mod:`pseudopost.release.frontier`), the fit at ``mechanism.scale`` and
``shift`` is only the first: the frontier over ``scales`` x ``shifts`` is estimated from it, the
rule picks a setting, and the release is made from a refit at that setting, whose accountant's
epsilon is the one released and charged. The frontier publishes no synthetic data and is charged
nothing. Whole-file, REPS, PRISM and entropy releases refuse the section, and so does a
``[mechanism]`` with ``target_epsilon``, ``censor_epsilon`` or ``reweight = true``.
"""

from __future__ import annotations

import html
import inspect
import json
import math
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import xarray as xr

from pseudopost._io import atomic_write
from pseudopost.fitting.columns import part_samplers, samplers_table, samplers_text
from pseudopost.models.registry import LOG_SCALE, MODEL_NAMES
from pseudopost.privacy.statement import PrivacyStatement
from pseudopost.release import report
from pseudopost.release.adapters.base import AccountResult, MechanismAdapter, Produced, require_file
from pseudopost.release.errors import SpecError
from pseudopost.release.files import jsonable, records, say
from pseudopost.release.frontier import (
    FRONTIER_SECTION,
    FrontierSettings,
    candidates,
    parse_frontier,
    rule_text,
)
from pseudopost.release.ledger import BudgetError
from pseudopost.release.measures import Measures, partially_synthetic, spec_args
from pseudopost.release.schema import ReleaseSpec, Schema, choice, distinct, fail

__all__ = ["PseudoPosteriorAdapter", "PseudoPosteriorSettings", "load_fit", "save_fit"]

#: keyword arguments of PseudoPosterior passed through only when the installed version has them
OPTIONAL_KEYS = (
    "sensitive_range",
    "range_method",
    "lambda_draws",
    "target_epsilon",
    "rtol",
    "max_refits",
    "censor_epsilon",
)
_RANGE = "a list [a, b] of two numbers with 0 <= a <= 1 <= b, a < b (range [a*x, b*x])"


def _range(key: str, value: Any) -> tuple[float, float]:
    """A multiplicative sensitive range ``[a, b]``, 0 <= a <= 1 <= b, a < b."""
    ok = (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
        and 0 <= value[0] <= 1 <= value[1]
        and value[0] < value[1]
        and math.isfinite(value[1])
    )
    if not ok:
        raise fail(key, value, _RANGE, f"set '{key}' to {_RANGE}.")
    return float(value[0]), float(value[1])


_range.expected = _RANGE  # type: ignore[attr-defined]


@dataclass(frozen=True)
class PseudoPosteriorSettings:
    """The ``[model]``, ``[mechanism]`` and ``[sampling]`` sections and the per-dataset cap."""

    family: str
    outcome: str
    predictors: tuple[str, ...]
    prior_scale: float | None
    options: dict[str, Any]
    draws: int
    tune: int
    chains: int
    seed: int
    sampler: str
    max_epsilon: float
    frontier: FrontierSettings | None = None


@dataclass
class FrontierProduced(Produced):
    """A pseudo posterior release with ``[frontier]``: ``result`` is the refit at the chosen
    setting; ``frontier`` holds the first fit's setting and epsilon, the frontier's rows
    (``curve``), the rule, the chosen row and every refit tried (``attempts``)."""

    frontier: dict[str, Any] = field(default_factory=dict)


class PseudoPosteriorAdapter(MechanismAdapter):
    """The risk-weighted pseudo posterior (module docstring)."""

    name = "pseudo_posterior"
    #: the model families the release supports today (names of MODEL_NAMES): the regressions
    #: of one outcome on numeric predictors whose accountant and utility measures it knows
    families: ClassVar[tuple[str, ...]] = ("normal", "lognormal", "poisson", "negative_binomial")
    sections: ClassVar[Mapping[str, Schema]] = {
        "model": {
            "family": (True, "str"),
            "outcome": (True, "str"),
            "predictors": (False, "list[str]"),
            "prior_scale": (False, "posfloat"),
        },
        "mechanism": {
            "name": (True, "str"),
            "scale": (False, "nonnegfloat"),
            "shift": (False, "float"),
            "normalisation": (False, "str"),
            "reweight": (False, "bool"),
            "exclude_quantile": (False, "float"),
            "sensitive_range": (False, _range),
            "range_method": (False, "str"),
            "lambda_draws": (False, "posint"),
            "target_epsilon": (False, "posfloat"),
            "rtol": (False, "posfloat"),
            "max_refits": (False, "posint"),
            "censor_epsilon": (False, "posfloat"),
        },
        "sampling": {
            "draws": (False, "posint"),
            "tune": (False, "nonnegint"),
            "chains": (False, "posint"),
            "seed": (True, "nonnegint"),
            "sampler": (False, "str"),
        },
        "frontier": FRONTIER_SECTION,
    }
    required = ("model", "mechanism", "sampling")
    budget_keys: ClassVar[Schema] = {"max_epsilon": (True, "posfloat")}
    hints: ClassVar[Mapping[str, str]] = {
        "release.seed": "the pseudo posterior's seed goes under [sampling]",
        "release.rows": "the pseudo posterior synthesizes one row per record",
    }

    # ------------------------------------------------------------------ spec
    def parse(self, sections: Mapping[str, Mapping[str, Any]]) -> PseudoPosteriorSettings:
        model, smp = sections["model"], sections["sampling"]
        family = choice("model.family", model["family"], MODEL_NAMES)
        if family not in self.families:
            raise fail(
                "model.family",
                family,
                f"a family the pseudo posterior release supports {list(self.families)}",
                "choose one of them, or run pseudopost.synthesize for other models.",
            )
        predictors = tuple(model.get("predictors", ()))
        outcome = model["outcome"]
        if outcome in predictors:
            raise fail(
                "model.predictors",
                list(predictors),
                f"columns other than the outcome {outcome!r}",
                f"remove {outcome!r} from predictors.",
            )
        distinct("model.predictors", list(predictors))
        options = _mechanism_options(sections["mechanism"])
        sampler = choice("sampling.sampler", smp.get("sampler", "nutpie"), ("nutpie", "pymc"))
        m = sections["release"].get("m", 1)
        draws, chains = smp.get("draws", 1000), smp.get("chains", 2)
        capacity = int(draws * chains * options.get("exclude_quantile", 1.0) + 1e-9)
        if m > capacity:
            raise fail(
                "release.m",
                m,
                f"at most the {capacity} kept posterior draws (draws x chains x exclude_quantile)",
                "lower release.m or raise sampling.draws.",
            )
        bud = sections["budget"]
        if bud["max_epsilon"] * m > bud["total_epsilon"]:
            raise fail(
                "budget.max_epsilon",
                bud["max_epsilon"],
                f"m x max_epsilon <= budget.total_epsilon = {bud['total_epsilon']} (m = {m})",
                "raise total_epsilon, lower max_epsilon or release fewer datasets.",
            )
        for key in ("target_epsilon", "censor_epsilon"):
            value = options.get(key)
            if value is not None and value > bud["max_epsilon"]:
                raise fail(
                    f"mechanism.{key}",
                    value,
                    f"at most budget.max_epsilon = {bud['max_epsilon']}",
                    f"lower {key} or raise max_epsilon.",
                )
        frontier = parse_frontier(sections, options, draws * chains)
        return PseudoPosteriorSettings(
            family=family,
            outcome=outcome,
            predictors=predictors,
            prior_scale=model.get("prior_scale"),
            options=options,
            draws=draws,
            tune=smp.get("tune", draws),
            chains=chains,
            seed=smp["seed"],
            sampler=sampler,
            max_epsilon=bud["max_epsilon"],
            frontier=frontier,
        )

    def cap(self, spec: ReleaseSpec) -> tuple[float, float]:
        """``m * max_epsilon`` (each dataset costs its own epsilon) and no delta; with
        ``[frontier]``, ``m * frontier.max_epsilon`` (a release above that target is refused
        before any output, :meth:`fit_frontier`)."""
        st = spec.settings
        target = st.max_epsilon if st.frontier is None else st.frontier.max_epsilon
        return spec.m * target, 0.0

    def describe(self, spec: ReleaseSpec) -> str:
        return f"{spec.settings.family} model of {spec.settings.outcome!r}"

    # ------------------------------------------------------------------ data
    def check_data(self, spec: ReleaseSpec, frame: pd.DataFrame) -> None:
        st = spec.settings
        for col in (*st.predictors, st.outcome):
            if col not in frame.columns:
                key = "model.outcome" if col == st.outcome else "model.predictors"
                raise fail(
                    key,
                    col,
                    f"a column of {spec.data_path.name} (columns: {list(frame.columns)})",
                    "correct the column name.",
                )

    def resolve(self, spec: ReleaseSpec, frame: pd.DataFrame) -> ReleaseSpec:
        """The model's columns; disclosure keys default to the predictors, the sensitive
        column to the outcome."""
        st = spec.settings
        return replace(
            spec,
            released=(*st.predictors, st.outcome),
            disclosure_keys=spec.disclosure_keys or st.predictors,
            disclosure_sensitive=spec.disclosure_sensitive or st.outcome,
        )

    def check_build(self, spec: ReleaseSpec, frame: pd.DataFrame) -> None:
        try:
            self.build_mechanism(spec.settings).model.prepare(frame)
        except (TypeError, ValueError) as exc:
            raise SpecError(
                f"data file {str(spec.data_path)!r}: {exc} Fix: correct the data or the [model] "
                "section."
            ) from None

    def build_model(self, st: PseudoPosteriorSettings):
        """The ready model named by ``model.family``."""
        kwargs = {} if st.prior_scale is None else {"prior_scale": st.prior_scale}
        return MODEL_NAMES[st.family](st.outcome, list(st.predictors), **kwargs)

    def build_mechanism(self, st: PseudoPosteriorSettings):
        """The :class:`~pseudopost.PseudoPosterior` described by ``[mechanism]``."""
        from pseudopost.mechanisms.pseudo_posterior.core import PseudoPosterior

        options = dict(st.options)
        if "sensitive_range" in options:
            from pseudopost.risk.ranges import MultiplicativeRange

            options["sensitive_range"] = MultiplicativeRange(*options["sensitive_range"])
        return PseudoPosterior(self.build_model(st), sampler=st.sampler, **options)

    # ------------------------------------------------------------------ produce
    def fit(self, spec: ReleaseSpec, data: pd.DataFrame, progress: bool | None = None) -> Produced:
        """The fit, seeded by the first of two children of ``SeedSequence(sampling.seed)``.
        With ``[frontier]``: that fit is the first; the release's result is the refit at the
        setting the rule chose (:meth:`fit_frontier`)."""
        st = spec.settings
        frame = self.fit_frame(spec, data)
        t0 = time.perf_counter()
        say(f"fitting {self.fitting_what} ({st.chains} chains x {st.draws} draws)")
        fit_seed, _ = np.random.SeedSequence(st.seed).spawn(2)
        result, problems = self._sampled(self.mechanism_for(spec), frame, st, fit_seed, progress)
        timings = {"fit_total": time.perf_counter() - t0}
        timings.update({f"fit_{k}": v for k, v in result.timings.items()})
        produced = Produced(result, timings, warnings=problems, rows=len(frame))
        if getattr(st, "frontier", None) is None:
            return produced
        return self.fit_frontier(spec, frame, produced, fit_seed, progress)

    def _sampled(self, mechanism, frame, st, fit_seed, progress):
        """``mechanism.fit`` on ``frame`` with the spec's sampling, and its sampler warnings."""
        from pseudopost.fitting.sampler import SamplingWarning

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SamplingWarning)
            result = mechanism.fit(
                frame,
                draws=st.draws,
                tune=st.tune,
                chains=st.chains,
                seed=np.random.default_rng(fit_seed),
                progress=progress,
            )
        problems = [str(w.message) for w in caught if issubclass(w.category, SamplingWarning)]
        for p in problems:
            say(f"warning: {p}")
        return result, problems

    def fit_frontier(
        self,
        spec: ReleaseSpec,
        frame: pd.DataFrame,
        first: Produced,
        fit_seed: np.random.SeedSequence,
        progress: bool | None = None,
    ) -> FrontierProduced:
        """The ``[frontier]`` steps after the first fit (:mod:`pseudopost.release.frontier`):
        the frontier (seeded by the third child of ``SeedSequence(sampling.seed)``), the rule,
        and refits at the chosen settings, best first, with the first fit's seed, until one's
        epsilon is within ``frontier.max_epsilon``. Raises :class:`BudgetError` (nothing
        written) when no row qualifies or no refit stays within the target.

        The frontier publishes no synthetic data and is charged nothing: the release charges
        the refit's accountant epsilon per synthetic dataset, as any pseudo posterior release.
        The choice read the confidential data and is covered only as the local epsilon is (the
        weights are data-dependent anyway)."""
        from pseudopost.evaluate.frontier import frontier
        from pseudopost.fitting.sampler import SamplingWarning
        from pseudopost.risk.weights import risk_summary, weights_from_risk

        st, fs = spec.settings, spec.settings.frontier
        first_result = first.result
        t0 = time.perf_counter()
        say(
            f"frontier: {len(fs.grid)} settings estimated from the fit at scale "
            f"{float(first_result.datatree['privacy'].attrs['scale']):g}, shift "
            f"{float(first_result.datatree['privacy'].attrs['shift']):g} "
            f"(first fit's epsilon {first_result.epsilon:.4g})"
        )
        keys, target = _frontier_keys(spec)
        frontier_seed = np.random.SeedSequence(st.seed).spawn(3)[2]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", SamplingWarning)
            curve = frontier(
                first_result,
                list(fs.scales),
                list(fs.shifts),
                data=frame,
                datasets=fs.datasets,
                keys=keys,
                target=target,
                tune=st.tune,
                seed=np.random.default_rng(frontier_seed),
            )
        problems = list(first.warnings)
        problems += [f"frontier refit: {w.message}" for w in caught
                     if issubclass(w.category, SamplingWarning)]  # fmt: skip
        timings = dict(first.timings, frontier=time.perf_counter() - t0)
        order = candidates(curve, fs)
        record: dict[str, Any] = {
            "rule": fs.choose,
            "rule_text": rule_text(fs),
            "max_epsilon": fs.max_epsilon,
            "scales": list(fs.scales),
            "shifts": list(fs.shifts),
            "datasets": fs.datasets,
            "max_refits": fs.max_refits,
            "first_fit": {
                "scale": float(first_result.datatree["privacy"].attrs["scale"]),
                "shift": float(first_result.datatree["privacy"].attrs["shift"]),
                "epsilon": first_result.epsilon,
            },
            "curve": curve,
            "qualifying_rows": order,
            "attempts": [],
        }
        if not order:
            best = curve["epsilon"].idxmin() if curve["epsilon"].notna().any() else None
            lowest = "" if best is None else (
                f" (the lowest estimate is {curve.at[best, 'epsilon']:.4g}, at scale "
                f"{curve.at[best, 'scale']:g}, shift {curve.at[best, 'shift']:g})"
            )  # fmt: skip
            raise BudgetError(
                f"budget refused: no setting of the frontier has an estimated epsilon <= "
                f"frontier.max_epsilon = {fs.max_epsilon:.6g}{lowest}; nothing was written and "
                "the ledger is unchanged. Fix: add smaller values to frontier.scales or "
                "frontier.shifts, or raise frontier.max_epsilon."
            )
        summary = risk_summary(first_result.risk.to_numpy(), str(
            first_result.datatree["privacy"].attrs["normalisation"]))  # fmt: skip
        chosen, seconds = None, []
        for row in order[: fs.max_refits]:
            c, g = float(curve.at[row, "scale"]), float(curve.at[row, "shift"])
            say(
                f"frontier: refitting at scale {c:g}, shift {g:g} (estimated epsilon "
                f"{curve.at[row, 'epsilon']:.4g}, S_pMSE {curve.at[row, 'S_pMSE']:.4g})"
            )
            t1 = time.perf_counter()
            mech = self.build_mechanism(replace(st, options={**st.options, "scale": c, "shift": g}))
            refit, more = self._sampled(mech, frame, st, fit_seed, progress)
            expected = weights_from_risk(first_result.risk.to_numpy(), summary, c, g)
            attempt = {
                "row": row,
                "scale": c,
                "shift": g,
                "estimated_epsilon": float(curve.at[row, "epsilon"]),
                "estimated_S_pMSE": float(curve.at[row, "S_pMSE"]),
                "method": str(curve.at[row, "method"]),
                "khat": float(curve.at[row, "khat"]),
                "refit_epsilon": refit.epsilon,
                "weights_max_abs_difference": float(
                    np.max(np.abs(refit.alpha.to_numpy() - expected))
                ),
                "within_target": bool(refit.epsilon <= fs.max_epsilon),
            }
            seconds.append(time.perf_counter() - t1)
            record["attempts"].append(attempt)
            problems += more
            if attempt["within_target"]:
                chosen = (refit, attempt)
                break
            say(f"frontier: the refit's epsilon {refit.epsilon:.4g} exceeds the target")
        timings["refit_total"] = sum(seconds)
        if chosen is None:
            tried = "; ".join(
                f"scale {a['scale']:g}, shift {a['shift']:g}: estimated "
                f"{a['estimated_epsilon']:.4g}, refit {a['refit_epsilon']:.4g}"
                for a in record["attempts"]
            )
            raise BudgetError(
                f"budget refused: no refit at the settings the rule chose stays within "
                f"frontier.max_epsilon = {fs.max_epsilon:.6g} ({tried}); nothing was written and "
                "the ledger is unchanged. Fix: raise frontier.max_refits or frontier.max_epsilon, "
                "or sampling.draws (PSIS estimates are closer with more draws)."
            )
        refit, attempt = chosen
        if attempt["weights_max_abs_difference"] > 1e-9:
            problems.append(
                "the refit's weights differ from the frontier's at the chosen setting by up to "
                f"{attempt['weights_max_abs_difference']:.3g} (its unweighted fit did not repeat "
                "the first fit's); its epsilon is its own accountant's either way"
            )
        record["chosen"] = attempt
        say(
            f"frontier: chose scale {attempt['scale']:g}, shift {attempt['shift']:g}; "
            f"estimated epsilon {attempt['estimated_epsilon']:.4g}, refit's "
            f"{refit.epsilon:.4g}"
        )
        timings.update({f"refit_{k}": v for k, v in refit.timings.items()})
        return FrontierProduced(refit, timings, warnings=problems, rows=first.rows,
                                frontier=record)  # fmt: skip

    #: what :meth:`fit` says it fits
    fitting_what = "the pseudo posterior"

    def fit_frame(self, spec: ReleaseSpec, data: pd.DataFrame) -> pd.DataFrame:
        """The frame the mechanism is fitted on (the data as given)."""
        return data

    def mechanism_for(self, spec: ReleaseSpec):
        """The unfitted mechanism of the spec."""
        return self.build_mechanism(spec.settings)

    def synthesize(self, spec: ReleaseSpec, produced: Produced) -> list[pd.DataFrame]:
        """m datasets under m distinct posterior draws, seeded by the second child."""
        _, synth_seed = np.random.SeedSequence(spec.seed).spawn(2)
        return produced.result.synthesize_datasets(spec.m, seed=np.random.default_rng(synth_seed))

    def over_cap(self, spec: ReleaseSpec, statement: PrivacyStatement) -> Exception:
        return BudgetError(
            f"budget refused: the fit's epsilon {statement.epsilon:.6g} exceeds "
            f"budget.max_epsilon = {spec.settings.max_epsilon:.6g}; nothing was written and "
            "the ledger is unchanged. Fix: lower mechanism.scale/shift (smaller weights) or "
            "raise budget.max_epsilon."
        )

    # ------------------------------------------------------------------ describe
    def measures(
        self, spec: ReleaseSpec, data: pd.DataFrame, synthetic: list[pd.DataFrame]
    ) -> Measures:
        st = spec.settings
        return partially_synthetic(
            data,
            synthetic,
            outcome=st.outcome,
            predictors=st.predictors,
            log_outcome=st.family in LOG_SCALE,
            **spec_args(spec),
        )

    def privacy_record(self, spec: ReleaseSpec, produced: Produced) -> dict[str, Any]:
        result, statement = produced.result, produced.statement
        attrs = jsonable(dict(result.datatree["privacy"].attrs))
        eps = statement.epsilon
        charge = statement.charge(spec.m)[0]
        decomposition = attrs.get("decomposition", "weighted")
        chosen = produced.frontier if isinstance(produced, FrontierProduced) else None
        stages = _stages(attrs, decomposition, eps, spec.m, charge)
        extra: dict[str, Any] = {}
        if chosen is not None:
            stages.insert(1, _FRONTIER_STAGE)
            extra["frontier"] = _frontier_record(chosen, eps)
        return {
            "description": attrs.get("mechanism"),
            "decomposition": decomposition,
            "epsilon_per_dataset": eps,
            "local_epsilon": result.epsilon,
            "global_epsilon": result.global_epsilon,
            "epsilon_total": charge,
            "composition": "basic: m synthetic datasets from m posterior draws cost m x epsilon",
            "delta": None,
            "delta_note": "pure epsilon: the pseudo posterior mechanism has no delta",
            "guarantee_type": _GUARANTEE_TYPE[statement.scope],
            "guarantee": str(attrs.get("guarantee", "")),
            "neighbouring_relation": str(attrs.get("neighbouring_relation", "")),
            "unweighted_epsilon": result.unweighted_epsilon,
            "units": str(attrs.get("units", "")),
            "sensitive_range": _parsed(attrs, "sensitive_range"),
            "calibration": _parsed(attrs, "calibration"),
            "stages": stages,
            "lipschitz": {
                "max": float(result.lipschitz.max()),
                "median": float(result.lipschitz.median()),
            },
            "weights": {
                "min": float(result.alpha.min()),
                "mean": float(result.alpha.mean()),
                "max": float(result.alpha.max()),
            },
            "mechanism_options": spec.settings.options,
            "mechanism_attrs": attrs,
            "budget": {
                "total_epsilon": spec.total_epsilon,
                "max_epsilon": spec.settings.max_epsilon,
                "charge": charge,
                "ledger": str(spec.ledger_path),
            },
            "diagnostics": {k: _diagnostics(d) for k, d in result.diagnostics.items()},
            **_parts_drawn(result.datatree),
            **extra,
        }

    def report_title(self, spec: ReleaseSpec) -> str:
        st = spec.settings
        return f"pseudopost release: {spec.data_path.name} ({st.family} model of {st.outcome})"

    def report_parts(
        self, spec: ReleaseSpec, produced: Produced, privacy: Mapping[str, Any]
    ) -> report.ReportParts:
        result = produced.result
        budget = privacy["budget"]
        facts = {
            "epsilon per synthetic dataset": f"{privacy['epsilon_per_dataset']:.4g}",
            "synthetic datasets (m)": spec.m,
            "epsilon charged (m x epsilon, basic composition)": f"{privacy['epsilon_total']:.4g}",
            "delta": "none (pure epsilon)",
            "guarantee": privacy["guarantee_type"],
            "accountant": privacy["decomposition"],
            "sensitive range": _describe_range(privacy["sensitive_range"]),
            "neighbouring relation": privacy["neighbouring_relation"],
            "unweighted epsilon (no weighting)": f"{privacy['unweighted_epsilon']:.4g}",
            "budget total / cap per dataset": (
                f"{budget['total_epsilon']:.4g} / {budget['max_epsilon']:.4g}"
            ),
        }
        before = [
            report.note(f"{privacy['guarantee']}. {privacy['units']}."),
            "<h2>By-record Lipschitz bounds and weights</h2>",
            report.note(
                "Each dot is one record. epsilon = 2 x the largest bound. Records with high risk "
                "get low weight alpha, which lowers their bound."
            ),
            report.violins(
                {
                    "released (weighted)": result.lipschitz.to_numpy(),
                    "unweighted, no range": result.unweighted_lipschitz.to_numpy(),
                },
                "Lipschitz bound per record",
                "Delta_i",
            ),
            report.violins({"alpha": result.alpha.to_numpy()}, "Record weights", "alpha_i"),
        ]
        if isinstance(produced, FrontierProduced):
            facts.update(_frontier_facts(privacy["frontier"]))
            before += _frontier_section(produced.frontier, privacy["frontier"])
        from pseudopost._cards import diagnostics_verdict

        after = [
            "<h2>Sampler diagnostics</h2>",
            report.note("Per fit, the verdict over its parameters; open a fit for its table "
                        "(parameters named by their predictors and levels)."),
        ]  # fmt: skip
        for fit, d in result.diagnostics.items():
            problems = list(d.problems()) if hasattr(d, "problems") else []
            inner = report.warning_box("Problems", problems) if problems else ""
            after.append(
                f"<details><summary><b>{html.escape(str(fit))} fit</b>: "
                f"{html.escape(diagnostics_verdict({fit: d}))}</summary>"
                f"{inner}{report.table(d.table)}</details>"
            )
        drawn = samplers_table(result.datatree)
        if drawn is not None:
            after.append(
                "<details><summary><b>How each part was drawn</b>: "
                f"{html.escape(samplers_text(part_samplers(result.datatree)))}</summary>"
                + report.note(
                    "exact: conjugate draws; laplace / split-normal: the risk step's "
                    "approximate draws; imh: independence Metropolis-Hastings; nuts twice: its "
                    "first run had not mixed (nuts twice unmixed: nor had the second, see the "
                    "sampler warnings); nuts unmixed: the risk step kept a run that had not "
                    "mixed. The weighted fit's draws (exact, imh, nuts) are what the "
                    "accountant reads."
                )
                + f"{report.table(drawn)}</details>"
            )
        return report.ReportParts(facts, before, after, produced.warnings, "Sampler warnings")

    def write_files(self, stage: Path, spec: ReleaseSpec, produced: Produced) -> list[str]:
        """``fit.nc``: the result's DataTree (netCDF4 via h5netcdf), for ``account``."""
        atomic_write(stage / "fit.nc", lambda p: save_fit(produced.result.datatree, p))
        return ["fit.nc"]

    # ------------------------------------------------------------------ re-account
    def check_accountable(self, folder: Path) -> None:
        require_file(folder, "fit.nc")

    def account(self, folder: Path, spec: ReleaseSpec, data: pd.DataFrame) -> AccountResult:
        r"""Recompute the local epsilon: :math:`\varepsilon = 2\max_i c_i \max_m
        |g_{\theta_m}(x_i)|` (:math:`c = \alpha`, :math:`g = f` for the plain mechanism; the
        range-truncated, range-averaged and censored splits of
        :mod:`pseudopost.privacy.decomposition` otherwise). The model is rebuilt from the spec
        and the data; the weighted draws (kept draws only), weights, ranges and lambda come
        from ``fit.nc``."""
        from pseudopost.models.loglik import RecordFunction
        from pseudopost.privacy.accountant import account, sensitive_function

        tree = load_fit(folder / "fit.nc")
        model = self.build_model(spec.settings)
        prepared = model.prepare(data)
        base = model.build(prepared)
        decomp = _decomposition(tree)
        alpha = tree["weights"]["alpha"].to_numpy()
        sens = sensitive_function(decomp, model, base, RecordFunction(base, model.observed))
        free = [rv.name for rv in base.free_RVs]
        acc = account(sens, kept_draws(tree, free), alpha, decomp)
        return AccountResult(acc.epsilon, float(tree["privacy"].attrs["epsilon"]), acc.lipschitz)


def _frontier_keys(spec: ReleaseSpec) -> tuple[list[str] | None, str | None]:
    """The frontier's repU/DiSCO keys and target: the disclosure keys and sensitive column
    (default the predictors and the outcome), or none when they do not make a pair."""
    keys, target = list(spec.disclosure_keys), spec.disclosure_sensitive or None
    if not keys or target is None or target in keys:
        return None, None
    return keys, target


_GUARANTEE_TYPE = {
    "local": "local asymptotic (epsilon_x of this database; not a worst-case guarantee)",
    "global": "global (non-asymptotic) epsilon-DP by censoring, given the weights",
    "global given the weights": "global (non-asymptotic) epsilon-DP by censoring, given the "
    "weights",
}


def _mechanism_options(mech: Mapping[str, Any]) -> dict[str, Any]:
    """The PseudoPosterior keyword arguments of ``[mechanism]``, checked together."""
    options: dict[str, Any] = {}
    for key in ("scale", "shift", "normalisation", "reweight", "exclude_quantile"):
        if key in mech:
            options[key] = mech[key]
    if "normalisation" in options:
        choice("mechanism.normalisation", options["normalisation"], ("linear", "logistic"))
    q = options.get("exclude_quantile")
    if q is not None and not 0 < q <= 1:
        raise fail("mechanism.exclude_quantile", q, "a number in (0, 1]", "e.g. 0.95.")
    wanted = [k for k in OPTIONAL_KEYS if k in mech]
    if wanted:
        from pseudopost.mechanisms.pseudo_posterior.core import PseudoPosterior

        accepted = inspect.signature(PseudoPosterior).parameters
        for key in wanted:
            if key not in accepted:
                raise fail(
                    f"mechanism.{key}",
                    mech[key],
                    "a key this installed PseudoPosterior accepts",
                    f"remove '{key}' or upgrade pseudopost.",
                )
            options[key] = mech[key]
    if "rtol" in options and not options["rtol"] < 1:
        raise fail("mechanism.rtol", options["rtol"], "a number in (0, 1)", "e.g. 0.05.")
    for key, needs in (
        ("range_method", "sensitive_range"),
        ("lambda_draws", "sensitive_range"),
        ("rtol", "target_epsilon"),
        ("max_refits", "target_epsilon"),
    ):
        if key in options and needs not in options:
            raise SpecError(
                f"spec key 'mechanism.{key}' needs 'mechanism.{needs}'. "
                f"Fix: add {needs} or remove {key}."
            )
    if "range_method" in options:
        choice("mechanism.range_method", options["range_method"], ("truncated", "averaged"))
    if "censor_epsilon" in options and (
        "sensitive_range" in options or "target_epsilon" in options
    ):
        raise SpecError(
            "spec key 'mechanism.censor_epsilon' sets a global epsilon directly and cannot be "
            "combined with 'sensitive_range' or 'target_epsilon'. Fix: keep one of them."
        )
    return options


#: the frontier's stage of privacy.json's stages
_FRONTIER_STAGE = {
    "stage": "risk-utility frontier and the choice of (scale, shift) by the rule",
    "epsilon": 0.0,
    "note": "reads the confidential data (PSIS on the first fit's draws, refits where k-hat >= "
    "0.7) and publishes no synthetic data, so it is charged nothing; the choice is covered only "
    "as the local epsilon is (the weights are data-dependent anyway). The release is a refit at "
    "the chosen setting, whose accountant's epsilon is released and charged",
}
#: what privacy.json and the report say of the frontier's coverage
FRONTIER_COVERAGE = (
    "The setting was chosen by reading the confidential data (the frontier's estimates are "
    "computed from them), so the choice is covered only as the local epsilon is: a statement "
    "about this database and its add/remove-one neighbours, given the weights, which are "
    "data-dependent anyway. The frontier publishes no synthetic data and is charged nothing; the "
    "release charges the refit's epsilon per synthetic dataset. Its table, like the utility and "
    "disclosure tables, is a statistic of the confidential data covered by no epsilon."
)


def _frontier_facts(fr: Mapping[str, Any]) -> dict[str, str]:
    """The privacy table's rows of a frontier release."""
    c = fr["chosen"]
    return {
        "weight setting (chosen on the frontier)": f"scale {c['scale']:g}, shift {c['shift']:g}",
        "rule": fr["rule_text"],
        "epsilon: frontier estimate / refit (released)": (
            f"{c['estimated_epsilon']:.4g} ({c['method']}) / {fr['released_epsilon']:.4g}"
        ),
    }


def _frontier_section(fr: Mapping[str, Any], saved: Mapping[str, Any]) -> list[str]:
    """The report's frontier section: the rule, the plot, the rows and the refits."""
    curve = fr["curve"].copy()
    chosen = int(fr["chosen"]["row"])
    curve.insert(0, "chosen", ["yes" if j == chosen else "" for j in range(len(curve))])
    curve.insert(1, "qualifies", ["yes" if j in fr["qualifying_rows"] else ""
                                  for j in range(len(curve))])  # fmt: skip
    refits = pd.DataFrame(fr["attempts"]).drop(columns=["row"])
    first = fr["first_fit"]
    return [
        "<h2>Risk-utility frontier and the chosen setting</h2>",
        report.note(
            f"Estimated from the first fit (scale {first['scale']:g}, shift {first['shift']:g}, "
            f"epsilon {first['epsilon']:.4g}) by Pareto-smoothed importance sampling where k-hat "
            f"< {saved['khat_max']}, by refits otherwise (squares). Rule: {fr['rule_text']}. The "
            "release is a refit at the chosen setting; its epsilon is the refit's accountant's, "
            "not the estimate."
        ),
        report.frontier_figure(fr["curve"], fr["max_epsilon"], chosen),
        report.table(curve),
        report.note(
            "Refits at the settings the rule chose, best first, until one's epsilon is "
            "within the target:"
        ),
        report.table(refits),
        report.note(FRONTIER_COVERAGE),
    ]


_CHOSEN_KEYS = ("row", "scale", "shift", "estimated_epsilon", "estimated_S_pMSE", "method", "khat")


def _frontier_record(fr: Mapping[str, Any], released: float) -> dict[str, Any]:
    """``privacy.json``'s ``frontier``: the rule, the rows, the choice and every refit."""
    curve = fr["curve"]
    return {
        "rule": fr["rule"],
        "rule_text": fr["rule_text"],
        "max_epsilon": fr["max_epsilon"],
        "scales": fr["scales"],
        "shifts": fr["shifts"],
        "datasets_per_setting": fr["datasets"],
        "max_refits": fr["max_refits"],
        "first_fit": fr["first_fit"],
        "rows": records(curve),
        "khat_max": curve.attrs.get("khat_max"),
        "qualifying_rows": fr["qualifying_rows"],
        "refits": fr["attempts"],
        "chosen": {k: fr["chosen"][k] for k in _CHOSEN_KEYS},
        "released_epsilon": released,
        "released_epsilon_source": "the accountant on the refit at the chosen setting (not the "
        "frontier's PSIS estimate)",
        "coverage": FRONTIER_COVERAGE,
    }


def _stages(
    attrs: Mapping[str, Any], decomposition: str, eps: float, m: int, charge: float
) -> list[dict[str, Any]]:
    stages = [
        {
            "stage": "unweighted fit, risk and weights",
            "epsilon": 0.0,
            "note": "uses the data; covered only through the accountant of the weighted fit "
            "(the papers' convention), not by a separate budget",
        }
    ]
    if decomposition == "averaged":
        stages.append(
            {
                "stage": "range-averaged inclusion probabilities lambda_i",
                "epsilon": 0.0,
                "note": "posterior-predictive averages over data sets (a relaxation, paper "
                "section 2); covered by the range-averaged accountant",
            }
        )
    if "calibration" in attrs:
        stages.append(
            {
                "stage": "calibration of the weight scale to target_epsilon",
                "epsilon": 0.0,
                "note": "importance reweighting and refits; the final fit is accounted",
            }
        )
    return [
        *stages,
        {"stage": "weighted pseudo posterior, per synthetic dataset", "epsilon": eps},
        {"stage": f"release of m = {m} datasets", "epsilon": charge},
    ]


def _parsed(attrs: Mapping[str, Any], key: str) -> Any:
    value = attrs.get(key)
    return json.loads(value) if isinstance(value, str) else value


def _describe_range(described: Mapping[str, Any] | None) -> str:
    if not described:
        return "none declared"
    rest = ", ".join(f"{k} = {v}" for k, v in described.items() if k != "kind")
    return f"{described.get('kind', 'range')} ({rest})"


def _parts_drawn(tree: xr.DataTree) -> dict[str, Any]:
    """``{"parts_drawn": {"weighted": {part: sampler}, "risk": {...}}}`` for a fit of column
    parts, else nothing (seconds left out: the file is the same for the same seed)."""
    out = {
        fit: {k: how for k, (how, _) in part_samplers(tree, group).items()}
        for fit, group in (("weighted", "sample_stats"), ("risk", "risk_sample_stats"))
    }
    return {"parts_drawn": out} if out["weighted"] else {}


def _diagnostics(diag) -> dict[str, Any]:
    t = diag.table
    return {
        "divergences": diag.divergences,
        "draws": diag.draws,
        "max_r_hat": float(t.r_hat.max()),
        "min_ess_bulk": float(t.ess_bulk.min()),
        "min_ess_tail": float(t.ess_tail.min()),
        "problems": diag.problems(),
        "by_parameter": t.to_dict(orient="records"),
    }


def _netcdf_attr(value: Any) -> Any:
    """An attribute netCDF can hold: a bool as 0/1 (a Laplace draw's ``laplace_resampled``),
    a sequence of bools as 0/1s, None as ''."""
    if value is None:
        return ""
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, list | tuple | np.ndarray) and any(
        isinstance(v, bool | np.bool_) for v in np.ravel(np.asarray(value, dtype=object))
    ):
        return np.asarray(value, dtype=np.int8)
    return value


def save_fit(tree: xr.DataTree, path: str | Path) -> None:
    """The DataTree as netCDF4 (h5netcdf). Object-dtype variables (e.g. nutpie's
    ``divergence_message``, mostly None) are stored as strings, None as ''; boolean and None
    attributes as netCDF can hold them (:func:`_netcdf_attr`)."""
    groups = {}
    for node in tree.subtree:
        ds = node.to_dataset().copy()  # new variables: the tree's attributes stay as they are
        ds.attrs = {k: _netcdf_attr(v) for k, v in ds.attrs.items()}
        for var in ds.variables.values():
            var.attrs = {k: _netcdf_attr(v) for k, v in var.attrs.items()}
        for name, var in ds.data_vars.items():
            if var.dtype == object:
                ds[name] = var.copy(
                    data=np.vectorize(lambda v: "" if v is None else str(v), otypes=[str])(
                        var.to_numpy()
                    )
                )
        groups[node.path] = ds
    xr.DataTree.from_dict(groups).to_netcdf(path, engine="h5netcdf")


def kept_draws(tree: xr.DataTree, names) -> dict[str, np.ndarray]:
    """The saved weighted draws of ``names`` that the accountant kept, flattened over chains."""
    from pseudopost.models.loglik import stack_draws

    draws = stack_draws(tree["posterior"].to_dataset(), names)
    kept = tree["privacy"]["draw_kept"].transpose("chain", "draw").to_numpy().ravel()
    return {k: v[kept] for k, v in draws.items()}


def load_fit(path: str | Path) -> xr.DataTree:
    """A fit saved by :func:`save_fit`, loaded into memory."""
    return xr.open_datatree(path, engine="h5netcdf").load()


def _decomposition(tree: xr.DataTree):
    """The accountant's public/sensitive split, rebuilt from the saved fit."""
    from pseudopost.privacy.decomposition import (
        Censored,
        RangeAveraged,
        RangeTruncated,
        Unrestricted,
    )

    attrs = tree["privacy"].attrs
    name = attrs.get("decomposition", "weighted")
    if name == "truncated":
        priv = tree["privacy"]
        return RangeTruncated(priv["range_lower"].to_numpy(), priv["range_upper"].to_numpy())
    if name == "averaged":
        return RangeAveraged(tree["weights"]["lambda"].to_numpy())
    if name == "censored":
        return Censored(float(attrs["global_epsilon"]) / 2.0)
    return Unrestricted()
