r"""Risk-based record weights for the pseudo posterior (Savitsky, Williams & Hu 2022).

1. Risk from the *unweighted* posterior: :math:`L_i = \max_m |f_{\theta_m}(x_i)|`.
2. Normalise to :math:`r_i \in [0, 1]`. ``"linear"`` (default, the papers):
   :math:`r_i = (L_i - \min_j L_j)/(\max_j L_j - \min_j L_j)`; ``"logistic"`` (seen in public R
   code): :math:`r_i = 1/(1 + e^{-(L_i - \bar L)/s_L})`.
3. Weights :math:`\alpha_i = \min(1, \max(0, c (1 - r_i) + g))`; c (``scale``) and g
   (``shift``) are the risk-utility knobs, defaults c = 1, g = 0.

Step 2 needs one global summary of all risks (:class:`RiskSummary`: the minimum and the range,
or the mean and the standard deviation); given it, every record's weight depends on its own risk
only. :func:`weights_from_risk` is that one weights function: the in-memory mechanism computes
the summary from the array (:func:`risk_weights`), the Dask backend reduces it over all blocks
first and maps the same function over the blocks, so both give the same weights bit for bit.

A record of higher risk (its log-likelihood far from zero, typically in a tail) gets a lower
weight. Weights are a deterministic function of the data and the unweighted draws: they spend no
separate budget; their effect is measured by the accountant on the weighted posterior. For the
same reason a censored pseudo posterior with these weights is a global guarantee only *given the
weights* (:class:`~pseudopost.privacy.decomposition.Censored`), except with ``shift >= 1``,
which makes every weight 1 whatever the data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from pseudopost._validation import check_positive

__all__ = [
    "NORMALISATIONS",
    "RiskSummary",
    "check_weight_knobs",
    "level_floor",
    "level_rake",
    "normalise_risk",
    "part_rake",
    "risk_summary",
    "risk_weights",
    "weights_from_risk",
]

Normalisation = Literal["linear", "logistic"]
NORMALISATIONS = ("linear", "logistic")


def check_weight_knobs(scale: float, shift: float) -> tuple[float, float]:
    """Validate c and g before any sampling: c > 0 finite, g finite, and c + g > 0 (the
    lowest-risk record has r = 0 and weight c + g; if that is <= 0 every weight is 0)."""
    c = check_positive(scale, "scale")
    try:
        g = float(shift)
    except (TypeError, ValueError):
        raise TypeError(f"The 'shift' parameter must be a real number. Got {shift!r}.") from None
    if not np.isfinite(g):
        raise ValueError(f"The 'shift' parameter must be finite. Got {shift!r}.")
    if c + g <= 0:
        raise ValueError(
            f"scale={c} and shift={g} make every weight 0 (alpha_i = clip(c (1 - r_i) + g) <= "
            f"c + g = {c + g}); choose scale + shift > 0."
        )
    return c, g


@dataclass(frozen=True)
class RiskSummary:
    r"""The global summary a normalisation needs: :math:`r_i = h((L_i - \text{center}) /
    \text{spread})` with ``center`` = :math:`\min_j L_j` and ``spread`` = :math:`\max_j L_j -
    \min_j L_j` (``"linear"``, :math:`h` the identity) or ``center`` = :math:`\bar L` and
    ``spread`` = :math:`s_L` (``"logistic"``, :math:`h(t) = 1/(1 + e^{-t})`). A zero spread
    (all risks equal) gives every record r = 0 (linear) or 1/2 (logistic)."""

    method: Normalisation
    center: float
    spread: float

    def __post_init__(self) -> None:
        _check_method(self.method)


def _check_method(method: str) -> None:
    if method not in NORMALISATIONS:
        raise ValueError(f"The 'method' parameter must be 'linear' or 'logistic'. Got {method!r}.")


def risk_summary(risk: np.ndarray, method: Normalisation = "linear") -> RiskSummary:
    """The :class:`RiskSummary` of all risks in memory (validated: a non-empty finite vector)."""
    L = np.asarray(risk, dtype=float)
    _check_method(method)
    if L.ndim != 1 or L.size == 0:
        raise ValueError(f"'risk' must be a non-empty vector; got shape {L.shape}.")
    if not np.all(np.isfinite(L)):
        bad = int(np.flatnonzero(~np.isfinite(L))[0])
        raise ValueError(
            f"Risk of record {bad} is {L[bad]}: the model gives it no finite "
            "log-likelihood under some posterior draw."
        )
    if method == "linear":
        return RiskSummary(method, L.min(), L.max() - L.min())
    return RiskSummary(method, L.mean(), L.std())


def normalise_risk(
    risk: np.ndarray, method: Normalisation = "linear", summary: RiskSummary | None = None
) -> np.ndarray:
    """Map risks :math:`L_i` to :math:`r_i \\in [0, 1]` (module docstring), with the global
    ``summary`` of all risks (default: the summary of ``risk`` itself)."""
    if summary is None:
        summary = risk_summary(risk, method)
    L = np.asarray(risk, dtype=float)
    center, spread = summary.center, summary.spread
    if summary.method == "linear":
        return np.zeros_like(L) if spread == 0 else (L - center) / spread
    return np.full_like(L, 0.5) if spread == 0 else 1.0 / (1.0 + np.exp(-(L - center) / spread))


def weights_from_risk(
    risk: np.ndarray, summary: RiskSummary, scale: float = 1.0, shift: float = 0.0
) -> np.ndarray:
    r""":math:`\alpha_i = \mathrm{clip}(c(1 - r_i) + g, 0, 1)` for any subset of the records
    (a Dask block), given the ``summary`` of *all* records' risks. ``scale`` and ``shift`` are
    taken as validated (:func:`check_weight_knobs`)."""
    return np.clip(scale * (1.0 - normalise_risk(risk, summary=summary)) + shift, 0.0, 1.0)


def risk_weights(
    risk: np.ndarray,
    scale: float = 1.0,
    shift: float = 0.0,
    method: Normalisation = "linear",
) -> np.ndarray:
    r"""Weights :math:`\alpha_i = \mathrm{clip}(c(1 - r_i) + g, 0, 1)` from risks :math:`L_i`."""
    c, g = check_weight_knobs(scale, shift)
    return weights_from_risk(risk, risk_summary(risk, method), c, g)


def _checked(alpha, groups, share, name: str):
    """(weights, ``share`` as a float in [0, 1], [(levels, active)] per grouping that has a
    record), checked for :func:`level_floor` and :func:`level_rake`."""
    a = np.asarray(alpha, dtype=float)
    if a.ndim != 1 or np.any(~np.isfinite(a)) or np.any((a < 0) | (a > 1)):
        raise ValueError("'alpha' must be a vector of weights in [0, 1].")
    f = float(share)
    if not 0.0 <= f <= 1.0:
        raise ValueError(f"'{name}' must be in [0, 1]. Got {share!r}.")
    arrays = list(groups.values()) if isinstance(groups, Mapping) else list(groups)
    for g in arrays:
        if np.shape(g) != a.shape:
            raise ValueError(f"Each grouping must have one level per record ({a.size}).")
    coded = [(np.asarray(g, dtype=np.int64), np.asarray(g) >= 0) for g in arrays]
    return a, f, [(g, on) for g, on in coded if on.any()]


def level_floor(
    alpha: np.ndarray,
    groups: Mapping[str, np.ndarray] | Sequence[np.ndarray],
    floor: float,
    *,
    tol: float = 1e-9,
    max_passes: int = 1000,
) -> np.ndarray:
    r"""Weights raised (never lowered) so that no level of a categorical variable vanishes.

    With the papers' linear normalisation every record of a categorical level without predictors
    shares one risk, so the riskiest level gets weight 0 and nearly disappears from the
    synthetic file, and near-equal risks are stretched to the whole range [0, 1]. For each
    grouping :math:`g` (one per categorical part: record i's level
    :math:`g_i`, -1 where the record has none) this floor asks every level's mean weight to be at
    least ``floor`` times the mean weight of the grouping's records,

    .. math::
        \bar\alpha_k \ge f\,\bar\alpha, \qquad
        \bar\alpha_k = \frac{1}{n_k}\sum_{g_i = k}\alpha_i, \quad
        \bar\alpha = \frac{1}{n}\sum_{g_i \ge 0}\alpha_i,

    so that the level's weighted share :math:`n_k\bar\alpha_k / n\bar\alpha` is at least
    :math:`f` times its share in the data: :math:`f = 0` is the papers' weights, :math:`f = 1`
    keeps every level's share exactly (the weighted likelihood then has the data's margins, as
    survey raking does), and any :math:`f > 0` keeps every level present. A level below its
    floor has all its weights raised by one amount :math:`\delta`, :math:`\alpha_i \leftarrow
    \min(1, \alpha_i + \delta)` (the riskier records of the level stay the lower-weighted ones),
    :math:`\delta` solved exactly; raising one level raises :math:`\bar\alpha` and other
    groupings' means, so passes repeat until every floor holds (a monotone, bounded iteration).
    Raising weights raises epsilon: the accountant measures it on the raised weights (the
    mechanism can report the epsilon without the floor beside it). Like the weights themselves
    (module docstring) the floor spends no separate budget.

    Parameters
    ----------
    alpha
        Weights in [0, 1].
    groups
        Integer level arrays (n,), one per grouping (a mapping's values are used).
    floor
        f in [0, 1].
    tol
        Relative tolerance of the floors.
    max_passes
        Passes over the groupings before giving up (a ``RuntimeError``).

    Returns
    -------
    numpy.ndarray
        The raised weights (a new array; ``alpha`` is not modified).
    """
    a, f, coded = _checked(alpha, groups, floor, "floor")
    out = a.copy()
    if f == 0.0 or not coded:
        return out
    for _ in range(max_passes):
        worst = 0.0
        for g, on in coded:
            target = f * out[on].mean()
            n_k, s_k = _level_totals(out, g, on)
            mean_k = s_k / np.maximum(n_k, 1)
            for k in np.flatnonzero((n_k > 0) & (mean_k < target * (1.0 - tol))):
                members = on & (g == k)
                out[members] = _raise_mean(out[members], target)
                worst = max(worst, (target - mean_k[k]) / max(target, 1e-300))
        if worst <= tol:
            return out
    raise RuntimeError(f"level_floor did not converge in {max_passes} passes (floor {f}).")


def level_rake(
    alpha: np.ndarray,
    groups: Mapping[str, np.ndarray] | Sequence[np.ndarray],
    keep: float,
    *,
    noise: float = 0.0,
    tol: float = 1e-4,
    max_passes: int = 100,
) -> np.ndarray:
    r"""Weights lowered (never raised) so that each grouping's weighted level shares are the
    data's: iterative proportional fitting (raking) downwards.

    The risk weights move the weighted likelihood's margins: the typical records (hours of 40,
    income below 50K, the commonest race) keep weights near 1 while the rarer levels' records
    lose weight, so a level's weighted share :math:`s_k = \sum_{g_i=k}\alpha_i /
    \sum_i\alpha_i` leaves its share :math:`t_k = n_k/n` in the data, and the synthetic margins
    follow (Adult, weighted: a one-way S_pMSE of 36 for income, 15 for race, 60 for hours).
    :func:`level_floor` lifts the levels below a share; raking instead *lowers* the others:
    for each grouping in turn, level k's weights are multiplied by
    :math:`m_k = (t_k/s_k) / \max_j (t_j/s_j) \le 1`, after which that grouping's weighted
    shares are the data's, and the passes repeat over the groupings until every share is within
    ``tol`` of its target (relative), as raking to margins does. Lowering a weight never raises
    a record's bound :math:`\alpha_i |f_\theta(x_i)|` at given draws, so the accountant's
    epsilon (measured on the final weights, like every weight's effect) falls; the price is
    the effective sample size, :math:`\sum_i \alpha_i` falls with every step.
    ``keep`` bounds it: a step that would take :math:`\sum_i\alpha_i` below ``keep`` times its
    starting value is not taken, and raking stops there (``keep`` = 0: to convergence; Adult
    then kept 6 % of its weight, enough for a file of 39,074 records, too little for a small
    one). Like the weights themselves and the floor, raking spends no separate budget.

    ``noise`` > 0 stops raking once the shares are within the pseudo posterior's own noise:
    the weighted likelihood behaves like :math:`W = \sum_i\alpha_i` records, whose level
    shares scatter about the truth with Pearson statistic :math:`W\sum_k (s_k - t_k)^2/t_k
    \approx \chi^2_{K-1}`; once every grouping's statistic is at most ``noise`` times its
    :math:`K - 1`, the bias left is below that scatter, and each further step would buy less
    bias than it costs in noise, :math:`\propto 1/W` (a synthetic one-way table's S_pMSE is about
    :math:`1 + n/(2W)` from the noise plus :math:`n\sum_k (s_k - t_k)^2 / (2 t_k (K - 1))`
    from the bias). Adult (39,074 records, the defaults, total weight 31,254 before raking):
    raking to exact shares kept 2,349 (noise term 8.3 in every table), ``noise`` = 1 kept 3,823
    with every grouping's bias term below 3.6 (up to 24 before raking), at epsilon 11.1 against
    7.6; the CART S_pMSE of one synthetic file (97 against 79 and 99 for two files raked to the
    shares) did not tell them apart, so whole-file releases rake to the shares (``noise`` = 0).

    Parameters
    ----------
    alpha
        Weights in [0, 1].
    groups
        Integer level arrays (n,), one per grouping (-1 where a record has none).
    keep
        In [0, 1]: the smallest share of the starting total weight raking may keep; 1 makes
        it a no-op.
    noise
        >= 0: stop once every grouping's Pearson statistic at the current total weight is at
        most ``noise`` times its degrees of freedom (0: to ``tol``).
    tol, max_passes
        Relative tolerance of the shares, and the most passes over the groupings.

    Returns
    -------
    numpy.ndarray
        The lowered weights (a new array; ``alpha`` is not modified).
    """
    a, k, coded = _checked(alpha, groups, keep, "keep")
    if isinstance(noise, bool) or not isinstance(noise, (int, float)) or not noise >= 0:
        raise ValueError(f"'noise' must be a number >= 0. Got {noise!r}.")
    out = a.copy()
    least = k * out.sum()
    if noise > 0 and _within_noise(out, coded, noise):
        return out
    for _ in range(max_passes):
        worst = 0.0
        for g, on in coded:
            ratios = _share_ratios(out, g, on)
            if ratios is None:
                continue
            m, ok = ratios
            worst = max(worst, float(m[ok].max() / m[ok].min() - 1.0))
            step = out.copy()
            step[on] *= (m / m[ok].max())[g[on]]
            if step.sum() < least:
                return out
            out = step
            if noise > 0 and _within_noise(out, coded, noise):
                return out
        if worst <= tol:
            return out
    return out


def part_rake(
    alpha: np.ndarray,
    groups: Mapping[str, np.ndarray],
) -> dict[str, np.ndarray]:
    r"""Per part, the factors :math:`r_{iq} \in (0, 1]` that lower (never raise) the record
    weights inside that part alone so that its weighted level shares are the data's.

    The risk weights move a categorical part's margins: the records of a typical level keep
    weights near 1 while a rarer or riskier level's lose weight, so level k's weighted share
    :math:`s_k = \sum_{g_i=k}\alpha_i / \sum_i\alpha_i` leaves its share :math:`t_k = n_k/n`
    in the data, and the synthetic margins follow (SLID, weighted: wages present for 46 %
    of the synthetic records against 56 % of the real ones). :func:`level_rake` restores the
    shares with one weight per record for every part at once, which takes the total weight
    far down (Adult: to 6 %). Here each part q (a grouping: record i's level
    :math:`g_{iq}`, -1 where the part is not active) gets its own factors,

    .. math::
        r_{iq} = \frac{m_{q, g_{iq}}}{\max_j m_{qj}}, \qquad m_{qk} = t_k / s_k,

    1 where the part is not active, so that the part's weights :math:`\alpha_i r_{iq}` give
    every level its share in the data exactly (one step is exact for a single grouping), and
    the part's weights fall only by the ratio of its own levels. The pseudo likelihood is then
    :math:`\prod_i\prod_q p_q(x_i \mid \theta_q)^{\alpha_i r_{iq}}`, and record i's term in
    it, :math:`\alpha_i\sum_q r_{iq} f_q(x_i)`, is what the accountant bounds
    (:class:`~pseudopost.privacy.kernels.parts.PartAccountant`, ``factors``). Like the weights
    themselves the factors are a function of the data that spends no separate budget; the
    local epsilon is measured given them.

    Parameters
    ----------
    alpha
        Record weights in [0, 1].
    groups
        Part name -> integer level array (n,), -1 where the part has no level.

    Returns
    -------
    dict
        Part name -> factors (n,) in (0, 1] (new arrays), for the groupings with at least two
        levels of positive weight; the others are left out (factor 1).
    """
    if not isinstance(groups, Mapping):
        raise TypeError(f"'groups' must map part names to level arrays; got {type(groups).__name__}.")
    a, _, coded = _checked(alpha, groups, 0.0, "floor")
    names = [k for k, g in groups.items() if np.any(np.asarray(g) >= 0)]
    out = {}
    for name, (g, on) in zip(names, coded, strict=True):
        ratios = _share_ratios(a, g, on)
        if ratios is None:
            continue
        m, ok = ratios
        m = m / m[ok].max()
        factor = np.ones(a.size)
        factor[on] = m[g[on]]
        out[name] = factor
    return out


def _level_totals(w: np.ndarray, g: np.ndarray, on: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per level of a grouping (records ``on``): its number of records and its total weight."""
    n_k = np.bincount(g[on]).astype(float)
    return n_k, np.bincount(g[on], weights=w[on], minlength=n_k.size)


def _share_ratios(w: np.ndarray, g: np.ndarray, on: np.ndarray):
    """Per level k of a grouping, the data's share over the weighted share,
    :math:`m_k = (n_k / n) / (s_k / s)` (1 where a level has no records or no weight), and
    the levels where it is defined; None when fewer than two are."""
    n_k, s_k = _level_totals(w, g, on)
    ok = (n_k > 0) & (s_k > 0)
    if np.count_nonzero(ok) < 2:
        return None
    m = np.ones(n_k.size)
    m[ok] = (n_k[ok] / n_k[ok].sum()) / (s_k[ok] / s_k[ok].sum())
    return m, ok


def _within_noise(w: np.ndarray, coded, noise: float) -> bool:
    r"""Whether every grouping's Pearson statistic :math:`W\sum_k (s_k - t_k)^2 / t_k` at the
    total weight W of ``w`` is at most ``noise`` times its K - 1 (:func:`level_rake`)."""
    total = float(w.sum())
    for g, on in coded:
        n_k, s_k = _level_totals(w, g, on)
        ok = n_k > 0
        if np.count_nonzero(ok) < 2 or s_k[ok].sum() <= 0:
            continue
        t, s = n_k[ok] / n_k[ok].sum(), s_k[ok] / s_k[ok].sum()
        if total * float(np.sum((s - t) ** 2 / t)) > noise * (t.size - 1):
            return False
    return True


def _raise_mean(w: np.ndarray, target: float) -> np.ndarray:
    r""":math:`\min(1, w_i + \delta)` with :math:`\delta \ge 0` the smallest whose mean is
    ``target`` (or all ones when ``target`` >= 1): exact, from the sorted weights."""
    if target >= 1.0:
        return np.ones_like(w)
    s = np.sort(w)[::-1]  # the first j records reach 1 when delta >= 1 - s[j-1]
    n = s.size
    tail = np.concatenate([np.cumsum(s[::-1])[::-1], [0.0]])  # tail[j] = sum of s[j:]
    for j in range(n + 1):
        # j records at 1, the rest w + delta: mean = (j + tail[j] + (n - j) delta) / n
        delta = (target * n - j - tail[j]) / (n - j) if j < n else 0.0
        if j == n or delta <= 1.0 - s[j]:
            if j == 0 or delta >= 1.0 - s[j - 1]:
                return np.minimum(1.0, w + max(delta, 0.0))
    return np.ones_like(w)  # pragma: no cover
