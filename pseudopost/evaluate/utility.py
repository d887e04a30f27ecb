"""Utility of synthetic data against the confidential data: ECDF, pMSE, estimates, CI overlap.

Mechanism-agnostic: every function takes the confidential frame ``real`` and a ``synthetic``
frame and reads them only. These are the measures of the range-restricted pseudo posterior
paper (Hu, Savitsky & Williams), sections 4-5:

* global utility: the ECDF measures :math:`U_m` and :math:`U_a` (Woo et al. 2009; Hu & Bowen
  2024), and the propensity-score mean squared error, pMSE (Woo et al. 2009; Snoke et al. 2018);
* analysis-specific utility: means, medians and 90th percentiles with intervals, and the
  confidence-interval overlap of regression coefficients (Karr et al. 2006).

References
----------
Woo, M. J., Reiter, J. P., Oganian, A. & Karr, A. F. (2009). Global measures of data utility
for microdata masked for disclosure limitation. Journal of Privacy and Confidentiality 1,
111-124.

Hu, J. & Bowen, C. M. (2024). Advancing microdata privacy protection: a review of synthetic data
methods. WIREs Computational Statistics, e1636.

Snoke, J., Raab, G. M., Nowok, B., Dibben, C. & Slavkovic, A. (2018). General and specific
utility measures for synthetic data. Journal of the Royal Statistical Society A 181, 663-688.

Karr, A. F., Kohnen, C. N., Oganian, A., Reiter, J. P. & Sanil, A. P. (2006). A framework for
evaluating the utility of data altered to protect confidentiality. The American Statistician
60, 224-232.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats
from sklearn.linear_model import LogisticRegression

from pseudopost._extras import require
from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import (
    check_columns,
    check_finite_numeric,
    check_frame,
    check_in_interval,
    check_positive_int,
)
from pseudopost.evaluate._features import FeatureEncoder, infer_feature_types

__all__ = [
    "PMSEResult",
    "ci_overlap",
    "ecdf_utility",
    "estimate_summary",
    "interval_overlap",
    "pmse",
    "pmse_result",
]


# --------------------------------------------------------------------------------------------
# Shared checks
# --------------------------------------------------------------------------------------------


def _check_pair(real: object, synthetic: object, *, min_rows: int = 1) -> None:
    check_frame(real, "real", min_rows=min_rows)
    check_frame(synthetic, "synthetic", min_rows=min_rows)


def _check_level(level: float) -> float:
    return check_in_interval(level, "level", 0.0, 1.0, closed="neither")


def _shared_columns(
    real: pd.DataFrame, synthetic: pd.DataFrame, columns: Sequence[str] | None
) -> list[str]:
    """``columns`` checked against both frames, or the columns of ``real`` both share."""
    if columns is None:
        cols = [c for c in real.columns if c in synthetic.columns]
        if not cols:
            raise ValueError("'real' and 'synthetic' share no column to compare on.")
        return cols
    if isinstance(columns, str):
        raise TypeError(
            f"The 'columns' argument must be a sequence of column names, not the string "
            f"{columns!r}; use [{columns!r}]."
        )
    cols = list(columns)
    if not cols:
        raise ValueError("The 'columns' argument must name at least one column. Got [].")
    check_columns(real, cols, "real")
    check_columns(synthetic, cols, "synthetic")
    return cols


def _numeric_pair(
    real: pd.DataFrame, synthetic: pd.DataFrame, columns: Sequence[str]
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    check_columns(real, columns, "real")
    check_columns(synthetic, columns, "synthetic")
    return check_finite_numeric(real, columns), check_finite_numeric(synthetic, columns)


# --------------------------------------------------------------------------------------------
# 1. ECDF measures
# --------------------------------------------------------------------------------------------


def _ecdf_distances(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(U_m, U_a) of two 1-d samples, both ECDFs evaluated at every merged record."""
    merged = np.concatenate([x, y])
    f_x = np.searchsorted(np.sort(x), merged, side="right") / x.size
    f_y = np.searchsorted(np.sort(y), merged, side="right") / y.size
    diff = f_x - f_y
    return float(np.max(np.abs(diff))), float(np.mean(diff**2))


