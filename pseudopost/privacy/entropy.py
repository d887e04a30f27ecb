r"""Sensitivity of histogram entropy under replace-one adjacency (REAEDP, Thm 3 and appendix C).

Two datasets of the same, public size :math:`n` are neighbours when they differ in exactly one
record (*replace-one*); their histograms :math:`c, c'` over :math:`m` bins then differ by moving
one unit from a bin :math:`b` to a bin :math:`a`. Entropies are in bits, of :math:`p_i = c_i/n`:

.. math::

    H(c) = \log_2 n - \frac1n \sum_i c_i \log_2 c_i \quad\text{(eq. 2)},\qquad
    H_\alpha(c) = \frac{1}{1-\alpha}\log_2 \sum_i p_i^\alpha \quad\text{(eq. 3)}.

Shannon (Theorem 3, eq. 4): :math:`\Delta_H \le \frac1n\,(2 + 1/\ln 2 + 2\log_2 n)`. The exact
sensitivity is also available (``tight=True``): writing :math:`g(x) = (x+1)\log_2(x+1) -
x\log_2 x`, a move changes :math:`H` by :math:`|g(c_a) - g(c_b - 1)|/n` with :math:`c_a + c_b \le
n`; :math:`g` is increasing, so the maximum is :math:`(g(n-1) - g(0))/n`, i.e.

.. math:: \Delta_H^\star = \log_2 n - \frac{n-1}{n}\log_2(n-1)

(reached by :math:`(n, 0) \to (n-1, 1)`), about half of the Theorem 3 bound.

Rényi (appendix C). The paper's bound (eq. 17) :math:`\Delta_{H_\alpha} \le C_\alpha/n` with
:math:`C_\alpha = 2|\alpha|/(|1-\alpha|\ln 2)` (Table S1) is **not valid**: its step 1 assumes
:math:`\xi^{\alpha-1} \le 1` for :math:`\alpha < 1` (false near 0) and its step 2 assumes
:math:`\sum_i p_i^\alpha \ge 1` for :math:`\alpha > 1` (false: the sum is at most 1).
Brute-force enumeration (``tests/privacy/test_entropy_sensitivity.py``) finds violations, e.g. for
:math:`\alpha = 0.5` at :math:`n = 30`, :math:`(30, 0) \to (29, 1)` changes :math:`H_{0.5}` by
0.443 against the paper's 0.096. :func:`paper_renyi_constant` keeps the paper's constants for
reference only; :func:`renyi_entropy_sensitivity` returns a bound proved here:

* :math:`0 < \alpha < 1`: :math:`S = \sum p_i^\alpha \ge 1`, and by subadditivity of
  :math:`x^\alpha` each of the two changed terms moves :math:`S` by at most :math:`n^{-\alpha}`,
  in opposite directions, so :math:`|\ln S' - \ln S| \le n^{-\alpha}` and
  :math:`\Delta_{H_\alpha} \le n^{-\alpha} / ((1-\alpha)\ln 2)`.
* :math:`\alpha > 1`: :math:`H_\alpha = \frac{\alpha}{1-\alpha}\log_2\lVert p\rVert_\alpha`, with
  :math:`\lVert p'-p\rVert_\alpha = 2^{1/\alpha}/n` and :math:`\lVert p\rVert_\alpha \ge
  n^{1/\alpha - 1}` (integer counts), so
  :math:`\Delta_{H_\alpha} \le \frac{\alpha}{\alpha-1}\log_2\big(1 + (2/n)^{1/\alpha}\big)`. With a
  known number of bins :math:`m` also :math:`S \ge m^{1-\alpha}` and each changed term moves
  :math:`S` by at most :math:`\alpha/n`, so
  :math:`\Delta_{H_\alpha} \le \log_2(1 + \alpha m^{\alpha-1}/n)/(\alpha - 1)`; the smaller of the
  two is returned. Without a bound on :math:`m` the sensitivity is truly of order
  :math:`n^{-1/\alpha}`, not :math:`1/n` as the paper states.
"""

from __future__ import annotations

import numpy as np

from pseudopost._validation import check_positive, check_positive_int

__all__ = [
    "TABLE_S1_RENYI_CONSTANTS",
    "paper_renyi_constant",
    "renyi_entropy",
    "renyi_entropy_sensitivity",
    "shannon_entropy",
    "shannon_entropy_sensitivity",
]

#: Table S1 of the paper: :math:`C_\alpha` with the (refuted) claim :math:`\Delta_{H_\alpha} \le
#: C_\alpha / n`, as printed (two decimals).
TABLE_S1_RENYI_CONSTANTS: dict[float, float] = {
    0.5: 2.89,
    1.5: 8.66,
    2.0: 5.77,
    3.0: 4.33,
    5.0: 3.61,
    10.0: 3.21,
}


