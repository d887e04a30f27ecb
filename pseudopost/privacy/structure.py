r"""Differentially private choices of a whole-file synthesizer's structure (guide: *Whole files*).

Before the synthesis mechanism runs, a whole-file release fixes its structure: a numeric
column's support (bounds), its bins and knots (quantiles), its spikes (noisy shares), and the
levels of a categorical column that no codebook lists. When these are read from the confidential
data they are paid for from a stated ``structure_epsilon`` by the mechanisms below; their charges
(:class:`StructureCharge`) add up with the mechanism's epsilon by basic composition.

Every mechanism here is stated for the neighbouring relation **add/remove one record**:
:math:`D \simeq D'` when one is the other with one record added.

* Quantiles: the exponential mechanism (McSherry & Talwar 2007; for quantiles Smith 2011) over a
  public, data-independent candidate grid (:func:`candidate_grid`); pure
  :math:`\varepsilon`-DP per quantile, :math:`k\varepsilon` for :math:`k` of them
  (:func:`quantile_epsilon`).
* Bounds: two extreme quantiles (:func:`dp_bounds`, :func:`dp_extreme`), or the support of a
  thresholded Laplace histogram over public logarithmic cells (:func:`dp_support`, the
  structure stage's default); values beyond them are top/bottom-coded to them by the caller.
* Counts and shares (spikes, favourite values): the Laplace mechanism (Dwork, McSherry, Nissim &
  Smith 2006), pure :math:`\varepsilon = \Delta_1 / b` (:func:`laplace_epsilon`).
* A many-level column's parent: the exponential mechanism over public candidate columns
  (:func:`dp_parent`), scored by the plug-in conditional log-likelihood with a public
  sensitivity bound (:func:`parent_utility`).
* Levels: Laplace partition selection with a threshold (Korolova et al. 2009; Gopi et al. 2020;
  Desfontaines, Voss, Gipson & Mandayam 2022), :math:`(\varepsilon, \delta)`-DP when each record
  holds one level (:func:`partition_threshold`).

Randomness comes only from the caller's :class:`numpy.random.Generator` ``rng``, which is drawn
from directly (and so advanced): two calls with one Generator get independent noise, and the same
seed gives the same release. Draws are in floating point; the mechanisms do not defend against
floating-point attacks on the Laplace or exponential samplers (Mironov 2012; Ilvento 2020).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from scipy import special

from pseudopost._validation import (
    check_in_interval,
    check_positive,
    check_positive_int,
    check_real,
)
from pseudopost.models.file.screen import OUTER_BOUND as _SCREEN_BOUND
from pseudopost.privacy import noise

__all__ = [
    "OUTER_BOUND",
    "StructureCharge",
    "SupportBounds",
    "candidate_grid",
    "compose",
    "dp_bounds",
    "dp_extreme",
    "dp_parent",
    "dp_quantile",
    "dp_quantiles",
    "dp_support",
    "extreme_probabilities",
    "extreme_rank",
    "extreme_utility",
    "laplace_epsilon",
    "noisy_count",
    "parent_probabilities",
    "parent_sensitivity",
    "parent_utility",
    "partition_selection",
    "partition_threshold",
    "quantile_epsilon",
    "quantile_probabilities",
    "quantile_utility",
    "support_cells",
    "support_probabilities",
    "support_resolution",
    "support_threshold",
]

OUTER_BOUND: float = _SCREEN_BOUND  # the value screen_frame refuses beyond, before any work
"""Public outer range :math:`|x| \\le 10^{15}` of any numeric column without a declared range."""

#: public cap on a file's records, bounding the parent score's sensitivity (parent_sensitivity)
MAX_RECORDS = 10**9
_DENSE_INTEGERS = 2000  # every integer in [-2000, 2000] is a candidate of an integer column
_SMALLEST_MAGNITUDE_DECADE = -6  # the continuous grid's smallest nonzero |c| is 10**-6
#: the smallest nonzero magnitude of the public candidate grids and support cells: every value
#: in :math:`[-10^{-6}, 10^{-6})` is in the one cell holding 0 (:func:`support_cells`), and the
#: structure stage refuses a column whose nonzero values are mostly below it
SMALLEST_MAGNITUDE: float = 10.0**_SMALLEST_MAGNITUDE_DECADE


# --------------------------------------------------------------------------- validation helpers


def _check_rng(rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"The 'rng' argument must be a numpy.random.Generator (e.g. np.random.default_rng(1))."
            f" Got {rng!r} of type {type(rng).__name__} instead."
        )
    return rng


def _float_array(x: object, name: str) -> np.ndarray:
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            f"The '{name}' argument must be a 1-d array of real numbers. Got {type(x).__name__}."
        ) from None


def _check_values(values: object) -> np.ndarray:
    """1-d finite floats, returned as a float64 array (the input is not modified)."""
    v = _float_array(values, "values")
    if v.ndim != 1:
        raise ValueError(f"The 'values' argument must be 1-d. Got an array of shape {v.shape}.")
    bad = ~np.isfinite(v)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"The 'values' argument must hold finite values (no NaN or inf); values[{i}] is {v[i]}"
            f" ({int(bad.sum())} non-finite value(s) in all). Drop or code missing values first."
        )
    return v


def _check_candidates(candidates: object) -> np.ndarray:
    """A non-empty, finite, strictly increasing 1-d float array."""
    c = _float_array(candidates, "candidates")
    if c.ndim != 1 or c.size == 0:
        raise ValueError(
            f"The 'candidates' argument must be a non-empty 1-d array. Got shape {c.shape}."
        )
    if not np.isfinite(c).all():
        raise ValueError(
            f"The 'candidates' argument must hold finite values. Got {c[~np.isfinite(c)][:5]}."
        )
    steps = np.diff(c)
    if (steps <= 0).any():
        i = int(np.flatnonzero(steps <= 0)[0])
        raise ValueError(
            f"The 'candidates' argument must be sorted strictly increasing (see candidate_grid). "
            f"Got candidates[{i}] = {c[i]} followed by {c[i + 1]}."
        )
    return c


def _check_q(q: object, name: str = "q") -> float:
    return check_in_interval(q, name, 0.0, 1.0, closed="both")


def _check_qs(qs: object) -> np.ndarray:
    try:
        a = np.asarray(qs, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(
            f"The 'qs' argument must be a 1-d array of probabilities. Got {qs!r}."
        ) from None
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"The 'qs' argument must be a non-empty 1-d array. Got {qs!r}.")
    if not (np.isfinite(a).all() and (a >= 0).all() and (a <= 1).all()):
        raise ValueError(f"The 'qs' argument must hold values in the interval [0, 1]. Got {qs!r}.")
    return a


def _check_count(count: object, name: str = "count") -> int:
    if isinstance(count, (bool, np.bool_)) or not isinstance(count, (int, np.integer)):
        raise TypeError(f"The '{name}' argument must be an integer. Got {count!r}.")
    if count < 0:
        raise ValueError(f"The '{name}' argument must be a non-negative integer. Got {count}.")
    return int(count)


# --------------------------------------------------------------------------- candidate grids


def candidate_grid(
    integer: bool, low: float = -OUTER_BOUND, high: float = OUTER_BOUND, per_decade: int = 48
) -> np.ndarray:
    r"""Public candidate values for DP quantiles: sorted, unique, within [low, high].

    The grid depends only on its arguments, never on data, so choosing among its points costs
    only the mechanism's epsilon.

    * ``integer=False``: 0 and :math:`\pm 10^{j/m}` for :math:`m` = ``per_decade`` and
      :math:`10^{-6} \le 10^{j/m} \le 10^{15}` (``OUTER_BOUND``); neighbouring points differ by
      the relative step

      .. math:: 10^{1/m} - 1 \approx 4.9\,\% \quad (m = 48),

      below :math:`10^{-6}` only 0 is left.
    * ``integer=True``: every integer in :math:`[\max(low, -2000), \min(high, 2000)]` and, for
      :math:`|x| > 2000`, the points of the grid above rounded to integers (deduplicated).

    The grid is clipped to ``[low, high]`` and ``low`` and ``high`` themselves are added when
    finite (rounded inwards to integers, ``ceil(low)`` and ``floor(high)``, when
    ``integer=True``). Infinite ``low``/``high`` mean the public outer range
    :math:`\pm 10^{15}`.

    Parameters
    ----------
    integer : bool
        Whether the column holds integers.
    low, high : float
        Declared (public) range of the column; default the outer range.
    per_decade : int
        Points per decade of the logarithmic part (default 48).

    Returns
    -------
    numpy.ndarray
        Float64 candidates, strictly increasing.
    """
    if not isinstance(integer, (bool, np.bool_)):
        raise TypeError(f"The 'integer' parameter must be a bool. Got {integer!r}.")
    lo, hi = check_real(low, "low"), check_real(high, "high")
    if lo > hi:
        raise ValueError(
            f"The 'low' parameter must be <= 'high'. Got low={low!r} and high={high!r}."
        )
    m = check_positive_int(per_decade, "per_decade")
    exponents = np.arange(_SMALLEST_MAGNITUDE_DECADE * m, 15 * m + 1) / m
    magnitudes = 10.0**exponents  # 10**15.0 is exactly OUTER_BOUND
    if integer:
        lo_end = math.ceil(lo) if math.isfinite(lo) else lo
        hi_end = math.floor(hi) if math.isfinite(hi) else hi
        dense = np.arange(max(lo_end, -_DENSE_INTEGERS), min(hi_end, _DENSE_INTEGERS) + 1)
        far = np.round(magnitudes[magnitudes > _DENSE_INTEGERS])
        pieces = [dense.astype(float), far, -far]
    else:
        lo_end, hi_end = lo, hi
        pieces = [np.zeros(1), magnitudes, -magnitudes]
    grid = np.concatenate(pieces)
    grid = grid[(grid >= lo_end) & (grid <= hi_end)]
    ends = [x for x in (lo_end, hi_end) if math.isfinite(x) and lo_end <= x <= hi_end]
    grid = np.unique(np.concatenate([grid, np.asarray(ends, dtype=float)]))
    if grid.size == 0:
        raise ValueError(
            f"No integer lies in [low, high] = [{low!r}, {high!r}]; widen the range or pass "
            f"integer=False."
        )
    return grid


# --------------------------------------------------------------------------- quantiles


def _rank_counts(values: np.ndarray, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:math:`(\\#\\{x_i < c\\}, \\#\\{x_i \\le c\\})` for every candidate (one sort)."""
    ordered = np.sort(values)
    below = np.searchsorted(ordered, candidates, side="left")
    at_or_below = np.searchsorted(ordered, candidates, side="right")
    return below.astype(float), at_or_below.astype(float)


