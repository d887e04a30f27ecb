r"""Utility and disclosure risk of whole synthetic records (mixed categorical / numeric columns).

* Global utility: the pMSE of a propensity model on **all** columns
  (:func:`~pseudopost.evaluate.pmse_result`), and per column the ECDF measures :math:`U_m`,
  :math:`U_a` (numeric) or the total-variation distance of the level shares (categorical),

  .. math:: \mathrm{TV} = \tfrac12 \sum_{\ell} |\hat p_\ell - \hat p^*_\ell| \in [0, 1].

* Association structure: a matrix of pairwise associations in [0, 1] (numeric-numeric: absolute
  Pearson correlation; categorical-categorical: Cramér's V,
  :math:`V = \sqrt{\chi^2 / (n \min(r - 1, c - 1))}`; numeric-categorical: the correlation ratio
  :math:`\eta = \sqrt{\sum_g n_g (\bar y_g - \bar y)^2 / \sum_i (y_i - \bar y)^2}`), and its
  difference synthetic minus real, with plots of marginals and of that difference.
* Identification risk over key variables (Hu 2019): expected match risk and true match rate of
  :func:`pseudopost.evaluate.disclosure.identification_risk`, for several synthesizers and
  outcomes (meaningful when synthetic row i is the synthetic version of real record i, i.e. the
  keys are kept or drawn conditionally on record i's kept columns). A categorical outcome
  matches only on equal levels (radius 0). For fully synthetic records, where rows do not
  correspond, :func:`match_risk_table` reports how often a synthetic record singles out one real
  record on the keys (:func:`pseudopost.evaluate.disclosure.match_risk`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats.contingency import association

from pseudopost._rng import SeedLike
from pseudopost._validation import check_columns, check_frame
from pseudopost.evaluate._features import infer_feature_types
from pseudopost.evaluate.utility import PMSEResult, ecdf_utility, pmse_result

__all__ = [
    "WholeRecordUtility",
    "association_difference",
    "association_matrix",
    "column_utility",
    "correlation_ratio",
    "cramers_v",
    "identification_risk_table",
    "match_risk_table",
    "plot_association_difference",
    "plot_marginals",
    "total_variation",
    "whole_record_utility",
]


def _columns(real: pd.DataFrame, synthetic: pd.DataFrame, columns) -> list[str]:
    check_frame(real, "real", min_rows=2)
    check_frame(synthetic, "synthetic", min_rows=2)
    if columns is None:
        cols = [c for c in real.columns if c in synthetic.columns]
        if not cols:
            raise ValueError("'real' and 'synthetic' share no column.")
        return cols
    if isinstance(columns, str):
        raise TypeError(f"'columns' must be a sequence of names, not the string {columns!r}.")
    cols = list(columns)
    check_columns(real, cols, "real")
    check_columns(synthetic, cols, "synthetic")
    return cols


def total_variation(real: pd.Series, synthetic: pd.Series) -> float:
    r""":math:`\tfrac12\sum_\ell |\hat p_\ell - \hat p^*_\ell|` over the union of levels."""
    p = real.astype(object).value_counts(normalize=True)
    q = synthetic.astype(object).value_counts(normalize=True)
    both = p.index.union(q.index)
    return float(0.5 * np.abs(p.reindex(both, fill_value=0) - q.reindex(both, fill_value=0)).sum())


def column_utility(
    real: pd.DataFrame, synthetic: pd.DataFrame, columns: Sequence[str] | None = None
) -> pd.DataFrame:
    """Per column: ``kind``, ``U_m`` and ``U_a`` (numeric) or ``tv`` (categorical), NaN where
    a measure does not apply. Indexed by column name."""
    cols = _columns(real, synthetic, columns)
    numeric, _ = infer_feature_types(real, cols)
    ecdf = ecdf_utility(real, synthetic, list(numeric)) if numeric else None
    rows = []
    for c in cols:
        if c in numeric:
            rows.append((c, "numeric", ecdf.loc[c, "U_m"], ecdf.loc[c, "U_a"], np.nan))
        else:
            rows.append((c, "categorical", np.nan, np.nan, total_variation(real[c], synthetic[c])))
    return pd.DataFrame(rows, columns=["column", "kind", "U_m", "U_a", "tv"]).set_index("column")


def cramers_v(x: pd.Series, y: pd.Series) -> float:
    """Cramér's V of two categorical series (0 when either has one level)."""
    table = pd.crosstab(x.astype(object).to_numpy(), y.astype(object).to_numpy()).to_numpy()
    if min(table.shape) < 2:
        return 0.0
    return float(association(table, method="cramer"))