def _probabilities(counts: np.ndarray | list[float]) -> np.ndarray:
    c = np.asarray(counts, dtype=float)
    if c.ndim != 1 or c.size < 1:
        raise ValueError(
            f"The 'counts' argument must be a non-empty 1-D array. Got shape {c.shape}."
        )
    if not np.isfinite(c).all() or (c < 0).any():
        raise ValueError("The 'counts' argument must hold finite, non-negative values.")
    total = c.sum()
    if total <= 0:
        raise ValueError("The 'counts' argument must have a positive total (empty histogram).")
    return c / total


def shannon_entropy(counts: np.ndarray | list[float]) -> float:
    r"""Shannon entropy in bits of the histogram ``counts`` (eq. 2); :math:`0\log 0 = 0`."""
    p = _probabilities(counts)
    p = p[p > 0]
    return float(-(p * np.log2(p)).sum())


def _check_order(order: float) -> float:
    a = check_positive(order, "order")
    if a == 1.0:
        raise ValueError(
            "The 'order' parameter of the Rényi entropy must differ from 1 (order 1 is the "
            "Shannon entropy; use shannon_entropy / shannon_entropy_sensitivity). Got 1."
        )
    return a


def renyi_entropy(counts: np.ndarray | list[float], order: float) -> float:
    r"""Rényi entropy of order :math:`\alpha > 0, \alpha \ne 1` in bits (eq. 3)."""
    a = _check_order(order)
    p = _probabilities(counts)
    p = p[p > 0]
    return float(np.log2((p**a).sum()) / (1.0 - a))


def shannon_entropy_sensitivity(n: int, *, tight: bool = False) -> float:
    r"""Replace-one sensitivity of the Shannon entropy (bits) of an ``n``-record histogram.

    Parameters
    ----------
    n
        Number of records, the same in both neighbours (public).
    tight
        ``False`` (default): the bound of Theorem 3, eq. (4),
        :math:`\frac1n(2 + 1/\ln 2 + 2\log_2 n)`. ``True``: the exact maximum
        :math:`\log_2 n - \frac{n-1}{n}\log_2(n-1)` over all bin counts (module docstring),
        valid for any number of bins :math:`m \ge 2`.

    Returns
    -------
    float
        :math:`\Delta_H` such that :math:`|H(c) - H(c')| \le \Delta_H` for every replace-one pair.
    """
    n = check_positive_int(n, "n")
    if tight:
        return 0.0 if n == 1 else float(np.log2(n) - (n - 1) / n * np.log2(n - 1))
    return float((2.0 + 1.0 / np.log(2.0) + 2.0 * np.log2(n)) / n)


def paper_renyi_constant(order: float) -> float:
    r"""The paper's :math:`C_\alpha = 2|\alpha|/(|1-\alpha|\ln 2)` (appendix C, Table S1).

    Kept for reference: the claim :math:`\Delta_{H_\alpha} \le C_\alpha/n` is false (see the
    module docstring); calibrate with :func:`renyi_entropy_sensitivity` instead.
    """
    a = _check_order(order)
    return float(2.0 * a / (abs(1.0 - a) * np.log(2.0)))


def renyi_entropy_sensitivity(n: int, order: float, *, bins: int | None = None) -> float:
    r"""Replace-one sensitivity bound of the Rényi entropy of order ``order`` (bits).

    Parameters
    ----------
    n
        Number of records, the same in both neighbours (public).
    order
        :math:`\alpha > 0`, :math:`\alpha \ne 1`.
    bins
        Number of histogram bins :math:`m`, if known; tightens the bound for :math:`\alpha > 1`.

    Returns
    -------
    float
        For :math:`\alpha < 1`: :math:`n^{-\alpha}/((1-\alpha)\ln 2)`; for :math:`\alpha > 1`:
        :math:`\frac{\alpha}{\alpha-1}\log_2(1 + (2/n)^{1/\alpha})`, or the smaller of that and
        :math:`\log_2(1 + \alpha m^{\alpha-1}/n)/(\alpha-1)` when ``bins`` is given. Proofs in
        the module docstring; this replaces the paper's eq. (17), which does not hold.
    """
    n = check_positive_int(n, "n")
    a = _check_order(order)
    if bins is not None:
        bins = check_positive_int(bins, "bins")
    if a < 1.0:
        return float(n ** (-a) / ((1.0 - a) * np.log(2.0)))
    bound = a / (a - 1.0) * np.log2(1.0 + (2.0 / n) ** (1.0 / a))
    if bins is not None:
        with np.errstate(over="ignore"):
            by_bins = np.log2(1.0 + a * float(bins) ** (a - 1.0) / n) / (a - 1.0)
        bound = min(bound, by_bins)
    return float(bound)