def _utility(below: np.ndarray, at_or_below: np.ndarray, n: int, q: float) -> np.ndarray:
    target = q * n
    return -np.maximum(np.maximum(below - target, target - at_or_below), 0.0)


def _log_weights(utility: np.ndarray, epsilon: float) -> np.ndarray:
    # exponential mechanism with a sensitivity-1 utility: log P(c) = eps u(c) / 2 - log Z
    return 0.5 * epsilon * utility


def quantile_utility(values: np.ndarray, q: float, candidates: np.ndarray) -> np.ndarray:
    r"""Utility of each candidate as the ``q``-quantile of ``values``.

    With :math:`L(c) = \#\{i: x_i < c\}`, :math:`R(c) = \#\{i: x_i \le c\}` and :math:`n`
    records, the utility is minus the distance from :math:`qn` to the rank interval
    :math:`[L(c), R(c)]` that :math:`c` covers:

    .. math:: u(c) = -\max\{L(c) - qn,\; qn - R(c),\; 0\}.

    Where no value equals :math:`c` (:math:`L = R`) this is :math:`-|R(c) - qn|`, the usual
    rank-error score; where values tie at :math:`c` every rank they cover scores 0, so a
    candidate that *is* the quantile of integer or heaped data is never beaten by one outside
    the data (with :math:`-|R(c) - qn|` alone, the smallest age 18 held by 278 of 20,000
    records scores -228 at :math:`q = 0.0025` while every candidate below 18 scores -50).

    Sensitivity (add/remove one record, :math:`q n` moving by :math:`q`): each of
    :math:`L - qn` and :math:`qn - R` moves by at most :math:`\max(q, 1 - q)`, and so does
    their maximum with 0, so :math:`\Delta u \le 1`.

    Parameters
    ----------
    values : array_like
        1-d finite values (may be empty, then every utility is 0; may lie outside the
        candidates).
    q : float
        Quantile level in [0, 1].
    candidates : array_like
        Strictly increasing finite candidates (see :func:`candidate_grid`).

    Returns
    -------
    numpy.ndarray
        :math:`u(c)` for every candidate, all :math:`\le 0`.
    """
    v, c, level = _check_values(values), _check_candidates(candidates), _check_q(q)
    return _utility(*_rank_counts(v, c), v.size, level)