def correlation_ratio(categories: pd.Series, values: pd.Series) -> float:
    r"""The correlation ratio :math:`\eta` of a numeric ``values`` on a categorical grouping."""
    y = values.to_numpy(dtype=float)
    total = np.sum((y - y.mean()) ** 2)
    if total == 0:
        return 0.0
    groups = pd.Series(y).groupby(categories.astype(object).to_numpy())
    between = float((groups.count() * (groups.mean() - y.mean()) ** 2).sum())
    return float(np.sqrt(between / total))


def association_matrix(frame: pd.DataFrame, columns: Sequence[str] | None = None) -> pd.DataFrame:
    """Pairwise associations in [0, 1]: \\|Pearson r\\|, Cramér's V or the correlation ratio."""
    check_frame(frame, "frame", min_rows=2)
    cols = list(frame.columns) if columns is None else check_columns(frame, columns, "frame")
    numeric, _ = infer_feature_types(frame, cols)
    out = pd.DataFrame(np.eye(len(cols)), index=cols, columns=cols)
    for i, a in enumerate(cols):
        for b in cols[i + 1 :]:
            if a in numeric and b in numeric:
                xa, xb = frame[a].to_numpy(float), frame[b].to_numpy(float)
                r = 0.0 if xa.std() == 0 or xb.std() == 0 else abs(np.corrcoef(xa, xb)[0, 1])
            elif a in numeric:
                r = correlation_ratio(frame[b], frame[a])
            elif b in numeric:
                r = correlation_ratio(frame[a], frame[b])
            else:
                r = cramers_v(frame[a], frame[b])
            out.loc[a, b] = out.loc[b, a] = float(r)
    return out


def association_difference(
    real: pd.DataFrame, synthetic: pd.DataFrame, columns: Sequence[str] | None = None
) -> pd.DataFrame:
    """Synthetic minus real :func:`association_matrix` (0 on the diagonal)."""
    cols = _columns(real, synthetic, columns)
    return association_matrix(synthetic, cols) - association_matrix(real, cols)


@dataclass(frozen=True)
class WholeRecordUtility:
    """pMSE over all columns, per-column measures and the association difference."""

    pmse: PMSEResult
    columns: pd.DataFrame
    association_difference: pd.DataFrame

    @property
    def mean_abs_association_difference(self) -> float:
        d = self.association_difference.to_numpy()
        off = ~np.eye(d.shape[0], dtype=bool)
        return float(np.abs(d[off]).mean()) if off.any() else 0.0


def whole_record_utility(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    seed: SeedLike = None,
) -> WholeRecordUtility:
    """pMSE (main-effects propensity model on all ``columns``), :func:`column_utility` and
    :func:`association_difference` of one synthetic dataset."""
    cols = _columns(real, synthetic, columns)
    return WholeRecordUtility(
        pmse_result(real, synthetic, cols, seed=seed),
        column_utility(real, synthetic, cols),
        association_difference(real, synthetic, cols),
    )


def _as_groups(synthetic) -> dict[str, pd.DataFrame]:
    if isinstance(synthetic, pd.DataFrame):
        return {"synthetic": synthetic}
    if isinstance(synthetic, Mapping) and synthetic:
        return dict(synthetic)
    raise TypeError("'synthetic' must be a DataFrame or a non-empty mapping label -> DataFrame.")


