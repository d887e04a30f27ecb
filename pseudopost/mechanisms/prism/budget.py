r"""PRISM budget: the four pools (section 5.4) and the closed-form allocation (Theorem 6.3).

Pools. The total budget is split into

.. math:: \varepsilon = \varepsilon_{sel} + \varepsilon_{mi} + \varepsilon_{task} + \varepsilon_{bg},

with the paper's defaults 0.10 / 0.05 / 0.65 / 0.20 (section 5.4). A pool a run does not use
(selection outside the predictive regime, MI estimation without 3-way marginals or MI task weights)
is reallocated to the task pool, as the paper prescribes for the selection pool. When columns are
discretised with DP-chosen bins, a fifth pool ``bins`` is taken off the top first (an extension:
the paper assumes public bins).

Allocation. With per-query noise :math:`\sigma_t = c_t/\varepsilon_t` and error bound
:math:`\sum_t w_t |\Omega_t| \sigma_t = \sum_t a_t/\varepsilon_t`, Theorem 6.3 minimises
:math:`\sum_t a_t/\varepsilon_t` subject to :math:`\sum_t \varepsilon_t = \varepsilon_{meas}`:

.. math:: \varepsilon_t^* = \varepsilon_{meas}\,\frac{\sqrt{a_t}}{\sum_s \sqrt{a_s}},\qquad
          \sum_t \frac{a_t}{\varepsilon_t^*} = \frac{(\sum_t \sqrt{a_t})^2}{\varepsilon_{meas}}.

Under zCDP (Remark 6.1) the Gaussian noise is :math:`\sigma_t = \Delta_2/\sqrt{2\rho_t}`, so the
bound is :math:`\sum_t a_t \rho_t^{-1/2}` with :math:`a_t = w_t|\Omega_t|\Delta_2/\sqrt 2`, and
the constraint :math:`\sum_t \rho_t = \rho_{meas}` (zCDP composes additively). Stationarity of
the Lagrangian, :math:`\tfrac12 a_t \rho_t^{-3/2} = \lambda`, gives

.. math:: \rho_t^* = \rho_{meas}\,\frac{a_t^{2/3}}{\sum_s a_s^{2/3}},\qquad
          \sum_t a_t (\rho_t^*)^{-1/2} = \frac{(\sum_t a_t^{2/3})^{3/2}}{\sqrt{\rho_{meas}}}.

Accounting. ``"approx"``: basic sequential composition of :math:`(\varepsilon_q, \delta_q)` over
every step (Theorem 6.1). ``"zcdp"``: every step is charged in :math:`\rho` (Gaussian
:math:`\Delta_2^2/2\sigma^2`, Bun & Steinke 2016 Prop 1.6; pure :math:`\varepsilon`-DP Laplace
:math:`\varepsilon^2/2`, Prop 1.4; exponential mechanism :math:`\varepsilon^2/8`, Cesar & Rogers
2021 Lemma 3.2, bounded range), summed, and converted once at the end to
:math:`(\rho + 2\sqrt{\rho\ln(1/\delta)}, \delta)`-DP (Prop 1.3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from pseudopost._validation import check_positive, check_probability
from pseudopost.privacy.noise import zcdp_rho_to_epsilon

__all__ = [
    "DEFAULT_POOLS",
    "Accounting",
    "LedgerEntry",
    "PrivacyLedger",
    "allocate_budget",
    "allocation_objective",
    "epsilon_to_rho",
    "split_pools",
]

Accounting = Literal["approx", "zcdp"]
DEFAULT_POOLS: Mapping[str, float] = {"sel": 0.10, "mi": 0.05, "task": 0.65, "bg": 0.20}


def allocate_budget(
    a: Sequence[float] | np.ndarray,
    total: float,
    *,
    accounting: Accounting = "approx",
    method: Literal["closed_form", "uniform"] = "closed_form",
) -> np.ndarray:
    r"""Per-query budgets minimising the Theorem 6.3 risk bound.

    Parameters
    ----------
    a
        Cost constants :math:`a_t = w_t |\Omega_t| c_t` (all > 0).
    total
        The pool's measurement budget: :math:`\varepsilon_{meas}` for ``"approx"``,
        :math:`\rho_{meas}` for ``"zcdp"``.
    accounting
        ``"approx"``: :math:`\varepsilon_t \propto \sqrt{a_t}` (Theorem 6.3).
        ``"zcdp"``: :math:`\rho_t \propto a_t^{2/3}` (the zCDP analogue, module docstring).
    method
        ``"closed_form"`` (the optimum) or ``"uniform"`` (the ablation: an equal share of
        ``total`` per query).

    Returns
    -------
    numpy.ndarray
        Budgets summing to ``total``.
    """
    arr = np.asarray(a, dtype=float)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            f"The 'a' argument must be a non-empty 1-d sequence. Got shape {arr.shape}."
        )
    if not (np.all(np.isfinite(arr)) and np.all(arr > 0)):
        raise ValueError(f"Every cost constant in 'a' must be finite and > 0. Got {arr.tolist()}.")
    tot = check_positive(total, "total")
    if method == "uniform":
        return np.full(arr.size, tot / arr.size)
    if method != "closed_form":
        raise ValueError(
            f"The 'method' parameter must be 'closed_form' or 'uniform'. Got {method!r}."
        )
    power = _power(accounting)
    share = arr**power
    return tot * share / share.sum()


def allocation_objective(
    a: Sequence[float] | np.ndarray,
    budgets: Sequence[float] | np.ndarray,
    *,
    accounting: Accounting = "approx",
) -> float:
    r"""The bound being minimised: :math:`\sum a_t/\varepsilon_t` or :math:`\sum a_t/\sqrt{\rho_t}`."""
    arr, b = np.asarray(a, dtype=float), np.asarray(budgets, dtype=float)
    _power(accounting)
    return float(np.sum(arr / b) if accounting == "approx" else np.sum(arr / np.sqrt(b)))


def _power(accounting: str) -> float:
    if accounting == "approx":
        return 0.5
    if accounting == "zcdp":
        return 2.0 / 3.0
    raise ValueError(f"The 'accounting' parameter must be 'approx' or 'zcdp'. Got {accounting!r}.")


def epsilon_to_rho(epsilon: float, delta: float) -> float:
    r"""Largest :math:`\rho` whose conversion :math:`\rho + 2\sqrt{\rho\ln(1/\delta)}` equals epsilon.

    Solving the quadratic in :math:`\sqrt\rho`:
    :math:`\rho = (\sqrt{\ln(1/\delta) + \varepsilon} - \sqrt{\ln(1/\delta)})^2`.
    """
    eps = check_positive(epsilon, "epsilon")
    ld = np.log(1.0 / check_probability(delta, "delta"))
    return float((np.sqrt(ld + eps) - np.sqrt(ld)) ** 2)


def split_pools(
    total: float,
    *,
    used: Sequence[str],
    fractions: Mapping[str, float] | None = None,
    bins_fraction: float = 0.0,
) -> dict[str, float]:
    """Split ``total`` (epsilon or rho) into the pools of section 5.4.

    Pools not in ``used`` give their share to ``"task"``. ``bins_fraction`` of the total is set
    aside first for DP bin selection (pool ``"bins"``) and the four pools share the rest.
    """
    fr = dict(DEFAULT_POOLS if fractions is None else fractions)
    if set(fr) != set(DEFAULT_POOLS):
        raise ValueError(
            f"The 'pools' fractions must have keys {sorted(DEFAULT_POOLS)}. Got {sorted(fr)}."
        )
    vals = np.array([fr[k] for k in DEFAULT_POOLS], dtype=float)
    if not (np.all(vals >= 0) and np.isclose(vals.sum(), 1.0)):
        raise ValueError(f"The 'pools' fractions must be >= 0 and sum to 1. Got {fr}.")
    if fr["task"] <= 0:
        raise ValueError(f"The 'task' pool fraction must be > 0. Got {fr['task']}.")
    rest = total * (1.0 - bins_fraction)
    out = {"bins": total * bins_fraction} if bins_fraction > 0 else {}
    spare = sum(fr[k] for k in fr if k not in used and k != "task")
    for k in DEFAULT_POOLS:
        if k == "task":
            out[k] = rest * (fr[k] + spare)
        elif k in used:
            out[k] = rest * fr[k]
    return out


@dataclass(frozen=True)
class LedgerEntry:
    """One privacy-consuming step, charged under both accountings.

    ``epsilon``/``delta`` are the step's own (approximate-)DP parameters (for a pure step
    ``delta = 0``); ``rho`` is its zCDP charge.
    """

    step: str
    pool: str
    mechanism: str
    epsilon: float
    delta: float
    rho: float


@dataclass(frozen=True)
class PrivacyLedger:
    """All steps of a release and the two end-to-end guarantees (Theorem 6.1 and zCDP)."""

    entries: tuple[LedgerEntry, ...]
    delta: float
    accounting: Accounting
    neighbouring: str = "replace-one (same n, one record changed)"
    notes: tuple[str, ...] = field(default=())

    @property
    def epsilon_basic(self) -> float:
        """Basic composition: the sum of the steps' epsilons (Theorem 6.1)."""
        return float(sum(e.epsilon for e in self.entries))

    @property
    def delta_basic(self) -> float:
        """Basic composition: the sum of the steps' deltas (Theorem 6.1)."""
        return float(sum(e.delta for e in self.entries))

    @property
    def rho(self) -> float:
        """Total zCDP charge (zCDP composes additively)."""
        return float(sum(e.rho for e in self.entries))

    @property
    def epsilon_zcdp(self) -> float:
        """:math:`\\rho`-zCDP converted to approximate DP at this ledger's ``delta``."""
        return zcdp_rho_to_epsilon(self.rho, self.delta)

    @property
    def epsilon(self) -> float:
        """The guarantee under the accounting the release was planned with."""
        return self.epsilon_basic if self.accounting == "approx" else self.epsilon_zcdp

    def by_pool(self) -> dict[str, dict[str, float]]:
        """Epsilon, delta and rho summed per pool."""
        out: dict[str, dict[str, float]] = {}
        for e in self.entries:
            p = out.setdefault(e.pool, {"epsilon": 0.0, "delta": 0.0, "rho": 0.0})
            p["epsilon"] += e.epsilon
            p["delta"] += e.delta
            p["rho"] += e.rho
        return out

    def summary(self) -> dict[str, object]:
        """Plain dictionary for reports."""
        return {
            "neighbouring": self.neighbouring,
            "accounting": self.accounting,
            "epsilon": self.epsilon,
            "delta": self.delta if self.accounting == "zcdp" else self.delta_basic,
            "epsilon_basic_composition": self.epsilon_basic,
            "delta_basic_composition": self.delta_basic,
            "rho_zcdp": self.rho,
            "epsilon_from_zcdp": self.epsilon_zcdp,
            "pools": self.by_pool(),
            "steps": len(self.entries),
            "notes": list(self.notes),
        }