def quantile_probabilities(
    values: np.ndarray, q: float, candidates: np.ndarray, epsilon: float
) -> np.ndarray:
    r"""Exact output distribution of :func:`dp_quantile` (the exponential mechanism).

    .. math:: P_D(c) = \frac{\exp(\varepsilon\, u_D(c) / 2)}
                            {\sum_{c'} \exp(\varepsilon\, u_D(c') / 2)},

    with :math:`u` of :func:`quantile_utility`, computed in log space (log-sum-exp). With empty
    ``values`` every utility is 0 and the distribution is uniform over the candidates.

    Privacy (McSherry & Talwar 2007, Thm 6; for quantiles Smith 2011): since
    :math:`\Delta u \le 1` under add/remove one record, :math:`P_D(c) \le e^{\varepsilon}
    P_{D'}(c)` for every candidate: pure :math:`\varepsilon`-DP.

    Returns
    -------
    numpy.ndarray
        Probabilities over ``candidates``, summing to 1.
    """
    eps = check_positive(epsilon, "epsilon")
    logits = _log_weights(quantile_utility(values, q, candidates), eps)
    return np.exp(logits - special.logsumexp(logits))


def _draw(logits: np.ndarray, rng: np.random.Generator) -> int:
    # Gumbel-max: argmax_c (log w_c + G_c), G_c iid Gumbel(0, 1), is distributed as w / sum(w)
    return int(np.argmax(logits + rng.gumbel(size=logits.size)))


def dp_quantile(
    values: np.ndarray, q: float, candidates: np.ndarray, epsilon: float, rng: np.random.Generator
) -> float:
    r"""One draw of the exponential mechanism for the ``q``-quantile over public candidates.

    Returns :math:`c` with probability :math:`P_D(c) \propto \exp(\varepsilon\, u_D(c)/2)`
    (:func:`quantile_probabilities`), sampled by the Gumbel-max trick
    :math:`\arg\max_c\, \varepsilon u_D(c)/2 + G_c` with :math:`G_c` iid Gumbel(0, 1).

    Privacy: pure :math:`\varepsilon`-DP under add/remove one record (McSherry & Talwar 2007;
    Smith 2011); the candidates must be public (data-independent). Empty ``values`` give a
    uniform draw from the candidates.

    Parameters
    ----------
    values, q, candidates
        As in :func:`quantile_utility`.
    epsilon : float
        Finite > 0.
    rng : numpy.random.Generator
        Source of randomness (advanced by the call).

    Returns
    -------
    float
        The chosen candidate.
    """
    eps = check_positive(epsilon, "epsilon")
    gen = _check_rng(rng)
    c = _check_candidates(candidates)
    logits = _log_weights(quantile_utility(values, q, c), eps)
    return float(c[_draw(logits, gen)])


def dp_quantiles(
    values: np.ndarray,
    qs: Sequence[float],
    candidates: np.ndarray,
    epsilon: float,
    rng: np.random.Generator,
) -> np.ndarray:
    r"""Several DP quantiles, ``epsilon`` split equally over them, returned sorted.

    Each of the :math:`k` levels is one :func:`dp_quantile` draw at
    :math:`\varepsilon / k`; by basic composition (Dwork et al. 2006) the whole is
    :math:`\varepsilon`-DP under add/remove one record (:func:`quantile_epsilon`). Sorting the
    draws is post-processing. ``values`` are sorted once and ranked against the candidates with
    :func:`numpy.searchsorted`, so the cost is :math:`O(n \log n + k\,|C| \log n)`.

    Returns
    -------
    numpy.ndarray
        :math:`k` = ``len(qs)`` candidates in increasing order (the :math:`j`-th smallest draw,
        not necessarily the draw for ``qs[j]``).
    """
    eps = check_positive(epsilon, "epsilon")
    gen = _check_rng(rng)
    levels = _check_qs(qs)
    v, c = _check_values(values), _check_candidates(candidates)
    below, at_or_below = _rank_counts(v, c)
    eps_each = eps / levels.size
    picks = [
        c[_draw(_log_weights(_utility(below, at_or_below, v.size, q), eps_each), gen)]
        for q in levels
    ]
    return np.sort(np.asarray(picks, dtype=float))


def dp_bounds(
    values: np.ndarray,
    candidates: np.ndarray,
    epsilon: float,
    rng: np.random.Generator,
    *,
    tail: float = 0.0025,
) -> tuple[float, float]:
    r"""DP support of a numeric column: the ``tail`` and ``1 - tail`` quantiles.

    .. math:: (\ell, h) = \operatorname{sort}\big(\mathcal{M}_{\varepsilon/2}(D, \tau),
              \mathcal{M}_{\varepsilon/2}(D, 1 - \tau)\big),

    :math:`\mathcal{M}` the exponential mechanism of :func:`dp_quantile`, :math:`\tau` =
    ``tail``; :math:`\ell \le h` always. Pure :math:`\varepsilon`-DP under add/remove one record
    (two draws at :math:`\varepsilon/2`, basic composition).

    The caller top/bottom-codes values beyond the bounds to them (:math:`x \mapsto
    \min(\max(x, \ell), h)`) and models the column on :math:`[\ell, h]`; for a topcoded or
    open-ended column that coding is part of the release and must be stated.

    Accuracy. Every candidate outside the data scores :math:`-\tau n`, so the bounds are
    reliable only when :math:`\tau n` is well above :math:`(2/\varepsilon_q)\ln |C_{out}|`,
    with :math:`\varepsilon_q = \varepsilon/2` and :math:`|C_{out}|` the number of candidates
    beyond the data; otherwise they fall anywhere among those candidates (check with
    :func:`quantile_probabilities`). A declared range (``candidate_grid(low=..., high=...)``)
    shrinks :math:`|C_{out}|`.

    Parameters
    ----------
    values, candidates
        As in :func:`quantile_utility`.
    epsilon : float
        Total for both bounds, finite > 0.
    rng : numpy.random.Generator
        Source of randomness (advanced by the call).
    tail : float
        Tail probability in [0, 0.5].

    Returns
    -------
    tuple of float
        ``(low, high)`` with ``low <= high``.
    """
    level = check_in_interval(tail, "tail", 0.0, 0.5, closed="both")
    low, high = dp_quantiles(values, [level, 1.0 - level], candidates, epsilon, rng)
    return float(low), float(high)