def ecdf_utility(
    real: pd.DataFrame, synthetic: pd.DataFrame, columns: Sequence[str] | None = None
) -> pd.DataFrame:
    r"""ECDF utility measures :math:`U_m` and :math:`U_a`, one row per numeric column.

    The records of both datasets are merged into :math:`Z = (z_1, \dots, z_N)`,
    :math:`N = n_{orig} + n_{syn}` (ties and duplicates kept), and both empirical CDFs are
    evaluated at every merged record,

    .. math::

        \hat F_{orig}(z) = \frac{1}{n_{orig}} \sum_{i=1}^{n_{orig}} 1\{x_i \le z\}, \qquad
        \hat F_{syn}(z) = \frac{1}{n_{syn}} \sum_{i=1}^{n_{syn}} 1\{x^*_i \le z\},

    .. math::

        U_m = \max_{1 \le j \le N} |\hat F_{orig}(z_j) - \hat F_{syn}(z_j)|, \qquad
        U_a = \frac{1}{N} \sum_{j=1}^{N} (\hat F_{orig}(z_j) - \hat F_{syn}(z_j))^2 .

    Both lie in [0, 1]; 0 means identical empirical distributions, and smaller is better.
    :math:`U_m` equals the two-sample Kolmogorov-Smirnov statistic. These are the "maximum"
    and "average record-level difference" of the range-restricted paper (figures 3, 12, 17),
    after Woo et al. (2009) and Hu & Bowen (2024), computed column by column (the marginal
    form used for the paper's single outcome).

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        Confidential and synthetic data, at least one row each; not modified.
    columns : sequence of str, optional
        Numeric columns to compare. Default: every numeric (non-boolean) column of ``real``
        that ``synthetic`` also has.

    Returns
    -------
    pandas.DataFrame
        Indexed by column name, with float columns ``U_m`` and ``U_a``.

    Raises
    ------
    TypeError
        If an input is not a DataFrame or a requested column is not numeric.
    ValueError
        If a frame is empty, a column is missing or holds non-finite values, or no numeric
        column is shared.
    """
    _check_pair(real, synthetic)
    if columns is None:
        shared = _shared_columns(real, synthetic, None)
        columns = list(infer_feature_types(real, shared)[0])
        if not columns:
            raise ValueError(
                f"'real' and 'synthetic' share no numeric column; shared columns are {shared}."
            )
    columns = _shared_columns(real, synthetic, columns)
    x, y = _numeric_pair(real, synthetic, columns)
    rows = [_ecdf_distances(x[c], y[c]) for c in columns]
    return pd.DataFrame(rows, index=pd.Index(columns, name="column"), columns=["U_m", "U_a"])


# --------------------------------------------------------------------------------------------
# 2. Propensity-score mean squared error
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PMSEResult:
    r"""The pMSE of a synthetic dataset with its null reference.

    Attributes
    ----------
    pmse : float
        :math:`\frac{1}{N}\sum_i (\hat p_i - c)^2`.
    null_mean, null_sd : float
        Expected value and standard deviation of the pMSE when both datasets come from the
        same distribution (asymptotic formula, or permutation estimate if
        ``n_permutations > 0``).
    ratio : float
        ``pmse / null_mean``; about 1 for synthetic data indistinguishable from the real data.
    standardized : float
        ``(pmse - null_mean) / null_sd``; about N(0, 1)-sized under the null.
    c : float
        Share of synthetic records, ``n_synthetic / N``.
    n_parameters : int
        Parameters :math:`k` of the propensity model, intercept included (1 + rank of the
        centred design).
    n_real, n_synthetic : int
        Record counts.
    null_method : str
        ``"asymptotic"`` or ``"permutation"``.
    """

    pmse: float
    null_mean: float
    null_sd: float
    ratio: float
    standardized: float
    c: float
    n_parameters: int
    n_real: int
    n_synthetic: int
    null_method: str


