r"""What a pseudo posterior fit returns, and the privacy statement it carries.

A fit's :class:`xarray.DataTree` holds everything: both posteriors (``posterior``,
``risk_posterior``, their ``sample_stats``), the accountant's figures and the guarantee in the
``privacy`` group's attributes, and (in memory) the per-record weights, risks and bounds.
:class:`ResultBase` defines once what every result reads from it (epsilon, the privacy
statement, the posterior, the summary, synthesis); :class:`PseudoPosteriorResult` adds the
in-memory per-record arrays and synthesis from its own built model, and
:class:`~pseudopost.mechanisms.pseudo_posterior.dask.backend.DaskPseudoPosteriorResult` lazy
Dask arrays and synthesis partition by partition.

Synthesis. ``synthesize(seed=...)`` returns one synthetic dataset (a DataFrame) drawn under one
kept posterior draw; ``synthesize_datasets(m, seed=...)`` returns a list of m datasets, each
under its own draw, chosen without replacement. Each dataset is one output of the mechanism and
carries :attr:`~ResultBase.epsilon`; m of them compose to :math:`m\varepsilon` (basic
composition). ``weighted=False`` draws from the unweighted posterior of the risk step instead:
the unweighted synthesizer, whose privacy loss is :attr:`~ResultBase.unweighted_epsilon`, for
comparison.

Privacy statement (:func:`pseudo_posterior_statement`):

* without censoring, ``"local"``: :math:`\varepsilon_x = 2\max_i\Delta_i` holds for this
  database and its add/remove-one neighbours (Savitsky, Williams & Hu 2022, Theorem 3;
  range-restricted paper eq. 7 / Definition 4), asymptotically;
* with censoring at B (Hu, Williams & Savitsky 2025), :math:`\varepsilon = 2B` is
  ``"global"`` only when the weights were fixed before the data were seen: every
  :math:`\alpha_i = 1` (``shift >= 1``, or ``fit(weights=ones)``), or weights given to
  ``fit(weights=..., public_weights=True)``; when the weights come from the data's risk (or are
  given without being declared public) it is ``"global given the weights"``
  (:class:`~pseudopost.privacy.decomposition.Censored` states why);
* a whole file censored per part (:class:`~pseudopost.privacy.decomposition.PartsCensored`)
  is ``"global given the weights"`` whatever the weights: its model plan (each column's
  levels, statuses and predictors) is read from the data, so the bound holds given the plan,
  which the assumptions say.
"""

from __future__ import annotations

import os
import warnings
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from pseudopost._cards import diagnostics_verdict, html_card, text_card, timings_text
from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_positive_int
from pseudopost.fitting.columns import part_samplers, samplers_text
from pseudopost.fitting.sampler import FitDiagnostics
from pseudopost.models.base import Prepared, SynthModel
from pseudopost.privacy.calibration import CalibrationReport
from pseudopost.privacy.decomposition import Censored, Decomposition
from pseudopost.privacy.statement import ADD_REMOVE, PrivacyStatement

__all__ = [
    "FIXED_WEIGHTS",
    "WEIGHTS_ORIGINS",
    "PseudoPosteriorResult",
    "ResultBase",
    "fit_groups",
    "guarantee_text",
    "privacy_attrs",
    "pseudo_posterior_statement",
    "tree_variable",
    "weights_origin",
]