# --------------------------------------------------------------------------- counts and levels


def extreme_utility(values: np.ndarray, side: str, rank: float, candidates: np.ndarray):
    r"""The utility of a bound at absolute rank ``rank`` from one ``side``:
    :math:`u(c) = -\max\{\#\{x < c\} - t,\ t - \#\{x \le c\},\ 0\}` for ``"low"`` and the same
    with :math:`>`, :math:`\ge` for ``"high"`` (:math:`t` = ``rank``). Unlike a quantile's, the
    target is a count, not a share of the private n; adding or removing a record moves each
    count by at most 1, so the sensitivity is at most 1."""
    x = _check_values(values)
    c = _check_candidates(candidates)
    if side not in ("low", "high"):
        raise ValueError(f"The 'side' argument must be 'low' or 'high'. Got {side!r}.")
    if not (isinstance(rank, (int, float)) and math.isfinite(rank) and rank >= 0):
        raise ValueError(f"The 'rank' argument must be a finite number >= 0. Got {rank!r}.")
    if side == "low":
        strict, inclusive = _rank_counts(x, c)
    else:
        below, at_or_below = _rank_counts(x, c)
        strict, inclusive = x.size - at_or_below, x.size - below
    return -np.maximum(np.maximum(strict - rank, rank - inclusive), 0.0)


def extreme_probabilities(values, side: str, rank: float, candidates, epsilon: float):
    """The exact output distribution of :func:`dp_extreme` (exponential mechanism, log space)."""
    eps = check_positive(epsilon, "epsilon")
    logits = _log_weights(extreme_utility(values, side, rank, candidates), eps)
    return np.exp(logits - special.logsumexp(logits))


def extreme_rank(n_candidates: int, epsilon: float, margin: float = 1.0) -> float:
    r"""The default rank target :math:`t = 2(\ln K + m)/arepsilon` of :func:`dp_extreme`
    over :math:`K` candidates: every candidate beyond the data scores :math:`-t`, so the
    :math:`K` of them together weigh at most :math:`e^{-m}` of one candidate at the target;
    the bound then lands beyond the data with probability about :math:`e^{-m}/(1 + e^{-m})`
    and codes about t records to itself (a DP top-code) instead."""
    return 2.0 * (math.log(max(int(n_candidates), 1)) + margin) / check_positive(epsilon, "epsilon")


def dp_extreme(
    values, side: str, candidates, epsilon: float, rng: np.random.Generator,
    rank: float | None = None,
) -> float:  # fmt: skip
    """A lower (``side="low"``) or upper bound at absolute rank ``rank`` from that side
    (default :func:`extreme_rank`) by the exponential mechanism over public ``candidates``
    (:func:`extreme_utility`): pure epsilon-DP for add/remove neighbours (McSherry & Talwar
    2007; Smith 2011's quantiles with a count target). Values beyond the bound are coded to it
    by the caller."""
    c = _check_candidates(candidates)
    eps = check_positive(epsilon, "epsilon")
    t = extreme_rank(c.size, eps) if rank is None else rank
    logits = _log_weights(extreme_utility(values, side, t, c), eps)
    return float(c[_draw(logits, _check_rng(rng))])


#: cells per decade of :func:`support_cells` (neighbouring edges differ by a factor 10^0.1)
SUPPORT_CELLS_PER_DECADE = 10
#: an end of :func:`dp_support` is widened by one cell when its outermost passing cell's noisy
#: count is at least this many thresholds (the tail ends abruptly there: more may lie beyond)
SUPPORT_HEAVY = 3.0
#: the margin of :func:`dp_support`'s tail threshold (``margin_next``): a tail's cell beside the
#: support is taken when its noisy count reaches :math:`(\ln 2 + m)/\varepsilon`
SUPPORT_TAIL_MARGIN = 4.0
#: :func:`support_resolution`'s choices: cells per decade, and the largest share of the
#: records a cell's threshold may be for that resolution
_RESOLUTIONS = ((10, 0.02), (5, 0.05), (2, 0.1))


def support_cells(per_decade: int = SUPPORT_CELLS_PER_DECADE, integer: bool = False) -> np.ndarray:
    r"""Public edges of :func:`dp_support`'s cells: :math:`\pm 10^{j/m}` for
    :math:`10^{-6} \le 10^{j/m} \le 10^{15}` (m = ``per_decade``) and one cell
    :math:`[-10^{-6}, 10^{-6})` holding 0; for an ``integer`` column the edges inside
    :math:`(-10, 10)` are the integers instead, at every resolution (one cell per integer, so
    a 0/1 or 1-5 column's support is exactly the values whose cells pass, never a value it
    cannot hold: logarithmic cells [1, 10) at a small budget gave 0/1 columns a support of
    0-9, whose empty levels the model then drew). A thin tail of small integers is then coded
    to the support's edge rather than kept inside a wide cell. Cells are half-open,
    :math:`[e_k, e_{k+1})`. They depend on nothing but the arguments."""
    m = check_positive_int(per_decade, "per_decade")
    pos = 10.0 ** (np.arange(_SMALLEST_MAGNITUDE_DECADE * m, 15 * m + 1) / m)
    edges = np.concatenate([-pos[::-1], pos])
    if integer:
        edges = np.union1d(edges[np.abs(edges) >= 10.0], np.arange(-10.0, 11.0))
    return edges


def support_gap(per_decade: int) -> int:
    """Failing cells :func:`dp_support` steps over between passing ones: one decade's worth,
    ``per_decade`` (a tail of real values thins out but is seldom a decade empty)."""
    return check_positive_int(per_decade, "per_decade")


def _support_counts(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    j = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, edges.size - 2)
    return np.bincount(j, minlength=edges.size - 1).astype(np.float64)


def support_threshold(n_cells: int, epsilon: float, margin: float = 3.0) -> float:
    r"""The pass threshold :math:`\tau = (\ln K + m)/\varepsilon` of :func:`dp_support` over
    K cells: an empty cell passes with probability :math:`\tfrac12 e^{-\varepsilon\tau}`, so
    all K empty cells together pass with probability at most about :math:`\tfrac12 e^{-m}`."""
    return (math.log(max(int(n_cells), 1)) + margin) / check_positive(epsilon, "epsilon")