def _propensity_design(
    real: pd.DataFrame, synthetic: pd.DataFrame, columns: Sequence[str] | None
) -> tuple[np.ndarray, np.ndarray]:
    """Stacked design (standardised numerics, one-hot categoricals) and labels (1 = synthetic)."""
    cols = _shared_columns(real, synthetic, columns)
    numeric, categorical = infer_feature_types(real, cols)
    check_finite_numeric(synthetic, numeric)  # a column numeric in real must be in synthetic
    stacked = pd.concat(
        [real[cols].reset_index(drop=True), synthetic[cols].reset_index(drop=True)],
        ignore_index=True,
    )
    design = FeatureEncoder(numeric, categorical).fit(stacked).transform(stacked)
    labels = np.r_[np.zeros(len(real)), np.ones(len(synthetic))]
    return design, labels


def _propensity_pmse(design: np.ndarray, labels: np.ndarray, random_state: int) -> float:
    """Fit the unpenalised main-effects logistic model and return the pMSE."""
    model = LogisticRegression(C=np.inf, max_iter=1000, random_state=random_state)
    prob = model.fit(design, labels).predict_proba(design)[:, 1]
    return float(np.mean((prob - labels.mean()) ** 2))


def pmse_result(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    n_permutations: int = 0,
    seed: SeedLike = None,
) -> PMSEResult:
    r"""Propensity-score mean squared error with its null expectation and ratio.

    Stack the real (label 0) and synthetic (label 1) records, :math:`N = n_{real} + n_{syn}`,
    fit a logistic regression of the label on the main effects of ``columns`` (numerics
    standardised over the stacked data, categoricals one-hot; no penalty, as a GLM fit), and
    with :math:`c = n_{syn} / N`

    .. math::

        \mathrm{pMSE} = \frac{1}{N} \sum_{i=1}^{N} (\hat p_i - c)^2 .

    0 means the model cannot tell the datasets apart; the maximum, :math:`c(1-c)`, is reached
    when it separates them perfectly. Smaller is better.

    Null reference. If both datasets come from one distribution and the model has :math:`k`
    parameters (intercept included), a first-order expansion of the fitted probabilities
    around :math:`c` gives :math:`N\,\mathrm{pMSE} \approx c(1-c)\,\chi^2_{k-1}`, so

    .. math::

        E[\mathrm{pMSE}] = \frac{(k-1)\,c(1-c)}{N}, \qquad
        \mathrm{sd}[\mathrm{pMSE}] = \frac{\sqrt{2(k-1)}\,c(1-c)}{N} .

    Snoke et al. (2018) print :math:`(k-1)(1-c)^2 c / N`; a direct simulation of
    this definition (unpenalised logistic fits, :math:`c` = 0.25, 0.5, 0.75) agrees with the
    :math:`c(1-c)` form above and not with the printed one (which is asymmetric in :math:`c`
    and half as large at :math:`c = 1/2`), so the formula above is used. With
    ``n_permutations > 0`` the null mean and sd are instead estimated by refitting with the
    labels permuted (as Snoke et al. 2018 also suggest), which needs no asymptotics.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        Confidential and synthetic data, at least one row each; not modified.
    columns : sequence of str, optional
        Columns of the propensity model. Default: every column of ``real`` that ``synthetic``
        also has. Numeric (non-boolean) dtypes are standardised, all others one-hot encoded.
    n_permutations : int, default 0
        Permutations for the null reference; 0 uses the asymptotic formula.
    seed : int, numpy.random.Generator, numpy.random.SeedSequence or None
        Randomness of the label permutations (and the solver's ``random_state``; the default
        lbfgs solver is deterministic, so with ``n_permutations=0`` the result does not
        depend on it).

    Returns
    -------
    PMSEResult
    """
    _check_pair(real, synthetic)
    n_permutations = check_positive_int(n_permutations, "n_permutations", minimum=0)
    rng = as_generator(seed)
    design, labels = _propensity_design(real, synthetic, columns)
    state = int(rng.integers(0, 2**31 - 1))
    value = _propensity_pmse(design, labels, state)
    n, c = labels.size, float(labels.mean())
    centred = design - design.mean(axis=0)
    k = 1 + int(np.linalg.matrix_rank(centred)) if design.shape[1] else 1
    if n_permutations == 0:
        null_mean = (k - 1) * c * (1 - c) / n
        null_sd = np.sqrt(2 * (k - 1)) * c * (1 - c) / n
        method = "asymptotic"
    else:
        perms = (rng.permutation(labels) for _ in range(n_permutations))
        null = np.array([_propensity_pmse(design, y, state) for y in perms])
        null_mean, null_sd = float(null.mean()), float(null.std(ddof=min(1, null.size - 1)))
        method = "permutation"
    ratio = value / null_mean if null_mean > 0 else np.nan
    standardized = (value - null_mean) / null_sd if null_sd > 0 else np.nan
    return PMSEResult(
        pmse=value,
        null_mean=float(null_mean),
        null_sd=float(null_sd),
        ratio=float(ratio),
        standardized=float(standardized),
        c=c,
        n_parameters=k,
        n_real=len(real),
        n_synthetic=len(synthetic),
        null_method=method,
    )


