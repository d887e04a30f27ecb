r"""Privacy-test synthesizer :math:`\mathcal F` (REAEDP appendix and Theorem 4).

One invocation of :math:`\mathcal F` on a dataset :math:`D` of records from a finite universe
:math:`\mathcal U` (integer-coded attributes) does, as in the appendix "Output and termination":

1. seed selection: :math:`s \sim \mathrm{Unif}(D)`;
2. candidate generation: :math:`y \sim p_s(\cdot)`, a seed-dependent proposal that must not depend
   on :math:`D` otherwise (e.g. :class:`ResampleProposal` built from public marginals);
3. partition rule: for every record :math:`r \in D` with :math:`p_r(y) > 0`,
   :math:`I_r(y) = \lfloor -\ln p_r(y) / \ln\gamma \rfloor`, so a cell holds the seeds that
   generate :math:`y` with probability in :math:`(\gamma^{-(j+1)}, \gamma^{-j}]`; records with
   :math:`p_r(y) = 0` are in no cell. :math:`C_j(D, y)` is the cell of the chosen seed;
4. privacy test: draw :math:`L` and accept when :math:`L \ge k - |C_j(D, y)|`;
5. output :math:`y` if accepted, else nothing (:math:`\bot`).

:math:`L` is a discrete Laplace (two-sided geometric) variable,
:math:`\Pr\{L = l\} \propto e^{-\varepsilon_0 |l|}`, whose tail
:math:`\Pr\{L \ge x\} = e^{-\varepsilon_0 x}/(1 + e^{-\varepsilon_0})` for :math:`x \ge 1`
meets both conditions the proof needs (checked exactly in the tests):
:math:`\Pr\{L \ge x - 1\} \le e^{\varepsilon_0}\Pr\{L \ge x\}` for every integer :math:`x`
(Lemma 2, as used in eq. 21) and :math:`\Pr\{L \ge k - t\} \le e^{-\varepsilon_0(k-t)}` (eq. 20).
The partition rule gives :math:`p_{d'}(y) \le \frac{\gamma}{t}\sum_{s \in C_j(D,y)} p_s(y)` when
:math:`|C_j(D,y)| \ge t` (eq. 21), because every seed of the cell is within a factor
:math:`\gamma` of :math:`p_{d'}(y)`.

Theorem 4 (add/remove neighbours :math:`D' = D \cup \{d'\}`): one invocation is
:math:`(\varepsilon, \delta)`-DP with

.. math::

    \varepsilon = \varepsilon_0 + \ln(1 + \gamma/t), \qquad \delta = e^{-\varepsilon_0 (k - t)},

in the sufficient domain (appendix I, eq. 31): :math:`\gamma > 1`, integers :math:`1 \le t < k`,
:math:`\varepsilon_0 > 0` and :math:`|D| \ge k` for the smaller dataset of every pair (so a
dataset passed in must have more than :math:`k` records). :meth:`PrivacyTestSynthesizer.sample`
runs :math:`N` independent invocations and releases every accepted candidate; by sequential
composition (Theorem 1) the whole release is :math:`(N\varepsilon, \min(1, N\delta))`-DP,
reported as ``epsilon_total`` / ``delta_total``.

Privacy statements: :attr:`PrivacyTestSynthesizer.privacy_statement` is one invocation's
:math:`(\varepsilon, \delta)` (a release of at most one record);
:attr:`PrivacyTestResult.privacy_statement` is the whole release's
:math:`(N\varepsilon, \min(1, N\delta))`. Both are global under add/remove neighbours and
assume a proposal that depends on the seed record and public information only.

Gaps between the paper and what holds (exact enumeration in
``tests/mechanisms/test_privacy_test.py``):

* The appendix's loop "if pass, output y, else resample" is **not** covered by the proof: Lemma 1
  (eq. 5) is the probability of the single-shot mechanism above. Resampling until acceptance
  divides by the data-dependent acceptance rate and can violate :math:`(\varepsilon, \delta)`.
  Here each invocation is single-shot and the number of accepted records is random.
* Lemma 2(b) and Lemma 3 as printed state :math:`\mathrm{pt}(D, j, y) \le
  e^{\varepsilon_0}\mathrm{pt}(D', j, y)` and :math:`\mathrm{pt}(D', j, y) \le \mathrm{pt}(D, j,
  y)`; the first is trivially true and the second false (adding a seed can only raise the pass
  probability). The inequality the proof uses in eq. (21) is
  :math:`\mathrm{pt}(D', j, y) \le e^{\varepsilon_0}\mathrm{pt}(D, j, y)`, the tail condition
  above, which the discrete Laplace :math:`L` satisfies.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import comb
from typing import Protocol

import numpy as np
import pandas as pd

from pseudopost._cards import ReleaseCard
from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_positive, check_positive_int
from pseudopost.privacy.statement import ADD_REMOVE, PrivacyStatement

__all__ = [
    "PrivacyTestResult",
    "PrivacyTestSynthesizer",
    "Proposal",
    "ResampleProposal",
    "discrete_laplace_tail",
]


def discrete_laplace_tail(x: np.ndarray | int, epsilon0: float) -> np.ndarray:
    r""":math:`\Pr\{L \ge x\}` for :math:`\Pr\{L=l\} \propto e^{-\varepsilon_0|l|}`, integer ``x``.

    :math:`e^{-\varepsilon_0 x}/(1+e^{-\varepsilon_0})` for :math:`x \ge 1` and
    :math:`1 - e^{-\varepsilon_0(1-x)}/(1+e^{-\varepsilon_0})` for :math:`x \le 0` (symmetry).
    """
    e0 = check_positive(epsilon0, "epsilon0")
    x = np.asarray(x, dtype=float)
    q = np.exp(-e0)
    upper = np.exp(-e0 * np.maximum(x, 1.0)) / (1.0 + q)
    lower = 1.0 - np.exp(-e0 * np.maximum(1.0 - x, 1.0)) / (1.0 + q)
    return np.where(x >= 1, upper, lower)


class Proposal(Protocol):
    """A seed-dependent proposal :math:`p_s(\\cdot)` over integer-coded records."""

    @property
    def n_attributes(self) -> int: ...

    def sample(self, seed_record: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One candidate :math:`y \\sim p_s` for the seed record ``seed_record``."""

    def probability(self, seeds: np.ndarray, y: np.ndarray) -> np.ndarray:
        """:math:`p_s(y)` for every row ``s`` of ``seeds`` (shape ``(n, d)``)."""