#: where a fit's weights came from (the ``weights_origin`` attribute of the ``privacy`` group):
#: ``"risk"`` computed from the data (risk, re-weighting), ``"ones"`` every alpha_i = 1
#: whatever the data, ``"public"`` given to ``fit`` and declared public, ``"given"`` given and
#: not declared public
WEIGHTS_ORIGINS = ("risk", "ones", "public", "given")
#: origins whose weights do not depend on the data: censoring is then a global guarantee
FIXED_WEIGHTS = ("ones", "public")
_WEIGHTS_ASSUMPTION = {
    "ones": "the weights were fixed before the data were seen: every alpha_i = 1",
    "public": "the weights given to fit() are public: fixed before the data were seen "
    "(declared with public_weights=True)",
    "risk": "the bound holds given the weights: they were computed from the data (its risk, "
    "or the Lipschitz re-weighting), so a neighbouring database changes them and the bound is "
    "not a worst case over the whole mechanism",
    "given": "the bound holds given the weights: the weights given to fit() were not declared "
    "public (public_weights=True), so they may depend on the data",
}
#: a whole file censored per part (``censor_split`` set): the model plan is read from the data
_PLAN_ASSUMPTION = (
    "the bound holds given the whole file's model plan: which levels, statuses and predictors "
    "each column's parts have is read from the data outside any budget (a level or status that "
    "only the neighbour holds changes the plan, and no synthetic record can take a level the "
    "plan lacks), so the bound is not a worst case over every neighbour; each part's bound B_k "
    "is in 'censor_bounds'"
)
_PACKAGE = str(Path(__file__).resolve().parents[2]) + os.sep  # the pseudopost package folder
_SOURCE_LOCAL = "Savitsky, Williams & Hu (2022), Theorem 3; range-restricted paper eqs. 7, 20-21"
_SOURCE_CENSORED = "Hu, Williams & Savitsky (2025), censored pseudo posterior"


def weights_origin(reweight: bool, shift: float, fixed: np.ndarray | None, public: bool) -> str:
    r"""Where a fit's alpha comes from (:data:`WEIGHTS_ORIGINS`): from the data (risk, or the
    Lipschitz re-weighting, which reads the accountant's bounds); every weight 1 whatever the
    data (``fixed`` all ones, or risk weights with ``shift`` >= 1, since
    :math:`c(1 - r_i) + g \ge g`); ``fixed`` and declared ``public``; or ``fixed``."""
    if reweight:
        return "risk"
    if fixed is None:
        return "ones" if shift >= 1.0 else "risk"
    if np.all(np.asarray(fixed) == 1.0):
        return "ones"
    return "public" if public else "given"


def guarantee_text(decomposition: Decomposition, ranges: bool, origin: str) -> str:
    """The one-line ``guarantee`` attribute of a fit (the statement says it in full)."""
    if isinstance(decomposition, Censored):
        given = "" if origin in FIXED_WEIGHTS else ", given the weights"
        if getattr(decomposition, "part_bounds", None):  # a whole file, censored per part
            given = (", given the model plan" if origin in FIXED_WEIGHTS
                     else ", given the weights and the model plan")  # fmt: skip
        return (
            f"global epsilon = 2B = {2 * decomposition.bound:g} by censoring (Hu, Williams & "
            f"Savitsky 2025){given}, under exact posterior sampling"
        )
    text = "local epsilon_x = 2 max_i Delta_i (asymptotic DP), per synthetic dataset"
    return text + ", conditional on the declared sensitive ranges" if ranges else text


def pseudo_posterior_statement(attrs: Mapping) -> PrivacyStatement:
    """The :class:`~pseudopost.privacy.PrivacyStatement` of one synthetic dataset of a fit,
    from its ``privacy`` attributes (module docstring: local, global, or global given the
    weights). A fit saved before the weights' origin was recorded counts as risk-weighted."""
    assumptions = [
        "exact sampling from the pseudo posterior (MCMC error is not accounted)",
        # each synthetic dataset has the data's n records; the whole-file structure stage's
        # warnings and the plan's shift-only rule read n too
        "n is public (each synthetic dataset has as many records as the data)",
    ]
    if attrs.get("decomposition") in ("truncated", "averaged"):
        assumptions.append("the declared sensitive ranges are public")
    if attrs.get("global_epsilon") is None:
        assumptions.append(
            "local to this database: epsilon_x contracts to a global epsilon as n grows"
        )
        scope, epsilon, source = "local", attrs["epsilon"], _SOURCE_LOCAL
    else:
        origin = str(attrs.get("weights_origin", "risk"))
        assumptions.append(_WEIGHTS_ASSUMPTION[origin])
        scope = "global" if origin in FIXED_WEIGHTS else "global given the weights"
        if attrs.get("censor_split") is not None:  # a whole file: conditional on its plan
            assumptions.append(_PLAN_ASSUMPTION)
            scope = "global given the weights"
        epsilon, source = attrs["global_epsilon"], _SOURCE_CENSORED
    return PrivacyStatement(
        mechanism="pseudo_posterior",
        epsilon=float(epsilon),
        delta=0.0,
        neighbouring=ADD_REMOVE,
        scope=scope,
        unit="dataset",
        assumptions=tuple(assumptions),
        source=source,
    )