def pmse(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    seed: SeedLike = None,
) -> float:
    r"""Propensity-score mean squared error, :math:`\frac{1}{N}\sum_i (\hat p_i - c)^2`.

    The value of :func:`pmse_result` (see there for the model, the null expectation and the
    pMSE ratio). Smaller is better; about :math:`(k-1)c(1-c)/N` when the synthetic data are
    a sample from the real data's distribution.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        Confidential and synthetic data; not modified.
    columns : sequence of str, optional
        Columns of the propensity model (default: all shared columns).
    seed : int, numpy.random.Generator, numpy.random.SeedSequence or None
        Passed on as the solver's ``random_state``; the default lbfgs solver is
        deterministic, so the value does not depend on it.

    Returns
    -------
    float
    """
    return pmse_result(real, synthetic, columns, seed=seed).pmse


# --------------------------------------------------------------------------------------------
# 3. Means, medians and percentiles with intervals
# --------------------------------------------------------------------------------------------


def _mean_interval(x: np.ndarray, level: float) -> tuple[float, float, float]:
    n, mean = x.size, float(np.mean(x))
    half = stats.t.ppf(0.5 + level / 2, n - 1) * np.std(x, ddof=1) / np.sqrt(n)
    return mean, mean - half, mean + half


def _quantile_interval(x: np.ndarray, q: float, level: float) -> tuple[float, float, float, float]:
    """Estimate, order-statistic interval and its exact coverage for the q-quantile."""
    n, alpha = x.size, 1.0 - level
    sorted_x = np.sort(x)
    # 1-based ranks: X_(l) <= xi_q < X_(u) iff l <= B <= u - 1, B ~ Binomial(n, q).
    lo = int(stats.binom.ppf(alpha / 2, n, q))
    hi = int(stats.binom.ppf(1 - alpha / 2, n, q)) + 1
    lo, hi = max(lo, 1), min(hi, n)
    coverage = stats.binom.cdf(hi - 1, n, q) - stats.binom.cdf(lo - 1, n, q)
    return float(np.quantile(x, q)), sorted_x[lo - 1], sorted_x[hi - 1], float(coverage)


def _quantile_name(q: float) -> str:
    return "median" if q == 0.5 else f"q{100 * q:g}"