def support_resolution(noisy_n: float, epsilon: float, margin: float = 5.0) -> int:
    r"""Cells per decade for :func:`dp_support` from a column's noisy count :math:`\tilde n`
    (already released) and the support's epsilon: the finest of 10, 5 and 2 whose threshold
    :math:`\tau` is at most 2 %, 5 % or 10 % of :math:`\tilde n`, else 1. A cell must hold about
    :math:`\tau` records to be seen, so at a small budget per column (many columns, few
    records) the cells widen until the tails' cells can hold that many. Post-processing of
    :math:`\tilde n`."""
    eps = check_positive(epsilon, "epsilon")
    for m, share in _RESOLUTIONS:
        if support_threshold(support_cells(m).size - 1, eps, margin) <= share * max(noisy_n, 0.0):
            return m
    return 1


def _connected(
    passing: np.ndarray, weak: np.ndarray, edges: np.ndarray, start: int, gap: int
) -> tuple[int, int]:
    """The lowest and highest passing cells reached from ``start`` by steps over at most
    ``gap`` cells in a row that fail and are not ``weak`` (at the tail's lower threshold);
    cells inside [-1, 1] are crossed freely (they are empty in a column of ordinary
    magnitudes whose values take both signs)."""
    free = np.maximum(np.abs(edges[:-1]), np.abs(edges[1:])) <= 1.0
    ends = []
    for step in (-1, 1):
        end, run, j = start, 0, start + step
        while 0 <= j < passing.size:
            if passing[j]:
                end, run = j, 0
            elif not (free[j] or weak[j]):
                run += 1
                if run > gap:
                    break
            j += step
        ends.append(end)
    return ends[0], ends[1]


#: the widest run of adjacent cells :func:`_unlocated_run` considers: ten, the unit cells of a
#: 0-9 score (300 records of a uniform 0-9 score at support epsilon 0.05, 200 draws: at most
#: four answers inside a guess of at most 4 cells, 28 % of the values on average; at 10, 66 %,
#: and at least 90 % of them in 88 draws; tests/privacy/test_structure.py)
UNLOCATED_RUN = 10
#: :func:`_unlocated_run` guesses among cells of magnitude at most this (a public prior: a
#: column whose values reach past a million holds them in a wide cell of its own)
UNLOCATED_MAGNITUDE = 1e6


def _unlocated_run(
    noisy: np.ndarray, edges: np.ndarray, widest: int = UNLOCATED_RUN,
    magnitude: float = UNLOCATED_MAGNITUDE,
) -> tuple[int, int]:  # fmt: skip
    r"""First and last cell of the run of at most ``widest`` adjacent cells of magnitude at most
    ``magnitude`` whose noisy counts have the largest sum over the square root of its width,
    :math:`\max_{w, k} \sum_{j=k}^{k+w-1} \tilde c_j / \sqrt w`: :func:`dp_support`'s guess
    when no cell passes.

    A small column's values fill a few adjacent cells (a 0/1 answer two unit cells, a stage
    1-4 four), none of which reaches the threshold alone, while the largest of K cells of pure
    noise is about :math:`\ln K/\varepsilon`; the sum over w cells grows w times in signal and
    about :math:`\sqrt w` times in noise, and leaving out the cells beyond a million in
    magnitude (a public prior) halves K. Simulated at the support epsilon 0.024-0.03 of a
    418-record, 20-column file (``survival::pbc``, 2,000 draws each; runs of at most 4 cells),
    the guess holds the
    median of a 0/1 column in 87 % of draws (the single largest cell it replaced: 38 %, and
    the file's synthetic 0/1 answers were :math:`10^{10}`), of a stage 1-4 in 95 % (28 %), of
    300 log-normal amounts in 97 % (85 %), of ages 20-79 in 99 % (99 %); a guess a hundred
    times beyond the data, 0.6-4 % of draws (single cells: up to 10 %). Post-processing of the
    noisy counts."""
    mag = np.maximum(np.abs(edges[:-1]), np.abs(edges[1:]))
    far = (mag > magnitude).astype(np.float64)
    if far.all():
        far[:] = 0.0
    best, out = -np.inf, (0, 0)
    for w in range(1, min(int(widest), noisy.size) + 1):
        sums = np.convolve(noisy, np.ones(w), "valid") / math.sqrt(w)
        sums = np.where(np.convolve(far, np.ones(w), "valid") == 0.0, sums, -np.inf)
        k = int(np.argmax(sums))
        if sums[k] > best:
            best, out = float(sums[k]), (k, k + w - 1)
    return out