@dataclass(frozen=True)
class ResampleProposal:
    r"""Keep the seed but redraw :math:`\omega` attributes from public marginals.

    Choose :math:`A \subseteq \{1..d\}`, :math:`|A| = \omega`, uniformly; draw
    :math:`y_a \sim \pi_a` for :math:`a \in A` and keep :math:`y_a = s_a` elsewhere, so

    .. math::

        p_s(y) = \binom{d}{\omega}^{-1} \sum_{A \supseteq \mathrm{diff}(s, y),\ |A| = \omega}
                 \prod_{a \in A} \pi_a(y_a),

    with :math:`\mathrm{diff}(s, y) = \{a : s_a \ne y_a\}`, computed as an elementary symmetric
    polynomial. The marginals :math:`\pi_a` must be public (not estimated from the confidential
    :math:`D`): Theorem 4 needs :math:`p_s` to depend on the seed only.

    Parameters
    ----------
    marginals
        One probability vector per attribute (attribute ``a`` takes codes
        ``0..len(marginals[a]) - 1``).
    n_resample
        :math:`\omega`, the number of attributes redrawn, :math:`1 \le \omega \le d`.
    """

    marginals: tuple[np.ndarray, ...]
    n_resample: int

    def __post_init__(self) -> None:
        margs = tuple(np.asarray(m, dtype=float).copy() for m in self.marginals)
        if len(margs) < 1:
            raise ValueError("The 'marginals' parameter needs at least one attribute.")
        for a, m in enumerate(margs):
            if m.ndim != 1 or m.size < 1 or (m < 0).any() or not np.isclose(m.sum(), 1.0):
                raise ValueError(
                    f"marginals[{a}] must be a non-negative probability vector summing to 1."
                )
        object.__setattr__(self, "marginals", margs)
        check_positive_int(self.n_resample, "n_resample")
        if self.n_resample > len(margs):
            raise ValueError(
                f"The 'n_resample' parameter must be <= the number of attributes ({len(margs)}). "
                f"Got {self.n_resample}."
            )

    @classmethod
    def from_public_data(
        cls,
        public: pd.DataFrame | np.ndarray,
        domain: list[int] | tuple[int, ...],
        n_resample: int,
        pseudocount: float = 1.0,
    ) -> ResampleProposal:
        """Marginals from a *public* sample of codes (add ``pseudocount`` to every cell)."""
        x = np.asarray(public)
        check_positive(pseudocount, "pseudocount", strict=False)
        margs = []
        for a, size in enumerate(domain):
            c = np.bincount(x[:, a].astype(int), minlength=int(size)).astype(float) + pseudocount
            margs.append(c / c.sum())
        return cls(tuple(margs), n_resample)

    @property
    def n_attributes(self) -> int:
        """Number of attributes :math:`d`."""
        return len(self.marginals)

    @property
    def domain(self) -> tuple[int, ...]:
        """Number of codes of each attribute."""
        return tuple(m.size for m in self.marginals)

    def sample(self, seed_record: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Redraw ``n_resample`` uniformly chosen attributes of ``seed_record``."""
        y = np.array(seed_record, dtype=np.int64, copy=True)
        for a in rng.choice(self.n_attributes, size=self.n_resample, replace=False):
            y[a] = rng.choice(self.marginals[a].size, p=self.marginals[a])
        return y

    def probability(self, seeds: np.ndarray, y: np.ndarray) -> np.ndarray:
        """:math:`p_s(y)` for every seed row (elementary symmetric polynomial recursion)."""
        s = np.asarray(seeds)
        y = np.asarray(y, dtype=np.int64)
        d, w = self.n_attributes, self.n_resample
        if s.ndim != 2 or s.shape[1] != d or y.shape != (d,):
            raise ValueError(f"Expected seeds of shape (n, {d}) and y of shape ({d},).")
        weights = np.array(
            [m[v] if 0 <= v < m.size else 0.0 for m, v in zip(self.marginals, y, strict=True)]
        )
        diff = s != y
        out = np.zeros(s.shape[0])
        rows = np.flatnonzero(diff.sum(axis=1) <= w)  # other seeds cannot produce y
        if rows.size == 0:
            return out
        dd = diff[rows]
        # e[:, r]: sum over chosen subsets of the attributes seen so far, of size r, that contain
        # every differing attribute, of the product of pi_a(y_a)
        e = np.zeros((rows.size, w + 1))
        e[:, 0] = 1.0
        for a in range(d):
            shifted = np.zeros_like(e)
            shifted[:, 1:] = e[:, :-1] * weights[a]
            e = np.where(dd[:, [a]], shifted, e + shifted)
        out[rows] = e[:, w] / comb(d, w)
        return out


_ASSUMPTIONS = (
    "the proposal p_s depends on the seed record and public information only",
    "|D| >= k for the smaller dataset of every neighbouring pair",
    "each invocation is single-shot (no resampling until a candidate passes)",
)
_SOURCE = "REAEDP, Theorem 4 (appendix H; sufficient domain, appendix I eq. 31)"


@dataclass(frozen=True, repr=False)
class PrivacyTestResult(ReleaseCard):
    """Output of :meth:`PrivacyTestSynthesizer.sample` (every accepted candidate).

    ``records`` is always a DataFrame of integer codes (the input frame's column names, or
    ``0..d-1`` for an array). ``pass_rate`` is measured: accepted / attempted candidates in this
    run. ``epsilon``/``delta`` are one invocation's (Theorem 4), ``epsilon_total`` /
    ``delta_total`` the release's (basic composition over ``n_candidates`` invocations).
    """

    records: pd.DataFrame
    n_candidates: int
    n_passed: int
    pass_rate: float
    epsilon: float
    delta: float
    epsilon_total: float
    delta_total: float

    def _card_details(self) -> list[tuple[str, str]]:
        return [("released", f"{len(self.records)} records: {self.n_passed} of "
                             f"{self.n_candidates} candidates passed ({self.pass_rate:.1%})")]  # fmt: skip

    @property
    def privacy_statement(self) -> PrivacyStatement:
        r"""The whole release: global :math:`(N\varepsilon, \min(1, N\delta))`-DP under
        add/remove neighbours, :math:`N` = ``n_candidates`` (Theorems 1 and 4)."""
        return PrivacyStatement(
            mechanism="privacy_test",
            epsilon=self.epsilon_total,
            delta=self.delta_total,
            neighbouring=ADD_REMOVE,
            scope="global",
            unit="release",
            assumptions=_ASSUMPTIONS,
            source=f"{_SOURCE}; basic composition over {self.n_candidates} invocations (Theorem 1)",
        )


@dataclass
class PrivacyTestSynthesizer:
    r"""The privacy-test mechanism :math:`\mathcal F` (Theorem 4); see the module docstring.

    Parameters
    ----------
    k
        Privacy-test threshold (plausible seeds required), integer :math:`k > t`.
    t
        Partition threshold of the analysis, integer :math:`1 \le t < k`.
    gamma
        Partition width :math:`\gamma > 1`.
    epsilon0
        Parameter of the discrete Laplace test variable :math:`L`, :math:`\varepsilon_0 > 0`.
    proposal
        Seed-dependent proposal :math:`p_s` (a :class:`Proposal`), public apart from the seed.
    """

    k: int
    t: int
    gamma: float
    epsilon0: float
    proposal: Proposal

    def __post_init__(self) -> None:
        check_positive_int(self.k, "k", minimum=2)
        check_positive_int(self.t, "t", minimum=1)
        if self.t >= self.k:
            raise ValueError(
                f"Theorem 4 needs t < k (delta = exp(-epsilon0 (k - t)) is 1 otherwise, no "
                f"guarantee). Got k={self.k}, t={self.t}."
            )
        g = check_positive(self.gamma, "gamma")
        if g <= 1.0:
            raise ValueError(
                f"Theorem 4 needs gamma > 1 (the partition cells (gamma^-(j+1), gamma^-j] and the "
                f"bound 1 + 1/k < 1 + gamma/t). Got gamma={self.gamma}."
            )
        check_positive(self.epsilon0, "epsilon0")
        for attr in ("sample", "probability", "n_attributes"):
            if not hasattr(self.proposal, attr):
                raise TypeError(
                    f"The 'proposal' must provide sample(), probability() and n_attributes; "
                    f"{type(self.proposal).__name__} lacks {attr!r}."
                )

    # ---------------------------------------------------------------- privacy figures
    @property
    def epsilon(self) -> float:
        r""":math:`\varepsilon = \varepsilon_0 + \ln(1 + \gamma/t)` of one invocation (Thm 4)."""
        return float(self.epsilon0 + np.log1p(self.gamma / self.t))

    @property
    def delta(self) -> float:
        r""":math:`\delta = e^{-\varepsilon_0(k - t)}` of one invocation (Theorem 4)."""
        return float(np.exp(-self.epsilon0 * (self.k - self.t)))

    @property
    def privacy_statement(self) -> PrivacyStatement:
        """One invocation of F: global (epsilon, delta)-DP under add/remove neighbours (Theorem
        4); :meth:`sample` with N invocations costs N times this (its result's statement)."""
        return PrivacyStatement(
            mechanism="privacy_test (one invocation)",
            epsilon=self.epsilon,
            delta=self.delta,
            neighbouring=ADD_REMOVE,
            scope="global",
            unit="release",
            assumptions=_ASSUMPTIONS,
            source=_SOURCE,
        )

    def pass_probability(self, cell_size: np.ndarray | int) -> np.ndarray:
        r""":math:`\mathrm{pt} = \Pr\{L \ge k - |C_j|\}` for cell sizes ``cell_size``."""
        return discrete_laplace_tail(self.k - np.asarray(cell_size), self.epsilon0)

    def partition(self, probabilities: np.ndarray) -> np.ndarray:
        r"""Partition index :math:`\lfloor -\ln p / \ln\gamma \rfloor`; -1 where :math:`p = 0`."""
        p = np.asarray(probabilities, dtype=float)
        idx = np.full(p.shape, -1, dtype=np.int64)
        pos = p > 0
        # small tolerance so p = gamma^-j exactly lands in cell j despite rounding
        idx[pos] = np.floor(-np.log(p[pos]) / np.log(self.gamma) + 1e-12).astype(np.int64)
        return idx

    # ---------------------------------------------------------------- data
    def _codes(self, data: pd.DataFrame | np.ndarray) -> np.ndarray:
        x = data.to_numpy() if isinstance(data, pd.DataFrame) else np.asarray(data)
        if x.ndim != 2 or x.shape[0] == 0:
            raise ValueError(
                f"The 'data' argument must be a non-empty 2-D table. Got shape {x.shape}."
            )
        if x.shape[1] != self.proposal.n_attributes:
            raise ValueError(
                f"'data' has {x.shape[1]} columns but the proposal has "
                f"{self.proposal.n_attributes} attributes."
            )
        if not np.issubdtype(x.dtype, np.integer):
            if not np.issubdtype(x.dtype, np.number) or (x != np.round(x)).any():
                raise TypeError(
                    f"The 'data' argument must hold integer attribute codes. Got dtype {x.dtype}"
                    + ("" if not np.issubdtype(x.dtype, np.number) else " with non-integer values")
                    + "."
                )
        if x.shape[0] <= self.k:
            raise ValueError(
                f"Theorem 4 needs |D| >= k for the smaller dataset of every neighbouring pair, so "
                f"'data' needs more than k={self.k} records. Got {x.shape[0]}."
            )
        return x.astype(np.int64)

    # ---------------------------------------------------------------- mechanism
    def _accept(
        self, x: np.ndarray, seed_index: int, y: np.ndarray, rng: np.random.Generator
    ) -> bool:
        cells = self.partition(self.proposal.probability(x, y))
        cell_size = int((cells == cells[seed_index]).sum())
        # L = G1 - G2 with G ~ Geometric(1 - e^-eps0): Pr{L = l} ∝ exp(-eps0 |l|)
        p = -np.expm1(-self.epsilon0)
        ell = int(rng.geometric(p)) - int(rng.geometric(p))
        return ell >= self.k - cell_size

    def sample(
        self, data: pd.DataFrame | np.ndarray, n_candidates: int, seed: SeedLike = None
    ) -> PrivacyTestResult:
        """Run ``n_candidates`` independent invocations of :math:`\\mathcal F`; keep the passes.

        Spends :math:`(N\\varepsilon, \\min(1, N\\delta))` with :math:`N` = ``n_candidates``
        (Theorem 1): the result's ``privacy_statement``. ``n_candidates`` counts invocations, not
        records: each outputs one record or nothing.
        """
        n_candidates = check_positive_int(n_candidates, "n_candidates")
        x = self._codes(data)
        rng = as_generator(seed)
        kept = []
        for _ in range(n_candidates):
            i = int(rng.integers(x.shape[0]))
            y = self.proposal.sample(x[i], rng)
            if self._accept(x, i, y, rng):
                kept.append(y)
        arr = np.array(kept, dtype=np.int64).reshape(len(kept), x.shape[1])
        columns = data.columns if isinstance(data, pd.DataFrame) else None
        records = pd.DataFrame(arr, columns=columns)
        return PrivacyTestResult(
            records=records,
            n_candidates=n_candidates,
            n_passed=len(kept),
            pass_rate=len(kept) / n_candidates,
            epsilon=self.epsilon,
            delta=self.delta,
            epsilon_total=n_candidates * self.epsilon,
            delta_total=min(1.0, n_candidates * self.delta),
        )

    def output_probabilities(
        self, data: pd.DataFrame | np.ndarray, universe: np.ndarray, *, check_size: bool = True
    ) -> np.ndarray:
        r"""Exact :math:`\Pr\{\mathcal F(D) = y\}` of one invocation for each row of ``universe``.

        Lemma 1, eq. (5): :math:`\frac{1}{|D|}\sum_{s \in D} p_s(y)\,\mathrm{pt}(D, I_s(y), y)`.
        The probability of no output is one minus the sum. ``check_size=False`` skips the
        :math:`|D| > k` requirement (for exploring outside the sufficient domain).
        """
        if check_size:
            x = self._codes(data)
        else:
            x = np.asarray(
                data.to_numpy() if isinstance(data, pd.DataFrame) else data, dtype=np.int64
            )
        u = np.asarray(universe, dtype=np.int64)
        out = np.empty(u.shape[0])
        for r, y in enumerate(u):
            p = self.proposal.probability(x, y)
            cells = self.partition(p)
            _, inverse, sizes = np.unique(cells, return_inverse=True, return_counts=True)
            out[r] = float((p * self.pass_probability(sizes[inverse])).sum() / x.shape[0])
        return out