def estimate_summary(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    column: str,
    *,
    level: float = 0.95,
    quantiles: Sequence[float] = (0.5, 0.9),
) -> pd.DataFrame:
    r"""Mean, median and 90th percentile of ``column`` in both datasets, with intervals.

    The analysis-specific utility of the range-restricted paper (figures 4, 8-10, 13-14 and
    Table 1): how close the synthetic estimates are to the confidential ones.

    * Mean: :math:`\bar x \pm t_{n-1, (1+\text{level})/2}\, s / \sqrt n`.
    * Quantile :math:`q` (point estimate ``numpy.quantile``, linear interpolation = R type 7):
      the distribution-free order-statistic interval :math:`[x_{(l)}, x_{(u)}]` with
      :math:`l = F^{-1}(\alpha/2)`, :math:`u = F^{-1}(1-\alpha/2) + 1`, where :math:`F` is the
      Binomial(n, q) CDF and :math:`\alpha = 1 - \text{level}`. For continuous data
      :math:`P(x_{(l)} \le \xi_q \le x_{(u)}) = F(u-1) - F(l-1) \ge \text{level}`. When the
      sample is too small for that (:math:`l < 1` or :math:`u > n`, e.g. the 90th percentile
      with n = 30) the ranks are clipped to [1, n] and the interval's exact coverage, now
      below ``level``, is what the ``coverage`` column reports.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        Confidential and synthetic data, at least two rows each; not modified.
    column : str
        A numeric column present in both.
    level : float, default 0.95
        Nominal coverage, in (0, 1).
    quantiles : sequence of float, default (0.5, 0.9)
        Quantile levels in (0, 1); 0.5 is labelled ``"median"``, others ``"q90"`` and so on.

    Returns
    -------
    pandas.DataFrame
        One row per dataset (``"real"``, ``"synthetic"``) and statistic (``"mean"``, then the
        quantiles), with columns ``dataset``, ``statistic``, ``estimate``, ``lower``,
        ``upper``, ``n`` and ``coverage`` (``level`` for the t interval; the exact binomial
        coverage for the quantile intervals).
    """
    _check_pair(real, synthetic, min_rows=2)
    level = _check_level(level)
    qs = [check_in_interval(q, "quantiles", 0.0, 1.0, closed="neither") for q in quantiles]
    x, y = _numeric_pair(real, synthetic, [column])
    rows = []
    for name, values in (("real", x[column]), ("synthetic", y[column])):
        est, lo, hi = _mean_interval(values, level)
        rows.append((name, "mean", est, lo, hi, values.size, level))
        for q in qs:
            est, lo, hi, cov = _quantile_interval(values, q, level)
            rows.append((name, _quantile_name(q), est, lo, hi, values.size, cov))
    return pd.DataFrame(
        rows, columns=["dataset", "statistic", "estimate", "lower", "upper", "n", "coverage"]
    )


# --------------------------------------------------------------------------------------------
# 4. Confidence-interval overlap of regression coefficients
# --------------------------------------------------------------------------------------------


def interval_overlap(
    lower_real: ArrayLike,
    upper_real: ArrayLike,
    lower_synthetic: ArrayLike,
    upper_synthetic: ArrayLike,
) -> float | np.ndarray:
    r"""Interval overlap of Karr et al. (2006), elementwise.

    .. math::

        IO = \frac12 \left[ \frac{\min(u_o, u_s) - \max(l_o, l_s)}{u_o - l_o}
             + \frac{\min(u_o, u_s) - \max(l_o, l_s)}{u_s - l_s} \right] .

    1 for identical intervals, between 0 and 1 for partly overlapping ones, and *negative*
    when the intervals do not overlap (the more negative, the further apart). Larger is
    better.

    Parameters
    ----------
    lower_real, upper_real, lower_synthetic, upper_synthetic : array_like
        Interval ends (broadcast together); every interval must have ``lower < upper``.

    Returns
    -------
    float or numpy.ndarray
        A float for scalar inputs, an array otherwise.
    """
    lo_o, hi_o, lo_s, hi_s = np.broadcast_arrays(
        *(
            np.asarray(a, dtype=float)
            for a in (lower_real, upper_real, lower_synthetic, upper_synthetic)
        )
    )
    for name, lo, hi in (("real", lo_o, hi_o), ("synthetic", lo_s, hi_s)):
        bad = ~(np.isfinite(lo) & np.isfinite(hi) & (lo < hi))
        if bad.any():
            i = np.flatnonzero(bad.ravel())[0]
            raise ValueError(
                f"The {name} intervals must be finite with lower < upper; got "
                f"({lo.ravel()[i]}, {hi.ravel()[i]}) at position {i}."
            )
    common = np.minimum(hi_o, hi_s) - np.maximum(lo_o, lo_s)
    io = 0.5 * (common / (hi_o - lo_o) + common / (hi_s - lo_s))
    return float(io) if io.ndim == 0 else io


