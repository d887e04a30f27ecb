r"""Combining rules for inference from m synthetic datasets.

Fit the same analysis on each synthetic dataset l = 1..m, giving an estimate :math:`q_l` and its
variance :math:`u_l`. With :math:`\bar q = \frac1m\sum q_l`,
:math:`b = \frac{1}{m-1}\sum (q_l - \bar q)^2` and :math:`\bar u = \frac1m\sum u_l`:

* **Fully synthetic data** (Raghunathan, Reiter & Rubin 2003):
  :math:`T_f = (1 + 1/m)\,b - \bar u`, with
  :math:`\nu_f = (m - 1)(1 - \bar u / ((1 + 1/m) b))^2` degrees of freedom. :math:`T_f` can be
  negative; then the conservative :math:`T_f^* = \bar u` is used (Reiter 2002 suggests
  :math:`(n_{syn}/n)\bar u`; with synthetic sets as large as the data this is :math:`\bar u`),
  ``adjusted`` says so and :math:`\nu` is :math:`\infty`-like (``m - 1`` is reported).
* **Partially synthetic data** (Reiter 2003): :math:`T_p = b/m + \bar u`,
  :math:`\nu_p = (m - 1)(1 + \bar u / (b/m))^2`.

pseudopost's ready models release the predictors as given and synthesize the outcome, which is
partially synthetic data: use ``rule="partially"`` for them. ``rule="fully"`` is for releases
where every column is synthesized.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats

__all__ = ["CombinedEstimate", "combine", "combine_fits"]

Rule = Literal["fully", "partially"]


@dataclass(frozen=True)
class CombinedEstimate:
    """Combined inference for one or more coefficients (pandas Series indexed by name)."""

    estimate: pd.Series
    variance: pd.Series
    df: pd.Series
    between: pd.Series
    within: pd.Series
    adjusted: pd.Series
    m: int
    rule: str

    @property
    def se(self) -> pd.Series:
        return np.sqrt(self.variance)

    def conf_int(self, level: float = 0.95) -> pd.DataFrame:
        """t intervals :math:`\\bar q \\pm t_{\\nu}\\sqrt{T}`."""
        if not 0 < level < 1:
            raise ValueError(f"The 'level' parameter must be in (0, 1). Got {level!r}.")
        t = stats.t.ppf(0.5 + level / 2, self.df.to_numpy())
        half = t * self.se.to_numpy()
        return pd.DataFrame(
            {"lower": self.estimate - half, "upper": self.estimate + half},
            index=self.estimate.index,
        )

    def table(self) -> pd.DataFrame:
        """Estimate, standard error, df, b, u-bar and the 95 % interval, one row per term."""
        ci = self.conf_int()
        return pd.DataFrame(
            {
                "estimate": self.estimate,
                "se": self.se,
                "df": self.df,
                "between": self.between,
                "within": self.within,
                "adjusted": self.adjusted,
                "lower": ci["lower"],
                "upper": ci["upper"],
            }
        )


def _as_frame(values: Sequence[Any], name: str) -> pd.DataFrame:
    rows = [v if isinstance(v, pd.Series) else pd.Series(np.atleast_1d(v)) for v in values]
    frame = pd.DataFrame(rows).reset_index(drop=True)
    if frame.isna().any().any():
        raise ValueError(f"'{name}' must have the same terms in every dataset, all finite.")
    return frame.astype(float)


def combine(estimates: Sequence[Any], variances: Sequence[Any], *, rule: Rule) -> CombinedEstimate:
    """Combine per-dataset estimates and variances (scalars, arrays or Series by term)."""
    if rule not in ("fully", "partially"):
        raise ValueError(f"The 'rule' parameter must be 'fully' or 'partially'. Got {rule!r}.")
    q = _as_frame(estimates, "estimates")
    u = _as_frame(variances, "variances")
    m = len(q)
    if m < 2:
        raise ValueError(f"Combining rules need m >= 2 synthetic datasets; got {m}.")
    if u.shape != q.shape or list(u.columns) != list(q.columns):
        raise ValueError(
            f"'variances' must match 'estimates' (shape {q.shape}, terms {list(q.columns)}); "
            f"got shape {u.shape}, terms {list(u.columns)}."
        )
    if (u < 0).any().any():
        raise ValueError("'variances' must be >= 0.")
    qbar = q.mean()
    b = q.var(ddof=1)
    ubar = u.mean()
    if rule == "fully":
        t = (1 + 1 / m) * b - ubar
        adjusted = t <= 0
        t = t.where(~adjusted, ubar)
        ratio = ubar / ((1 + 1 / m) * b).where(b > 0, np.nan)
        df = ((m - 1) * (1 - ratio) ** 2).where(~adjusted, float(m - 1))
    else:
        t = b / m + ubar
        adjusted = pd.Series(False, index=q.columns)
        ratio = ubar / (b / m).where(b > 0, np.nan)
        df = ((m - 1) * (1 + ratio) ** 2).fillna(np.inf)
    return CombinedEstimate(qbar, t, df, b, ubar, adjusted, m, rule)


def combine_fits(
    datasets: Sequence[pd.DataFrame], fit: Callable[[pd.DataFrame], Any], *, rule: Rule
) -> CombinedEstimate:
    """Fit ``fit(df)`` on each synthetic dataset and combine.

    ``fit`` returns either a statsmodels-style results object (``.params`` and ``.bse``, e.g.
    ``lambda d: smf.ols("y ~ x", d).fit()``) or a pair ``(estimates, variances)``, which is how
    a scikit-learn style estimator (which has no standard errors) is wrapped.
    """
    if len(datasets) < 2:
        raise ValueError(f"'datasets' must hold m >= 2 synthetic datasets; got {len(datasets)}.")
    est, var = [], []
    for i, d in enumerate(datasets):
        res = fit(d)
        if hasattr(res, "params") and hasattr(res, "bse"):
            q, se = res.params, res.bse
            est.append(pd.Series(q))
            var.append(pd.Series(se) ** 2)
        elif isinstance(res, tuple) and len(res) == 2:
            est.append(
                res[0] if isinstance(res[0], pd.Series) else pd.Series(np.atleast_1d(res[0]))
            )
            var.append(
                res[1] if isinstance(res[1], pd.Series) else pd.Series(np.atleast_1d(res[1]))
            )
        else:
            raise TypeError(
                "'fit' must return a results object with .params and .bse, or a pair "
                f"(estimates, variances); dataset {i} gave {type(res).__name__}."
            )
    return combine(est, var, rule=rule)