def privacy_attrs(
    mech,
    *,
    epsilon: float,
    unweighted_epsilon: float,
    decomposition: str,
    guarantee: str,
    weights_origin: str,
) -> dict:
    """The ``privacy`` attributes every fit writes (``mech`` is the
    :class:`~pseudopost.PseudoPosterior`); a path adds its own."""
    if weights_origin not in WEIGHTS_ORIGINS:
        raise ValueError(
            f"'weights_origin' must be one of {WEIGHTS_ORIGINS}. Got {weights_origin!r}."
        )
    return {
        "epsilon": float(epsilon),
        "unweighted_epsilon": float(unweighted_epsilon),
        "mechanism": "risk-weighted pseudo posterior (Savitsky, Williams & Hu 2022)",
        "decomposition": decomposition,
        "neighbouring_relation": ADD_REMOVE,
        "guarantee": guarantee,
        "weights_origin": weights_origin,
        "scale": mech.scale,
        "shift": mech.shift,
        "normalisation": mech.normalisation,
        "reweight": int(mech.reweight),
        "risk_fit": getattr(mech, "risk_fit", "nuts"),
        "weighted_fit": getattr(mech, "weighted_fit", "nuts"),
        "exclude_quantile": -1.0 if mech.exclude_quantile is None else mech.exclude_quantile,
        "units": "log density of the outcome as given (log-normal includes -log x)",
    }


def fit_groups(unweighted: xr.DataTree, weighted: xr.DataTree) -> dict[str, xr.Dataset]:
    """The posterior groups of a fit's tree: ``posterior`` and ``sample_stats`` of the weighted
    fit, ``risk_posterior`` and ``risk_sample_stats`` of the unweighted one."""
    groups = {}
    for prefix, tree in (("", weighted), ("risk_", unweighted)):
        groups[prefix + "posterior"] = tree["posterior"].to_dataset()
        if "sample_stats" in tree.children:
            groups[prefix + "sample_stats"] = tree["sample_stats"].to_dataset()
    return groups


def tree_variable(group: str, name: str, doc: str) -> property:
    """A read-only property returning a copy of ``datatree[group][name]``."""
    return property(lambda self: self.datatree[group][name].copy(), doc=doc)


def _privacy_number(name: str, doc: str) -> property:
    return property(lambda self: float(self.datatree["privacy"].attrs[name]), doc=doc)


def _short(text: str, n: int = 160) -> str:
    return text if len(text) <= n else text[: n - 4] + " ..."