def _support_from(
    noisy: np.ndarray, edges: np.ndarray, tau: float, heavy: float, tau_next: float, gap: int
):
    passing = noisy >= tau
    z = int(np.searchsorted(edges, 0.0, side="right") - 1)  # the cell holding 0
    if passing.any():
        # the passing cells connected to the largest one (the bulk; not the cell of 0, a spike,
        # when another passes) across gaps of at most ``gap`` cells, so that a lone empty cell
        # passing far out cannot stretch the support to it; a cell at twice the threshold
        # (which an empty cell passes with probability about e^{-2(ln K + 5)}) is kept wherever
        # it lies, a separate cluster of the data
        start = passing.copy()
        if start.sum() > 1:
            start[z] = False
        bulk = int(np.argmax(np.where(start, noisy, -np.inf)))
        first, last = _connected(passing, noisy >= tau_next, edges, bulk, gap)
        strong = np.flatnonzero(noisy >= 2.0 * tau)
        if strong.size:
            first, last = min(first, int(strong[0])), max(last, int(strong[-1]))
    else:  # no cell passes (a small file): the run of cells of the largest scaled noisy sum
        first, last = _unlocated_run(noisy, edges)
        bulk = first + int(np.argmax(noisy[first : last + 1]))
    # an integer column's unit cells (one per integer inside (-10, 10)); a value of the sign
    # the bulk does not have (-1 in a 0/1 or an hours column) is a value of another kind, so a
    # negative unit cell next to a nonnegative bulk joins only at the first threshold tau
    unit = (np.diff(edges) == 1.0) & (np.abs(edges[:-1]) < 10.0)
    positive = bool(edges[bulk] >= 0.0)

    def reaches(k: int) -> bool:
        other_sign = unit[k] and positive and edges[k + 1] <= 0.0
        return bool(noisy[k] >= (tau if other_sign else tau_next))

    # a tail goes on while the next cell out reaches the lower threshold tau_next
    while first > 0 and reaches(first - 1):
        first -= 1
    while last < noisy.size - 1 and reaches(last + 1):
        last += 1
    # the cell holding 0 is next to the smallest magnitudes of either sign (the decades between
    # them and 10^-6 are empty in any column of ordinary magnitudes)
    if first > z and noisy[z] >= tau_next:
        first = z
    if last < z and noisy[z] >= tau_next:
        last = z
    # a nonnegative integer column whose support starts among the small integers (at most 10):
    # the unit cells from 0 up to it, one block of r cells, join when their noisy counts sum to
    # sqrt(r) tau_next (years of experience 0-8, 600 of 4,507 records spread over nine cells
    # that each failed tau_next, were coded to 9; an empty block passes with probability at
    # most that of one empty cell, 0.46 % for r = 1 down to 0.1 % for r = 10)
    if positive and unit[z] and z < first and edges[first] <= 10.0:  # unit[z]: z is [0, 1)
        if noisy[z:first].sum() >= math.sqrt(first - z) * tau_next:
            first = z
    # the cell [-1e-6, 1e-6) holding 0 ends at 0 on a side with no cell of that sign
    straddles = edges[z] < 0.0 < edges[z + 1]
    lo_zero, hi_zero = straddles and first == z, straddles and last == z
    # widened: a heavy outermost cell, if logarithmic and at most a factor 10^0.2 wide (not a
    # unit cell of an integer column, whose support is then exactly its values)
    fine = edges[-1] / edges[-2] <= 1.6

    def log_cell(k: int) -> bool:
        return (
            fine
            and edges[k] * edges[k + 1] > 0
            and min(abs(edges[k]), abs(edges[k + 1])) >= 10.0 ** (_SMALLEST_MAGNITUDE_DECADE)
            and (edges[k + 1] - edges[k] != 1.0 or abs(edges[k]) >= 10.0)
        )

    def abrupt(k: int, inner: int) -> bool:  # heavy, and not yet falling off towards the end
        return noisy[k] >= heavy * tau_next and noisy[k] >= 0.5 * noisy[inner]

    if log_cell(first) and first < last and abrupt(first, first + 1):
        first = max(first - 1, 0)
    if log_cell(last) and last > first and abrupt(last, last - 1):
        last = min(last + 1, noisy.size - 1)
    lo, hi = float(edges[first]), float(edges[last + 1])
    return (0.0 if lo_zero else lo), (0.0 if hi_zero else hi)


class SupportBounds(tuple):
    """``(low, high)`` of :func:`dp_support` (unpacks as a pair), with ``located``: whether some
    cell's noisy count reached the pass threshold. When none did (a small or sparse column at
    its budget), the support is a guess, the run of adjacent cells of :func:`_unlocated_run`,
    which among K cells of Laplace noise of scale :math:`1/\varepsilon` can land on empty
    cells: the 85 positive capital losses of a 2,000-record Adult sample, at the support's
    epsilon 0.033 and one cell per decade, are missed in about two draws of three (the signal
    is under three noise scales). Post-processing of the same noisy counts: no budget."""

    located: bool

    def __new__(cls, low: float, high: float, located: bool) -> SupportBounds:
        out = super().__new__(cls, (float(low), float(high)))
        out.located = bool(located)
        return out


def dp_support(
    values, epsilon: float, rng: np.random.Generator, *, per_decade: int = SUPPORT_CELLS_PER_DECADE,
    integer: bool = False, heavy: float = SUPPORT_HEAVY, margin: float = 5.0,
    margin_next: float = SUPPORT_TAIL_MARGIN,
) -> SupportBounds:  # fmt: skip
    r"""A column's support :math:`[e_{\rm first}, e_{\rm last + 1})` from one Laplace
    histogram over the public cells of :func:`support_cells` (a :class:`SupportBounds`: the
    pair, and whether a cell passed).

    Each record falls in one cell, so the vector of counts has L1 sensitivity 1 under
    add/remove and the noisy counts :math:`\tilde c_k = c_k + \mathrm{Lap}(1/\varepsilon)`
    are pure :math:`\varepsilon`-DP (Dwork, McSherry, Nissim & Smith 2006). The rest is
    post-processing: the cells whose noisy count reaches :func:`support_threshold` over all K
    cells with ``margin`` 5 (an empty cell anywhere passes with probability about
    :math:`\tfrac12 e^{-5}` = 0.3 %), and of them the
    ones connected to the largest (the bulk) across runs of at most one decade of failing cells
    (:func:`support_gap`; cells inside [-1, 1], or reaching the lower threshold below, crossed
    freely; the cell of 0 is not the bulk when another cell passes; when none passes, the run
    of up to four adjacent cells, of magnitude at most a million, of :func:`_unlocated_run`), so an empty cell that passes
    far from the data cannot stretch the support to it (a CPS wage column's support reached
    :math:`10^{11}` so, its synthetic wages with it), while a cell at twice the threshold is
    kept wherever it lies (a separate cluster);
    then each end grows one cell at a time while the next cell out reaches the threshold of
    two cells (the cell holding 0 counting as next to the first cell of either sign), :math:`(\ln 2 + 4)/\varepsilon` (``margin_next``; a tail is looked for only next to the data,
    where an empty cell passes with probability :math:`\tfrac12 e^{-4}` per step, rather than
    anywhere among K cells), except that on an ``integer`` column a unit cell of the sign the
    bulk does not have (-1 beside a nonnegative bulk) needs the first threshold; on a
    nonnegative ``integer`` column whose support starts at 1 to 10, the r unit cells from 0 up
    to it join as one block when their noisy counts sum to :math:`\sqrt r` times the lower
    threshold (no cell alone need reach it); with cells of at most a factor
    :math:`10^{0.2}`, an end whose outermost cell holds at least ``heavy`` of those thresholds and at least half its inner
    neighbour's noisy count is widened by one cell more (the tail stops abruptly there rather
    than thinning out, so more of it may lie just beyond). Unlike an exponential-
    mechanism quantile at a small count target (:func:`dp_extreme`), whose failure at a small
    epsilon is a bound anywhere among its candidates (inside the data as readily as far beyond
    it), a cell fails gracefully: a tail thinner than the threshold per cell is coded to the
    support's edge, or the margin is one empty cell. Values beyond the support are coded to it
    by the caller."""
    x = _check_values(values)
    eps = check_positive(epsilon, "epsilon")
    edges = support_cells(per_decade, integer)
    noisy = _support_counts(x, edges) + _check_rng(rng).laplace(0.0, 1.0 / eps, edges.size - 1)
    tau = support_threshold(edges.size - 1, eps, margin)
    tau_next = support_threshold(2, eps, margin_next)
    lo, hi = _support_from(noisy, edges, tau, heavy, tau_next, support_gap(per_decade))
    return SupportBounds(lo, hi, bool((noisy >= tau).any()))


