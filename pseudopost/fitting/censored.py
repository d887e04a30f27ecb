r"""The censored pseudo posterior of a whole file, part by part (global DP for whole files).

Censoring (Hu, Williams & Savitsky 2025) clips each record's weighted log-likelihood
contribution. For a whole file it is done **per part**: part k's contribution of record i,
:math:`w_{ik} f_{ik}(\theta_k)` (:math:`w_{ik} = \alpha_i r_{ik}`, the record weight times
the part's raking factor), is censored to :math:`[-B_k, B_k]`,

.. math::
    \tilde\xi_k(\theta_k \mid x) \propto \pi_k(\theta_k)
    \prod_i \exp\{\mathrm{clip}(w_{ik} f_{ik}(\theta_k), -B_k, B_k)\},

so the parts' posteriors stay independent (each has its own parameters and prior) and are
fitted alone, as the uncensored ones are (:mod:`pseudopost.fitting.columns`). The privacy
argument is in :class:`~pseudopost.privacy.decomposition.PartsCensored`.

Censoring breaks the grouped statistics: which records are clipped depends on
:math:`\theta`. The density used here is the censored one exactly, from the part's own
pieces: at each :math:`\theta` the per-record log-likelihoods come from the part's tables
(:meth:`Part.table <pseudopost.models.parts.base.Part.table>`, the accountant's), the records
whose :math:`|w_{ik} f_{ik}| < B_k` keep their term, and that term's sum and gradient are the
part's own written-out density (:meth:`Part.logp_grad
<pseudopost.models.parts.base.Part.logp_grad>`) on the statistics of those records alone, with
weights :math:`w_{ik}\,1[|w_{ik} f_{ik}(\theta)| < B_k]`; each clipped record adds
:math:`\pm B_k` and nothing to the gradient. The log density is continuous and its gradient
exact wherever it exists (everywhere but the kinks, a set of measure zero), so NUTS (nutpie on
the Python density, no preconditioning: the Laplace approximation of the uncensored part is no
guide to the flatter censored one) samples the censored posterior itself; MCMC error is not
accounted, as in the papers. Cost: one table, one statistics pass and one density per
gradient, O(n) per gradient instead of O(patterns): for small files only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import xarray as xr

from pseudopost.fitting.parts import pyfunc_model
from pseudopost.fitting.sampler import posterior_tree, run_nutpie
from pseudopost.models.parts import GroupedData, Part, PartData
from pseudopost.models.parts.grouped import encode_records

__all__ = [
    "CENSORED",
    "CENSOR_SPLITS",
    "CensoredDensity",
    "censored_part_draws",
    "split_bound",
]

#: how a censored part was drawn (``sample_stats.attrs["samplers"]``)
CENSORED = "nuts censored"
#: rules that split the record bound B over a file's parts (:func:`split_bound`)
CENSOR_SPLITS = ("equal",)
#: nutpie's warm-up for a censored part is at least this long: the density is not
#: preconditioned, and it has kinks
CENSORED_MIN_TUNE = 200
#: the deepest NUTS tree of a censored part (2**6 - 1 = 63 leapfrog steps): where every record
#: is clipped the censored density is the prior's, flat over wide regions, and nutpie's 1,023-step
#: trees there cost most of the fit (a 4-column file of 200 records: 38 s at nutpie's depth);
#: a capped tree is still an exact NUTS kernel (it changes how far a draw moves, not what is
#: sampled)
CENSORED_MAXDEPTH = 6


def split_bound(parts: Sequence[Part], bound: float, rule: str = "equal") -> dict[str, float]:
    r"""Each part's bound :math:`B_k` with :math:`\sum_k B_k = B`. ``"equal"``: :math:`B_k =
    B / K` over the K parts. The rule reads the parts (their number, fixed by the model plan:
    the declared and the structure stage's columns, levels and statuses), never the data's
    values, so the split adds nothing to the privacy loss beyond what the plan already costs."""
    if rule not in CENSOR_SPLITS:
        raise ValueError(f"'censor_split' must be one of {CENSOR_SPLITS}. Got {rule!r}.")
    parts = list(parts)
    if not parts:
        raise ValueError("No parts to censor.")
    return {p.name: float(bound) / len(parts) for p in parts}


class CensoredDensity:
    """One part's censored log posterior density on the unconstrained scale (module
    docstring): ``logp_grad(x)``; ``contributions(x)``, the censored terms per record.

    Parameters
    ----------
    part, data
        The part and its records (:class:`~pseudopost.models.parts.PartData` or
        :class:`~pseudopost.models.parts.GroupedData`).
    weights
        :math:`w_{ik}` per record (n,), >= 0.
    bound
        :math:`B_k > 0`.
    """

    def __init__(
        self, part: Part, data: PartData | GroupedData, weights: np.ndarray, bound: float
    ) -> None:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (data.n,) or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError(f"'weights' must be {data.n} finite values >= 0; got {w.shape}.")
        if not (np.isfinite(bound) and bound > 0):
            raise ValueError(f"'bound' must be a finite number > 0. Got {bound!r}.")
        self.part, self.data, self.weights, self.bound = part, data, w, float(bound)
        self.enc = encode_records(part, data)
        self.on = (self.enc.index >= 0) & (w > 0)
        self.ndim = part.layout.size

    def record_loglik(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        """:math:`f_{ik}` (n,) at one draw's constrained ``values`` (0 where not active)."""
        params = {k: np.asarray(v, dtype=np.float64)[None] for k, v in values.items()}
        with np.errstate(all="ignore"):
            return self.part.gather(self.part.table(params, self.enc), self.enc)[0]

    def _terms(self, values) -> tuple[np.ndarray, np.ndarray]:
        """(weighted terms :math:`w f` with NaN as -inf, inside) on the active records."""
        with np.errstate(all="ignore"):
            s = self.weights * self.record_loglik(values)
        s = np.where(np.isnan(s), -np.inf, s)
        return s, self.on & (np.abs(s) < self.bound)

    def contributions(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        r""":math:`\mathrm{clip}(w_{ik} f_{ik}, -B_k, B_k)` per record (0 where not active)."""
        s, _ = self._terms(values)
        return np.where(self.on, np.clip(s, -self.bound, self.bound), 0.0)

    def _statistics(self, weights: np.ndarray):
        if isinstance(self.data, GroupedData):
            return self.data.statistics(self.part, weights)
        return self.part.statistics(self.data, weights)

    def logp_grad(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """Censored log density (+ log prior + log-Jacobian) at ``x`` and its gradient."""
        x = np.asarray(x, dtype=np.float64)
        s, inside = self._terms(self.part.layout.unpack(x))
        clipped = self.on & ~inside
        censored = float(np.sum(np.clip(s[clipped], -self.bound, self.bound)))
        stats = self._statistics(np.where(inside, self.weights, 0.0))
        arrays = {**stats.arrays, **self.part.derived(stats.arrays)}
        lp, grad = self.part.logp_grad(x, arrays)
        if not np.isfinite(lp):
            return -np.inf, np.zeros_like(x)
        return lp + censored, grad


def _nutpie_model(density: CensoredDensity):
    return pyfunc_model(density.part, lambda: lambda x, **_: density.logp_grad(x))


def censored_part_draws(
    part: Part,
    data: PartData | GroupedData,
    weights: np.ndarray,
    bound: float,
    *,
    draws: int,
    tune: int,
    chains: int,
    seed: int,
    progress: bool = False,
) -> xr.DataTree:
    """Draws of one part's censored posterior by NUTS (module docstring); a DataTree with
    ``posterior`` and ``sample_stats``, its attribute ``sampler`` :data:`CENSORED`."""
    density = CensoredDensity(part, data, weights, bound)
    trace = run_nutpie(
        _nutpie_model(density), draws=draws, tune=max(int(tune), CENSORED_MIN_TUNE),
        chains=chains, seed=seed, progress=progress, adaptation="diag",
        maxdepth=CENSORED_MAXDEPTH,
    )  # fmt: skip
    tree = posterior_tree(trace, part.layout.names)
    tree.attrs["sampler"] = CENSORED
    return tree