@dataclass(repr=False)
class ResultBase(ABC):
    """What every pseudo posterior result reads from its :class:`xarray.DataTree` (module
    docstring). Subclasses add the per-record arrays (``alpha``, ``risk``, ``lipschitz``, ...)
    and :meth:`_frames`, how one dataset per chosen draw is synthesized.

    Attributes
    ----------
    datatree : xarray.DataTree
        Groups ArviZ understands (``posterior``, ``sample_stats``, ``risk_posterior``,
        ``risk_sample_stats``, ``privacy``, and in memory ``observed_data`` and ``weights``).
    diagnostics : dict[str, FitDiagnostics]
        R-hat/ESS/divergences of the ``weighted`` and ``unweighted`` fits.
    timings : dict[str, float]
        Seconds per step of the fit.
    model : SynthModel
        The model fitted.
    """

    datatree: xr.DataTree
    diagnostics: dict[str, FitDiagnostics]
    timings: dict[str, float]
    model: SynthModel

    epsilon = _privacy_number(
        "epsilon", "Local :math:`\\varepsilon_x = 2\\max_i\\Delta_i` of the weighted fit."
    )
    unweighted_epsilon = _privacy_number(
        "unweighted_epsilon", "Local epsilon of the unweighted fit (:math:`2\\max_i L_i`)."
    )

    @property
    def global_epsilon(self) -> float | None:
        """2B under censoring, None otherwise: global when the weights were fixed in advance,
        else global given the weights (:attr:`privacy_statement` says which)."""
        value = self.datatree["privacy"].attrs.get("global_epsilon")
        return None if value is None else float(value)

    @property
    def privacy_statement(self) -> PrivacyStatement:
        """The guarantee of one synthetic dataset (m datasets compose to m epsilon)."""
        return pseudo_posterior_statement(self.datatree["privacy"].attrs)

    @property
    def posterior(self) -> xr.Dataset:
        """The weighted posterior."""
        return self.datatree["posterior"].to_dataset()

    @property
    def likelihood(self) -> str:
        """``"sufficient"`` or ``"full"``: how the posteriors were fitted."""
        return str(self.datatree.attrs["likelihood"])

    def _card_lines(self) -> list[tuple[str, str]]:
        n = int(self.datatree["privacy"].sizes.get("record", 0)) if "privacy" in \
            self.datatree.children else 0  # fmt: skip
        lines = [
            ("model", _short(repr(self.model))),
            ("records", f"{n:,}" if n else "-"),
            ("epsilon", f"{self.epsilon:.4g} weighted (unweighted {self.unweighted_epsilon:.4g})"),
            ("privacy", self.privacy_statement.describe()),
            ("diagnostics", diagnostics_verdict(self.diagnostics)),
            ("timings", timings_text(self.timings)),
        ]
        if self.global_epsilon is not None:
            lines.insert(3, ("global epsilon", f"{self.global_epsilon:.4g}"))
        drawn = part_samplers(self.datatree)
        if drawn:
            lines.append(("parts drawn", samplers_text(drawn)))
        return lines

    def __repr__(self) -> str:
        return text_card(type(self).__name__, self._card_lines())

    def _repr_html_(self) -> str:
        tree = getattr(self.datatree, "_repr_html_", None)
        folds = [("the DataTree", tree())] if tree is not None else []
        return html_card(type(self).__name__, self._card_lines(), folds)

    def summary(self) -> pd.DataFrame:
        """ArviZ summary of the weighted posterior (raw numbers)."""
        import arviz as az

        return az.summary(self.datatree, round_to="none")

    def synthesize(self, m: int | None = None, seed: SeedLike = None, *, weighted: bool = True):
        """One synthetic dataset under one kept posterior draw (see the module docstring).

        ``m`` is deprecated: ``synthesize(m=k)`` returns what it did in pseudopost 0.1 (a
        DataFrame for k = 1, else a list) with a ``DeprecationWarning``; use
        :meth:`synthesize_datasets` for several datasets.
        """
        if m is None:
            return self.synthesize_datasets(1, seed, weighted=weighted)[0]
        warnings.warn(
            "synthesize(m=...) is deprecated and will be removed in pseudopost 0.3; use "
            "synthesize(seed=...) for one dataset or synthesize_datasets(m, seed=...) for a list.",
            DeprecationWarning,
            skip_file_prefixes=(_PACKAGE,),  # attributed to the caller outside pseudopost
        )
        frames = self.synthesize_datasets(m, seed, weighted=weighted)
        return frames[0] if len(frames) == 1 else frames

    def synthesize_datasets(self, m: int, seed: SeedLike = None, *, weighted: bool = True) -> list:
        """``m`` synthetic datasets, each under its own posterior draw (module docstring).

        Draws are chosen without replacement among the kept draws of the weighted posterior
        (all draws of the unweighted one with ``weighted=False``). Modelled outcomes are
        synthetic; predictors of a ready model are kept as given (partially synthetic data,
        as in the papers).
        """
        m = check_positive_int(m, "m")
        rng = as_generator(seed)
        posterior, chosen = self._choose(m, rng, weighted)
        return self._frames(posterior, chosen, int(rng.integers(2**31 - 1)))

    def synthesize_draws(self, draws: np.ndarray, seed: SeedLike = None) -> list:
        """One synthetic dataset under each of the weighted posterior's flat draws ``draws``
        (``chain * n_draws + draw``; repeats allowed), kept or not: for a caller that chose the
        draws itself, such as a resample by importance weights
        (:func:`pseudopost.evaluate.frontier`)."""
        chosen = np.asarray(draws)
        size = self.posterior.sizes["chain"] * self.posterior.sizes["draw"]
        if chosen.ndim != 1 or chosen.size == 0 or not np.issubdtype(chosen.dtype, np.integer):
            raise TypeError(f"'draws' must be a non-empty 1-d array of integers. Got {draws!r}.")
        if chosen.min() < 0 or chosen.max() >= size:
            raise ValueError(
                f"'draws' must lie in [0, {size}) (the weighted posterior's flat draws). "
                f"Got {chosen.min()} to {chosen.max()}."
            )
        rng = as_generator(seed)
        return self._frames(self.posterior, chosen, int(rng.integers(2**31 - 1)))

    def _choose(self, m: int, rng: np.random.Generator, weighted: bool):
        """(posterior, sorted flat draw numbers) of the ``m`` datasets."""
        if weighted:
            kept = self.datatree["privacy"]["draw_kept"].transpose("chain", "draw").to_numpy()
            pool = np.flatnonzero(kept.ravel())
            posterior, available, what = self.posterior, pool.size, "kept"
        else:
            posterior = self.datatree["risk_posterior"].to_dataset()
            pool = available = posterior.sizes["chain"] * posterior.sizes["draw"]
            what = "unweighted"
        if m > available:
            raise ValueError(f"'m'={m} exceeds the {available} {what} posterior draws.")
        return posterior, np.sort(rng.choice(pool, size=m, replace=False))

    @abstractmethod
    def _frames(self, posterior: xr.Dataset, chosen: np.ndarray, seed: int) -> list:
        """One synthetic dataset per flat draw in ``chosen`` of ``posterior`` (``seed`` is the
        integer seed of the synthesis streams)."""