def support_probabilities(
    values, epsilon: float, *, per_decade: int = 1, integer: bool = False,
    heavy: float = SUPPORT_HEAVY, margin: float = 5.0, margin_next: float = 4.0,
    draws: int = 200_000, seed: int = 0,
) -> dict[tuple[float, float], float]:  # fmt: skip
    """Monte Carlo output distribution of :func:`dp_support` (for audits): a dict from each
    support drawn to its share of ``draws`` noise vectors."""
    x = _check_values(values)
    edges = support_cells(per_decade, integer)
    counts = _support_counts(x, edges)
    rng = np.random.default_rng(seed)
    tau = support_threshold(edges.size - 1, epsilon, margin)
    tau_next = support_threshold(2, epsilon, margin_next)
    out: dict[tuple[float, float], float] = {}
    for start in range(0, draws, 10_000):
        size = min(10_000, draws - start)
        noisy = counts + rng.laplace(0.0, 1.0 / epsilon, size=(size, counts.size))
        for row in noisy:
            key = _support_from(row, edges, tau, heavy, tau_next, support_gap(per_decade))
            out[key] = out.get(key, 0.0) + 1.0 / draws
    return out


def noisy_count(count: int, epsilon: float, rng: np.random.Generator) -> float:
    r"""Laplace mechanism for a count: ``count`` + Laplace(0, 1/``epsilon``).

    .. math:: \tilde n = n + Z, \qquad Z \sim \mathrm{Laplace}(0, b),\ b = 1/\varepsilon,
              \qquad \frac{p(\tilde n \mid n)}{p(\tilde n \mid n \pm 1)}
              = e^{(|\tilde n - n \mp 1| - |\tilde n - n|)/b} \le e^{\varepsilon}.

    Pure :math:`\varepsilon`-DP (Dwork, McSherry, Nissim & Smith 2006) for a count of
    sensitivity 1 under add/remove one record (:func:`laplace_epsilon`). The result is a float
    and may be negative; rounding or clipping it is post-processing.
    """
    n = _check_count(count)
    eps = check_positive(epsilon, "epsilon")
    gen = _check_rng(rng)
    return float(n + gen.laplace(0.0, 1.0 / eps))


def partition_threshold(epsilon: float, delta: float) -> float:
    r"""Threshold :math:`\tau` of Laplace partition selection.

    .. math:: \tau = 1 + \frac{\ln(1 / (2\delta))}{\varepsilon},

    so that a level held by a single record is released with probability
    :math:`P(1 + \mathrm{Laplace}(1/\varepsilon) > \tau) = \tfrac12 e^{-\varepsilon(\tau - 1)}
    = \delta`. Requires :math:`0 < \delta \le 1/2`.
    """
    eps = check_positive(epsilon, "epsilon")
    d = check_in_interval(delta, "delta", 0.0, 0.5, closed="right")
    return 1.0 + math.log(1.0 / (2.0 * d)) / eps


def partition_selection(
    counts: Mapping[object, int], epsilon: float, delta: float, rng: np.random.Generator
) -> list:
    r"""Levels whose Laplace-noised count exceeds :math:`\tau` (:func:`partition_threshold`).

    A level :math:`\ell` with count :math:`n_\ell \ge 1` is released when
    :math:`n_\ell + Z_\ell > \tau`, :math:`Z_\ell \sim \mathrm{Laplace}(0, 1/\varepsilon)` iid;
    levels with count 0 are never released. Only the level names are returned, in the input's
    order.

    Privacy: :math:`(\varepsilon, \delta)`-DP under add/remove one record when each record holds
    exactly one level (Korolova et al. 2009; Gopi et al. 2020; Desfontaines et al. 2022). A
    neighbour changes one level's count by 1: if that level is present in both data sets, the
    release is post-processing of the Laplace mechanism (pure :math:`\varepsilon`); if it exists
    in only one, it is released there with probability at most :math:`\delta`.

    The order of ``counts`` must not depend on the data (sort the levels, or use a codebook's
    order; not first appearance or frequency order), and the keys present must be the levels
    seen in the data or a public superset of them.

    Parameters
    ----------
    counts : Mapping
        Level -> number of records holding it (non-negative integers).
    epsilon : float
        Finite > 0.
    delta : float
        In (0, 1/2].
    rng : numpy.random.Generator
        Source of randomness (advanced by the call; one draw per key, whatever the counts).

    Returns
    -------
    list
        The released levels, in the order of ``counts``.
    """
    if not isinstance(counts, Mapping):
        raise TypeError(
            f"The 'counts' argument must be a Mapping from level to count. "
            f"Got {type(counts).__name__}."
        )
    tau = partition_threshold(epsilon, delta)
    gen = _check_rng(rng)
    levels = list(counts)
    n = np.asarray([_check_count(counts[k], f"counts[{k!r}]") for k in levels], dtype=float)
    noisy = n + gen.laplace(0.0, 1.0 / float(epsilon), size=n.size)
    keep = (n > 0) & (noisy > tau)
    return [k for k, kept in zip(levels, keep, strict=True) if kept]


# --------------------------------------------------------------------------- privacy maps


def quantile_epsilon(epsilon_per_quantile: float, k: int) -> float:
    r"""Privacy map of :math:`k` exponential-mechanism quantiles: :math:`k\,\varepsilon_q`."""
    return check_positive_int(k, "k") * check_positive(epsilon_per_quantile, "epsilon_per_quantile")


