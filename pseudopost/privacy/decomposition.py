r"""One accountant, several ways to split the pseudo likelihood into public and sensitive parts.

Range-restricted paper section 3.2, eq. 20: :math:`p^{\alpha^*}_\theta(x) =
p^{\alpha}_{\theta,\gamma^c}(x)\, p_{\theta,\gamma}(x)`; only the sensitive part enters the
sensitivity (eq. 21),

.. math:: \Delta_i = \max_m |\log p^{\alpha_i}_{\theta_m,\gamma^c_i}(x_i)| = c_i \max_m |g_{\theta_m}(x_i)|,

over draws of the :math:`\alpha^*`-weighted posterior, and :math:`\varepsilon_x = 2\max_i \Delta_i`
(local; add/remove neighbours; conditional on the declared ranges R). A :class:`Decomposition`
says three things: the weights :math:`\alpha^*` of the fitted posterior, the record coefficient
:math:`c_i`, and the per-draw sensitive function g. Adding a new way means one new class here.

=================  =========================  ====================  ===============================
decomposition      fitted weights alpha*      coefficient c_i       g (per record, per draw)
=================  =========================  ====================  ===============================
Unrestricted       alpha                      alpha                 f = log p(x_i | theta)
RangeAveraged      lambda + (1 - lambda) a    (1 - lambda) alpha    f                  (eqs. 5, 7)
RangeTruncated     alpha                      alpha                 f - log P_theta(R_i)  (Def. 4)
Censored           alpha (censored lik.)      1                     clip(alpha f, -B, B)
PartsCensored      alpha (each part censored) 1                     sum_k clip(alpha r_k f_k, +-B_k)
=================  =========================  ====================  ===============================

Range-truncated: eq. 15 as printed reads :math:`|\alpha_i f - \log P_\theta(R_i)|`, putting
alpha on f alone. The sensitive part that Definition 4 and Theorem 2 protect is the alpha-weighted
*conditional* density :math:`(p_\theta(x_i)/P_\theta(R_i))^{\alpha_i}` (the section 3.2 form
:math:`p^{\alpha}_{\gamma^c} = p^\alpha/\gamma` is the same slip), so we use
:math:`\alpha_i (f - \log P_\theta(R_i))`. On the paper's simulation only this form reproduces
the paper's own orderings (weighted 8.1 > truncated (0.4, 1.8) 6.6 > truncated (0.6, 1.2) 5.9);
eq. 15 literally reverses them (11.9 and 15.1), because a record with alpha near 0 would keep
its whole :math:`-\log P(R_i)`, so narrowing the range would *weaken* the guarantee.

How g is computed does not change what it is:
:func:`pseudopost.privacy.accountant.sensitive_function` returns the fused kernel of a ready
model (:mod:`pseudopost.privacy.fused`; all four decompositions, range truncation for the
continuous models only) and the model's PyTensor graph otherwise
(:meth:`Decomposition.generic_function`); both are tested equal to brute force.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from pseudopost.models.base import SynthModel
from pseudopost.models.loglik import RecordFunction
from pseudopost.models.weighting import record_logp

__all__ = [
    "Censored",
    "Decomposition",
    "PartsCensored",
    "RangeAveraged",
    "RangeTruncated",
    "Unrestricted",
]


class Decomposition(ABC):
    """Public/sensitive split of the pseudo likelihood (see the module docstring)."""

    name: str

    @abstractmethod
    def fit_weights(self, alpha: np.ndarray) -> np.ndarray:
        """Weights :math:`\\alpha^*` of the posterior that is fitted and sampled."""

    @abstractmethod
    def coefficient(self, alpha: np.ndarray) -> np.ndarray:
        """Record coefficient :math:`c_i \\ge 0` in :math:`\\Delta_i = c_i \\max_m |g|`."""

    def extras(self, alpha: np.ndarray) -> dict[str, np.ndarray]:
        """Extra per-record inputs of g."""
        return {}

    def generic_function(self, model: SynthModel, base: pm.Model, loglik) -> RecordFunction:
        """The generic g: a per-record PyTensor graph (default: the log-likelihood itself;
        ``loglik`` is the model's record function, fused or generic)."""
        if getattr(loglik, "fused", False):
            return RecordFunction(base, model.observed)
        return loglik


class Unrestricted(Decomposition):
    """The pseudo posterior mechanism without ranges (Savitsky, Williams & Hu 2022)."""

    name = "weighted"

    def fit_weights(self, alpha):
        return alpha

    def coefficient(self, alpha):
        return alpha


@dataclass
class RangeAveraged(Decomposition):
    """Range-averaged (section 2): :math:`\\lambda_i = \\Pr(x^*_i \\notin R_i)` from the unweighted
    posterior predictive; :math:`\\alpha^*_i = \\lambda_i + (1 - \\lambda_i)\\alpha_i` (eq. 5);
    :math:`\\Delta_i = \\max_m |(1 - \\lambda_i)\\alpha_i f_{\\theta_m}(x_i)|` (eq. 7) over draws of the
    :math:`\\alpha^*`-weighted posterior. A relaxation (it averages over data sets to get lambda)
    as well as an amplification (it conditions on R)."""

    lam: np.ndarray
    name: str = "averaged"

    def fit_weights(self, alpha):
        return self.lam + (1.0 - self.lam) * alpha

    def coefficient(self, alpha):
        return (1.0 - self.lam) * alpha


@dataclass
class RangeTruncated(Decomposition):
    """Range-truncated (section 3, Definition 4, Theorem 2): the alpha-weighted posterior (same
    synthetic data as the weighted mechanism); the sensitive part is the conditional density,
    :math:`\\Delta_i = \\max_m |\\alpha_i (f_{\\theta_m}(x_i) - \\log P_{\\theta_m}(R_i))|`, with
    :math:`\\log P_\\theta(R_i)` from the model's log-CDF in log space."""

    lower: np.ndarray
    upper: np.ndarray
    name: str = "truncated"

    def fit_weights(self, alpha):
        return alpha

    def coefficient(self, alpha):
        return alpha

    def extras(self, alpha):
        return {"lower": self.lower, "upper": self.upper}

    def generic_function(self, model, base, loglik):
        def graph(m, observed, extras):
            log_p = model.log_prob_range_graph(m, extras["lower"], extras["upper"])
            return record_logp(m, observed) - log_p

        return RecordFunction(base, model.observed, graph=graph, extra_inputs=("lower", "upper"))


@dataclass
class Censored(Decomposition):
    """Global DP by censoring (Hu, Williams & Savitsky, Statistica Sinica 2025): each record's
    weighted log-likelihood contribution is censored to :math:`[-B, B]`,

    .. math:: \\tilde\\xi(\\theta \\mid x) \\propto \\xi(\\theta)\\prod_i
              \\exp\\{\\mathrm{clip}(\\alpha_i f_\\theta(x_i), -B, B)\\}.

    Why it is global: for add/remove neighbours x, x' = x minus record j, the density ratio is
    :math:`e^{c_j(\\theta)} \\cdot \\phi(x')/\\phi(x)` with :math:`|c_j| \\le B` for every theta
    and every database, and the normaliser ratio :math:`\\phi(x)/\\phi(x') =
    E_{\\tilde\\xi(\\cdot\\mid x')}[e^{c_j}] \\in [e^{-B}, e^{B}]`; so every event's probability
    ratio is at most :math:`e^{2B}` and one posterior draw (and the synthetic data, its
    post-processing) is :math:`\\varepsilon = 2B`-DP, non-asymptotically. Assumptions, stated
    exactly: (i) exact posterior sampling (MCMC error is not accounted, as in the papers);
    (ii) the weights of the other records do not change with the neighbour.

    So the scope of the guarantee depends on where the weights come from
    (``pseudo_posterior_statement``):

    * ``"global"`` when the weights were fixed before the data were seen: every
      :math:`\\alpha_i = 1` (the censored ordinary posterior: risk weights with a shift
      :math:`g \\ge 1`, or weights given as ones), or weights given to the mechanism and
      declared public (``fit(weights=w, public_weights=True)``);
    * ``"global given the weights"`` when the weights come from the data: the risk-based
      weights (each :math:`\\alpha_i` depends on every record through the risk's normalisation
      and the unweighted posterior), the Lipschitz re-weighting, or weights given without being
      declared public. The bound then holds conditionally on the weights (the papers'
      convention), not over the whole mechanism, and a ledger must not compose it with global
      guarantees.
    """

    bound: float
    name: str = "censored"

    def fit_weights(self, alpha):
        return alpha

    def coefficient(self, alpha):
        return np.ones_like(alpha)

    def extras(self, alpha):
        return {"alpha": alpha}

    def generic_function(self, model, base, loglik):
        bound = float(self.bound)

        def graph(m, observed, extras):
            return pt.clip(extras["alpha"] * record_logp(m, observed), -bound, bound)

        return RecordFunction(base, model.observed, graph=graph, extra_inputs=("alpha",))


@dataclass
class PartsCensored(Censored):
    r"""Global DP for a whole file by censoring each part (:mod:`pseudopost.fitting.censored`):
    part k's weighted contribution of record i, :math:`w_{ik} f_{ik}(\theta_k)` with
    :math:`w_{ik} = \alpha_i r_{ik}` (the part's raking factor, 1 without part raking), is
    censored to :math:`[-B_k, B_k]`, :math:`\sum_k B_k = B` (``bound``; ``part_bounds`` maps
    part names to :math:`B_k`, split by the rule ``split``, which reads no data:
    :func:`~pseudopost.fitting.censored.split_bound`),

    .. math:: \tilde\xi(\theta \mid x) = \prod_k \tilde\xi_k(\theta_k \mid x), \qquad
              \tilde\xi_k(\theta_k \mid x) \propto \pi_k(\theta_k) \prod_i
              \exp\{\mathrm{clip}(w_{ik} f_{ik}(\theta_k), -B_k, B_k)\}.

    Composition, two equal readings. (a) The record's whole contribution
    :math:`c_j(\theta) = \sum_k \mathrm{clip}(w_{jk} f_{jk}, -B_k, B_k)` lies in
    :math:`[-B, B]` for every theta and database, and the joint density (a product because the
    parts' parameters and priors are disjoint) is :math:`\propto \pi(\theta)\exp\{\sum_i
    c_i(\theta)\}`: a record term bounded by B is all :class:`Censored`'s argument uses, so
    it gives :math:`2B` for one joint draw. (b) Each part's
    posterior is :math:`2B_k`-DP alone by the same argument, the parts are drawn independently
    given the data, and sequential composition gives :math:`\sum_k 2B_k = 2B`. Either way
    one draw of every part (and the synthetic file drawn under it, post-processing) is
    :math:`\varepsilon = 2B`-DP, add/remove neighbours, under :class:`Censored`'s assumptions
    (exact sampling; the other records' weights and factors unchanged by the neighbour, which
    is what ``"global"`` against ``"global given the weights"`` says). A part whose terms are
    log-probabilities (:math:`f \le 0`, a discrete outcome) has :math:`c \in [-B_k, 0]` and
    costs only :math:`B_k`; the bound stated is the general :math:`2B_k`."""

    part_bounds: dict = field(default_factory=dict)
    split: str = "equal"

    def generic_function(self, model, base, loglik):
        raise ValueError(
            "The per-part censoring is accounted by the whole file's accountant "
            "(PartAccountant.with_decomposition), not by a PyMC graph."
        )