@dataclass(repr=False)
class PseudoPosteriorResult(ResultBase):
    """A pseudo posterior fitted in memory: :class:`ResultBase` plus the per-record arrays
    (dimension ``record``) and synthesis from the fit's own model and data.

    Attributes
    ----------
    prepared : Prepared
        The fit's validated data.
    built : pymc.Model
        ``model.build(prepared)``: this fit's own PyMC model, used for synthesis and never
        shared with another fit.
    calibration : CalibrationReport or None
        The calibration to ``target_epsilon``, if one was asked for.
    """

    prepared: Prepared = field(repr=False)
    built: pm.Model = field(repr=False)
    calibration: CalibrationReport | None = None

    lipschitz = tree_variable(
        "privacy", "lipschitz", "Per-record bounds :math:`\\Delta_i` of the weighted fit."
    )
    unweighted_lipschitz = tree_variable(
        "privacy", "unweighted_lipschitz", "Per-record bounds of the unweighted fit (the risk)."
    )
    alpha = tree_variable("weights", "alpha", "Weights :math:`\\alpha_i` of the weighted fit.")
    alpha_star = tree_variable(
        "weights",
        "alpha_star",
        "Weights of the fitted posterior (:math:`\\alpha^*`; alpha unless range-averaged).",
    )
    risk = tree_variable(
        "weights", "risk", ":math:`L_i = \\max_m |f_{\\theta_m}(x_i)|` under the unweighted fit."
    )

    @property
    def lambda_(self) -> xr.DataArray | None:
        """Range-averaged lambda_i (None unless ``range_method="averaged"``)."""
        w = self.datatree["weights"]
        return w["lambda"].copy() if "lambda" in w else None

    def _frames(self, posterior, chosen, seed) -> list[pd.DataFrame]:
        return self.model.simulate(self.prepared, self.built, posterior, chosen, seed)