def _ols(frame: pd.DataFrame, outcome: str, predictors: list[str], name: str, log: bool):
    values = check_finite_numeric(frame, [outcome, *predictors])
    y = values[outcome]
    if log:
        if (y <= 0).any():
            i = int(np.flatnonzero(y <= 0)[0])
            raise ValueError(
                f"log_outcome=True needs '{outcome}' > 0 in '{name}'; row {frame.index[i]!r} "
                f"has {y[i]}."
            )
        y = np.log(y)
    sm = require("statsmodels.api", "The regression fits of the utility measures")
    design = sm.add_constant(
        np.column_stack([values[p] for p in predictors]) if predictors else np.empty((y.size, 0)),
        has_constant="add",
    )
    if np.linalg.matrix_rank(design) < design.shape[1]:
        raise ValueError(
            f"The design of '{outcome}' on {predictors} in '{name}' is rank deficient (a "
            f"constant or collinear predictor); the coefficients are not identified."
        )
    return sm.OLS(y, design).fit()


def ci_overlap(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    outcome: str,
    predictors: Sequence[str],
    *,
    level: float = 0.95,
    log_outcome: bool = False,
) -> pd.DataFrame:
    r"""Confidence-interval overlap per regression coefficient (Karr et al. 2006).

    Fits the same OLS regression (statsmodels, with intercept) of ``outcome`` (or its log)
    on ``predictors`` to each dataset, takes the t intervals at ``level`` of every
    coefficient, :math:`[l_o, u_o]` (real) and :math:`[l_s, u_s]` (synthetic), and reports
    :func:`interval_overlap`

    .. math::

        IO = \frac12 \left[ \frac{\min(u_o, u_s) - \max(l_o, l_s)}{u_o - l_o}
             + \frac{\min(u_o, u_s) - \max(l_o, l_s)}{u_s - l_s} \right] .

    IO = 1 for identical intervals and is negative when the intervals do not overlap.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        Confidential and synthetic data; not modified. Each needs more rows than the model
        has coefficients.
    outcome : str
        Numeric outcome column (positive if ``log_outcome``).
    predictors : sequence of str
        Numeric predictor columns (encode categoricals beforehand); may be empty.
    level : float, default 0.95
        Confidence level, in (0, 1).
    log_outcome : bool, default False
        Regress :math:`\log(\text{outcome})` (the lognormal regression of the paper's
        section 5).

    Returns
    -------
    pandas.DataFrame
        Indexed by coefficient (``"const"`` then the predictors), with columns
        ``estimate_real``, ``lower_real``, ``upper_real``, ``estimate_synthetic``,
        ``lower_synthetic``, ``upper_synthetic`` and ``overlap``.
    """
    if isinstance(predictors, str):
        raise TypeError(
            f"The 'predictors' argument must be a sequence of column names, not the string "
            f"{predictors!r}; use [{predictors!r}]."
        )
    predictors = list(predictors)
    _check_pair(real, synthetic, min_rows=len(predictors) + 2)
    level = _check_level(level)
    _numeric_pair(real, synthetic, [outcome, *predictors])
    fits = {
        name: _ols(frame, outcome, predictors, name, log_outcome)
        for name, frame in (("real", real), ("synthetic", synthetic))
    }
    out = pd.DataFrame(index=pd.Index(["const", *predictors], name="coefficient"))
    for name, fit in fits.items():
        ci = np.asarray(fit.conf_int(alpha=1 - level))
        out[f"estimate_{name}"] = np.asarray(fit.params)
        out[f"lower_{name}"] = ci[:, 0]
        out[f"upper_{name}"] = ci[:, 1]
    out["overlap"] = interval_overlap(
        out["lower_real"], out["upper_real"], out["lower_synthetic"], out["upper_synthetic"]
    )
    return out