def laplace_epsilon(scale: float, sensitivity: float = 1.0) -> float:
    r"""Privacy map of the Laplace mechanism: :math:`\varepsilon = \Delta_1 / b`.

    Same map as :func:`pseudopost.privacy.noise.laplace_epsilon` (which takes
    ``(sensitivity, scale)`` in that order); here the scale comes first and a count's
    sensitivity 1 is the default.
    """
    return noise.laplace_epsilon(sensitivity=sensitivity, scale=scale)


# --------------------------------------------------------------------------- ledger


@dataclass(frozen=True)
class StructureCharge:
    """One data-dependent structural choice and its price, for the privacy statement.

    Parameters
    ----------
    name : str
        What was chosen, e.g. ``"income: bounds"``.
    epsilon : float
        Its epsilon (finite, >= 0).
    delta : float
        Its delta (in [0, 1)); 0 for pure DP.
    mechanism : str
        E.g. ``"exponential mechanism (Smith 2011)"``.
    relation : str
        The neighbouring relation under which the figures hold.
    """

    name: str
    epsilon: float
    delta: float = 0.0
    mechanism: str = ""
    relation: str = "add/remove one record"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"The 'name' field must be a non-empty str. Got {self.name!r}.")
        for field in ("mechanism", "relation"):
            if not isinstance(getattr(self, field), str):
                raise TypeError(f"The '{field}' field must be a str. Got {getattr(self, field)!r}.")
        object.__setattr__(self, "epsilon", check_positive(self.epsilon, "epsilon", strict=False))
        object.__setattr__(
            self, "delta", check_in_interval(self.delta, "delta", 0.0, 1.0, closed="left")
        )

    def to_dict(self) -> dict[str, object]:
        """The fields as a plain dict (for JSON and tables)."""
        return asdict(self)


def compose(charges: Sequence[StructureCharge]) -> tuple[float, float]:
    r"""Basic composition of the structure stage: :math:`(\sum_j \varepsilon_j, \sum_j \delta_j)`.

    Valid for charges stated under the same neighbouring relation (checked); an empty sequence
    costs (0, 0).
    """
    if isinstance(charges, (str, bytes)) or not isinstance(charges, Sequence):
        raise TypeError(
            f"The 'charges' argument must be a sequence of StructureCharge. "
            f"Got {type(charges).__name__}."
        )
    for i, ch in enumerate(charges):
        if not isinstance(ch, StructureCharge):
            raise TypeError(
                f"The 'charges' argument must hold StructureCharge objects; charges[{i}] is {ch!r}."
            )
    relations = {ch.relation for ch in charges}
    if len(relations) > 1:
        raise ValueError(
            f"The 'charges' argument mixes neighbouring relations {sorted(relations)}; basic "
            f"composition adds figures stated under one relation."
        )
    return float(sum(ch.epsilon for ch in charges)), float(sum(ch.delta for ch in charges))


# --------------------------------------------------------------------------- a column's parent
def parent_utility(
    child: np.ndarray, candidates: Sequence[np.ndarray], n_levels: int, n_groups: Sequence[int]
) -> np.ndarray:
    r"""Score of each candidate parent of a many-level column (first: no parent).

    With :math:`n_{gk}` the records of child level k in parent level g and :math:`n_g` those
    of parent level g, the score of a candidate with G public levels is the plug-in conditional
    log-likelihood of the child given it, penalised by the number of free shares it adds,

    .. math:: u(P) = \sum_{g,k} n_{gk}\log\frac{n_{gk}}{n_g} - (K - 1)(G - 1),

    (:math:`-n\hat H(C \mid P)`; no parent: G = 1). The penalty is twice the plug-in's expected
    bias :math:`(K-1)(G-1)/2` under independence (Miller 1955), so a candidate wins on what it
    explains, not on its number of cells.

    Sensitivity (add/remove one record): adding a record to cell (g, k) changes the sum by
    :math:`d(n_{gk}) - d(n_g)` with :math:`d(x) = (x+1)\log(x+1) - x\log x \in
    [\log(x+1), \log(x+1) + 1)` increasing and :math:`n_{gk} \le n_g`, so by a number in
    :math:`(-\log(n+1) - 1, 0]`; the penalty is public: :math:`\Delta u < \log(n+1) + 1
    \le` :func:`parent_sensitivity` for files of at most :data:`MAX_RECORDS` records.

    Parameters
    ----------
    child
        int (n,) the child's level codes 0..``n_levels``-1.
    candidates
        int (n,) arrays, each a candidate's level codes 0..G-1.
    n_levels, n_groups
        K and each candidate's G: public level counts (a codebook's or a dtype's).
    """
    y = np.asarray(child, dtype=np.int64)

    def loglik(g: np.ndarray, G: int) -> float:
        cells = np.bincount(g * n_levels + y, minlength=G * n_levels).astype(np.float64)
        groups = np.bincount(g, minlength=G).astype(np.float64)
        return float(special.xlogy(cells, cells).sum() - special.xlogy(groups, groups).sum())

    out = [loglik(np.zeros_like(y), 1)]
    for g, G in zip(candidates, n_groups, strict=True):
        out.append(loglik(np.asarray(g, dtype=np.int64), int(G)) - (n_levels - 1) * (G - 1))
    return np.asarray(out)


def parent_sensitivity() -> float:
    """:math:`\\log(N + 1) + 1` with :math:`N` = :data:`MAX_RECORDS` (:func:`parent_utility`)."""
    return math.log(MAX_RECORDS + 1) + 1.0


def parent_probabilities(utility: np.ndarray, epsilon: float) -> np.ndarray:
    r"""Exact output distribution of :func:`dp_parent`: :math:`P(P) \propto \exp(\varepsilon
    u(P) / (2\Delta))`, :math:`\Delta` of :func:`parent_sensitivity`; pure
    :math:`\varepsilon`-DP for add/remove one record (McSherry & Talwar 2007, Thm 6)."""
    eps = check_positive(epsilon, "epsilon")
    logits = 0.5 * eps * np.asarray(utility, dtype=np.float64) / parent_sensitivity()
    return np.exp(logits - special.logsumexp(logits))


def dp_parent(utility: np.ndarray, epsilon: float, rng: np.random.Generator) -> int:
    """One draw of :func:`parent_probabilities` (the index of the chosen candidate; 0: none)."""
    eps = check_positive(epsilon, "epsilon")
    logits = 0.5 * eps * np.asarray(utility, dtype=np.float64) / parent_sensitivity()
    return _draw(logits, _check_rng(rng))