def plot_marginals(
    real: pd.DataFrame,
    synthetic: pd.DataFrame | Mapping[str, pd.DataFrame],
    columns: Sequence[str] | None = None,
    *,
    ncols: int = 3,
    bins: int = 30,
    max_levels: int = 20,
):
    """One panel per column: level shares as grouped bars (categorical; the ``max_levels``
    most frequent real levels) or density histograms (numeric), real against each synthetic
    dataset. Returns the matplotlib figure."""
    import matplotlib.pyplot as plt

    groups = _as_groups(synthetic)
    cols = _columns(real, next(iter(groups.values())), columns)
    numeric, _ = infer_feature_types(real, cols)
    nrows = -(-len(cols) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.0 * nrows), squeeze=False)
    frames = {"real": real, **groups}
    for ax, c in zip(axes.ravel(), cols, strict=False):
        if c in numeric:
            edges = np.histogram_bin_edges(real[c].to_numpy(float), bins=bins)
            for label, f in frames.items():
                ax.hist(
                    f[c].to_numpy(float), bins=edges, density=True, histtype="step", label=label
                )
        else:
            levels = real[c].astype(object).value_counts().index[:max_levels]
            width = 0.8 / len(frames)
            for k, (label, f) in enumerate(frames.items()):
                share = (
                    f[c].astype(object).value_counts(normalize=True).reindex(levels, fill_value=0)
                )
                ax.bar(np.arange(len(levels)) + k * width, share.to_numpy(), width, label=label)
            ax.set_xticks(np.arange(len(levels)) + 0.4 - width / 2, [str(v) for v in levels])
            ax.tick_params(axis="x", rotation=60, labelsize=7)
        ax.set_title(c)
    for ax in axes.ravel()[len(cols) :]:
        ax.set_visible(False)
    axes.ravel()[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_association_difference(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    columns: Sequence[str] | None = None,
    *,
    ax=None,
    title: str = "association: synthetic - real",
):
    """Heat map of :func:`association_difference` (diverging colours, values annotated)."""
    import matplotlib.pyplot as plt

    diff = association_difference(real, synthetic, columns)
    if ax is None:
        size = 0.6 * len(diff) + 2
        _, ax = plt.subplots(figsize=(size + 1, size))
    lim = max(0.05, float(np.abs(diff.to_numpy()).max()))
    im = ax.imshow(diff.to_numpy(), cmap="RdBu_r", vmin=-lim, vmax=lim)
    ax.set_xticks(range(len(diff)), diff.columns, rotation=60, ha="right")
    ax.set_yticks(range(len(diff)), diff.index)
    for i in range(len(diff)):
        for j in range(len(diff)):
            ax.text(j, i, f"{diff.iat[i, j]:.2f}", ha="center", va="center", fontsize=7)
    ax.figure.colorbar(im, ax=ax, shrink=0.8)
    ax.set_title(title)
    return ax


def identification_risk_table(
    real: pd.DataFrame,
    synthetic: pd.DataFrame | Mapping[str, pd.DataFrame],
    keys: Sequence[str],
    outcomes: Sequence[str],
    radius: float = 0.1,
) -> pd.DataFrame:
    """Identification risk (expected match risk, true match rate) of each synthetic dataset for
    each outcome, the intruder knowing the real ``keys`` of every record. Synthetic row i must be
    the synthetic version of real record i. Categorical keys match on equal levels; a
    categorical outcome matches on equal levels (radius 0), a numeric one within
    ``radius * |y|``."""
    from pseudopost.evaluate.disclosure import identification_risk

    groups = _as_groups(synthetic)
    if isinstance(keys, str) or isinstance(outcomes, str):
        raise TypeError("'keys' and 'outcomes' must be sequences of column names, not strings.")
    rows = []
    for label, syn in groups.items():
        check_columns(syn, [*keys, *outcomes], f"synthetic '{label}'")
        for y in outcomes:
            check_columns(real, [*keys, y], "real")
            numeric = pd.api.types.is_numeric_dtype(real[y]) and not pd.api.types.is_bool_dtype(
                real[y]
            )
            r, s, rad = real, syn, radius
            if not numeric:  # codes shared by both frames; equal levels only
                levels = {v: k for k, v in enumerate(pd.unique(real[y].astype(object)))}
                r = real.assign(**{y: real[y].astype(object).map(levels).astype(float)})
                s = syn.assign(**{y: syn[y].astype(object).map(levels).fillna(-1).astype(float)})
                rad = 0.0
            risk = identification_risk(r, s, list(keys), y, rad)
            rows.append(
                (label, y, risk["expected_match_risk"], risk["true_match_rate"], risk["records"])
            )
    return pd.DataFrame(
        rows,
        columns=["synthesizer", "outcome", "expected_match_risk", "true_match_rate", "records"],
    )


def match_risk_table(
    real: pd.DataFrame,
    synthetic: pd.DataFrame | Mapping[str, pd.DataFrame],
    keys: Sequence[str],
    radius: float = 0.1,
) -> pd.DataFrame:
    """Key-matching risk of fully synthetic records, one row per synthetic dataset: shares of
    synthetic records matching exactly one real record, of real records singled out that way,
    and of real records matched at all (:func:`pseudopost.evaluate.disclosure.match_risk`)."""
    from pseudopost.evaluate.disclosure import match_risk

    groups = _as_groups(synthetic)
    if isinstance(keys, str):
        raise TypeError("'keys' must be a sequence of column names, not a string.")
    rows = []
    for label, syn in groups.items():
        risk = match_risk(real, syn, list(keys), radius)
        rows.append(
            (
                label,
                risk["unique_match_share"],
                risk["singled_out_share"],
                risk["matched_share"],
            )
        )
    return pd.DataFrame(
        rows,
        columns=["synthesizer", "unique_match_share", "singled_out_share", "matched_share"],
    )
