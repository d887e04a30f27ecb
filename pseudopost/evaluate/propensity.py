r"""Propensity-score utility with synthpop's definitions: pMSE and the standardised S_pMSE.

The general utility measure of Snoke, Raab, Nowok, Dibben & Slavkovic (2018), as synthpop's
``utility.gen`` computes it (synthpop 1.9-2, ``R/utility.syn.r``), so that values compare
across tools. The measures carry synthpop's names (``pMSE``, ``S_pMSE``, ``SPECKS``, ``PO50``,
``U``).

References
----------
Snoke, J., Raab, G. M., Nowok, B., Dibben, C. & Slavkovic, A. (2018). General and specific
utility measures for synthetic data. Journal of the Royal Statistical Society A 181, 663-688.

Woo, M. J., Reiter, J. P., Oganian, A. & Karr, A. F. (2009). Global measures of data utility
for microdata masked for disclosure limitation. Journal of Privacy and Confidentiality 1,
111-124.

Nowok, B., Raab, G. M. & Dibben, C. (2016). synthpop: bespoke creation of synthetic data in R.
Journal of Statistical Software 74(11), 1-26.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_in_interval, check_positive_int
from pseudopost.evaluate._logit_irls import design_rank_columns, fit_logistic
from pseudopost.evaluate._rpart import CartDesign
from pseudopost.evaluate._score_tests import ks_statistic, wilcoxon_w
from pseudopost.evaluate._synthpop_prep import (
    category_values,
    check_missing_codes,
    check_pair,
    check_variables,
    factor_codes,
    is_numeric,
    numeric_values,
)

__all__ = ["PropensityUtility", "propensity_utility"]


@dataclass(frozen=True)
class PropensityUtility:
    r"""Propensity-score utility of one synthetic dataset (see :func:`propensity_utility`).

    Attributes
    ----------
    method : str
        ``"cart"`` or ``"logit"``.
    pMSE : float
        :math:`\frac1N \sum_i (\hat p_i - c)^2`.
    S_pMSE : float
        ``pMSE / null_pMSE``: about 1 when the synthetic records are as hard to tell from the
        real ones as an independent sample of the same population would be.
    null_pMSE : float
        Expected pMSE of two independent samples of one distribution: :math:`(k-1)c(1-c)/N`
        (logit) or the mean pMSE over label permutations (cart).
    S_pMSE_synthpop, null_pMSE_synthpop : float
        The same with synthpop's null, :math:`(k-1)c(1-c)^2/N` (logit) or half the permutation
        mean (cart): the values synthpop prints.
    SPECKS, PO50, U : float
        Kolmogorov-Smirnov distance between the synthetic and real scores, the percentage of
        records the scores classify correctly minus 50, and the Wilcoxon rank-sum statistic
        :math:`W` of the synthetic scores (synthpop's definitions).
    c : float
        Share of synthetic records, :math:`n_{syn}/N`.
    n_real, n_synthetic : int
        Record counts.
    df : int or None
        :math:`k - 1`, the number of non-aliased coefficients of the logit model minus one.
    converged : bool or None
        Whether the logit IRLS converged within ``maxit`` iterations.
    n_splits : int or None
        Splits of the CART propensity tree.
    permutation_pMSE : tuple of float
        pMSE of each label permutation (cart; empty for logit).
    n_no_split : int or None
        Permutations whose tree made no split (synthpop's ``nnosplits``); when most make none
        the CART null is unreliable and the logit method is the better choice.
    variables : tuple of str
        The model's variables: the columns compared, then one indicator per numeric column with
        missing cells (``name_NA``) and per code (``name_cna_j``).
    dropped : tuple of str
        Columns left out because they hold at most one distinct value in both frames.
    """

    method: str
    pMSE: float
    S_pMSE: float
    null_pMSE: float
    S_pMSE_synthpop: float
    null_pMSE_synthpop: float
    SPECKS: float
    PO50: float
    U: float
    c: float
    n_real: int
    n_synthetic: int
    df: int | None
    converged: bool | None
    n_splits: int | None
    permutation_pMSE: tuple[float, ...]
    n_no_split: int | None
    variables: tuple[str, ...]
    dropped: tuple[str, ...]


@dataclass(frozen=True)
class _ModelColumn:
    name: str
    values: np.ndarray  # float (numeric) or 0-based level codes
    n_levels: int  # 0 for numeric


def _n_distinct(values: np.ndarray) -> int:
    return len({v for v in values if v is not None})


def _model_columns(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    columns: list[str],
    codes: Mapping[str, tuple[float, ...]],
) -> tuple[list[_ModelColumn], list[str]]:
    """synthpop's preparation of the stacked (synthetic first, then real) model frame."""
    main: list[_ModelColumn] = []
    extra: list[_ModelColumn] = []
    dropped: list[str] = []
    for c in columns:
        if is_numeric(real[c]):
            xr = numeric_values(real[c], c, "real")
            xs = numeric_values(synthetic[c], c, "synthetic")
            if np.unique(xr[~np.isnan(xr)]).size <= 1 and np.unique(xs[~np.isnan(xs)]).size <= 1:
                dropped.append(c)
                continue
            x = np.concatenate([xs, xr])
            miss = np.isnan(x)
            value = np.where(miss, 0.0, x)
            if miss.any():
                extra.append(_ModelColumn(f"{c}_NA", miss.astype(float), 0))
            for j, code in enumerate(codes.get(c, ())):
                hit = ~miss & (x == code)
                extra.append(_ModelColumn(f"{c}_cna_{j + 1}", hit.astype(float), 0))
                value[hit] = 0.0
            main.append(_ModelColumn(c, value, 0))
        else:
            vr, vs = category_values(real[c]), category_values(synthetic[c])
            if _n_distinct(vr) <= 1 and _n_distinct(vs) <= 1:
                dropped.append(c)
                continue
            cs, cr, levels = factor_codes(vs, vr)
            main.append(_ModelColumn(c, np.concatenate([cs, cr]), len(levels)))
    if not main:
        raise ValueError(
            f"Every compared column holds at most one distinct value in both frames "
            f"({dropped}); there is nothing to compare."
        )
    return main + extra, dropped


def _blocks(columns: list[_ModelColumn]) -> list[np.ndarray]:
    """Main-effect columns of each variable: itself, or level dummies without the first level."""
    out = []
    for col in columns:
        if col.n_levels == 0:
            out.append(col.values[:, None])
        else:
            out.append(np.eye(col.n_levels)[col.values][:, 1:])
    return out


def _n_parameters(columns: list[_ModelColumn], maxorder: int) -> int:
    """synthpop's count: 1 + sum over terms of order <= maxorder + 1 of prod(levels - 1)."""
    width = [1 if col.n_levels == 0 else col.n_levels - 1 for col in columns]
    total = 1
    for order in range(1, maxorder + 2):
        total += sum(int(np.prod(combo)) for combo in itertools.combinations(width, order))
    return total


def _logit_design(columns: list[_ModelColumn], maxorder: int) -> np.ndarray:
    """Design of ``t ~ .^(maxorder + 1)``: intercept, main effects and their interactions."""
    blocks = _blocks(columns)
    n = blocks[0].shape[0]
    parts = [np.ones((n, 1))]
    for order in range(1, maxorder + 2):
        for combo in itertools.combinations(blocks, order):
            prod = combo[0]
            for b in combo[1:]:
                prod = (prod[:, :, None] * b[:, None, :]).reshape(n, -1)
            parts.append(prod)
    return np.hstack(parts)


def _score_statistics(score: np.ndarray, labels: np.ndarray) -> tuple[float, float, float]:
    """SPECKS, PO50 and U of the propensity scores (synthpop's definitions)."""
    po50 = float(
        np.sum(((score > 0.5) & (labels == 1)) | ((score <= 0.5) & (labels == 0)))
        / score.size
        * 100
        - 50
    )
    return ks_statistic(score, labels, 1 - labels), po50, wilcoxon_w(score, labels, 1 - labels)


def _pmse(score: np.ndarray, c: float) -> float:
    return float(np.sum((score - c) ** 2) / score.size)


def propensity_utility(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    variables: Sequence[str] | None = None,
    *,
    method: str = "cart",
    missing_codes: Mapping[str, Sequence[float]] | None = None,
    maxorder: int = 1,
    max_params: int = 400,
    maxit: int = 200,
    nperms: int = 50,
    cp: float = 1e-3,
    minbucket: int = 5,
    seed: SeedLike = None,
) -> PropensityUtility:
    r"""pMSE and S_pMSE of ``synthetic`` against ``real`` as synthpop's ``utility.gen``.

    **Propensity score.** Stack the :math:`n_{syn}` synthetic records (label 1) and the
    :math:`n_{real}` real records (label 0), :math:`N = n_{syn} + n_{real}`,
    :math:`c = n_{syn}/N`, model the label on the compared variables and score each record
    with its fitted probability :math:`\hat p_i`:

    .. math::

        \mathrm{pMSE} = \frac1N \sum_{i=1}^{N} (\hat p_i - c)^2, \qquad
        \mathrm{S\_pMSE} = \mathrm{pMSE} / E_0[\mathrm{pMSE}] .

    * ``method="logit"``: ``glm(t ~ .^(maxorder + 1), family = binomial)``, i.e. main effects
      and all interactions up to order ``maxorder + 1`` (default: all two-way interactions),
      numeric variables as they are, categorical ones as treatment dummies; :math:`k` is the
      number of non-aliased coefficients, intercept included. As synthpop, the model may have
      at most ``max_params`` coefficients and ``maxorder`` must be below the number of model
      variables.
    * ``method="cart"``: rpart's classification tree with ``cp`` and ``minbucket`` (grown and
      pruned exactly as rpart 4.1 does), the score of a record being the share of synthetic
      records in its leaf.

    **Missing cells and codes** (synthpop's ``utility.gen``, after Rosenbaum & Rubin 1984): a
    categorical column's missing cells are a level of their own; a numeric column with missing
    cells gets an indicator ``name_NA`` and its missing cells are set to 0; each code of a
    numeric column (``missing_codes``, synthpop's ``cont.na``) gets an indicator
    ``name_cna_j`` and its cells are set to 0. Columns with at most one distinct value in both
    frames are left out.

    **Null expectation.** If the real and synthetic records are two independent samples of
    one distribution, a first-order expansion of the fitted logit probabilities around
    :math:`c` gives :math:`N\,\mathrm{pMSE} \approx c(1-c)\,\chi^2_{k-1}` (after Snoke et al.
    2018), so

    .. math::

        E_0[\mathrm{pMSE}] = \frac{(k-1)\,c\,(1-c)}{N} \qquad \text{(logit)},

    and for CART, which has no such formula, :math:`E_0` is the mean pMSE over ``nperms``
    random permutations of the labels (which makes the pooled records exchangeable, i.e.
    simulates exactly this null). ``S_pMSE`` uses this null: it is about 1 when the synthetic
    data are as close to the real data as a fresh sample of the same population.

    synthpop's logit formula (``utility.syn.r``: ``pMSEExp <- km1 * (1 - cc)^2 * cc / N``,
    printed in Snoke et al. 2018) is :math:`(k-1)(1-c)^2 c / N`, which understates the
    two-sample null above by the factor :math:`(1-c)`: simulated (logistic propensity,
    :math:`N = 4000`, :math:`k-1 = 6`, 300 replicates, :math:`c = 1/2`) the null is
    :math:`1.500/N`, as :math:`(k-1)c(1-c)/N` says, against :math:`0.750/N` from that formula
    (re-run with this function and 6 normal columns: :math:`N\,\overline{\mathrm{pMSE}} =
    1.595`, standard error 0.052). synthpop's CART null is likewise half the permutation mean
    (``simpMSE[i] <- ... / N / 2``), and its table ``S_pMSE``
    (:func:`~pseudopost.evaluate.table_utility.utility_tab`) has the same scale. That reference
    is the expectation under another hypothesis, not a slip: when the synthetic data are drawn
    from a model fitted to these very real data and reproduce what the propensity model looks
    at (resampling the real records, say), only the synthetic sampling noise separates the two
    frames, a synthetic-minus-real difference has variance :math:`\Sigma/n_{syn}` instead of
    :math:`\Sigma(1/n_{syn} + 1/n_{real})`, and the expected pMSE shrinks by
    :math:`n_{real}/N = 1 - c` (the same simulation with the synthetic records resampled from
    the real ones: :math:`N\,\overline{\mathrm{pMSE}} = 0.772`, standard error 0.023, against
    0.750; both nulls are checked by simulation in the tests). This function reports both:
    ``S_pMSE`` on the two-sample null and ``S_pMSE_synthpop``
    (:math:`= \mathrm{S\_pMSE}/(1-c)` for logit, :math:`2\,\mathrm{S\_pMSE}` for CART),
    the value synthpop prints, to compare across tools.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        Confidential and synthetic data, at least one row each; not modified.
    variables : sequence of str, optional
        Columns to compare. Default: every column of ``synthetic`` (all must be in ``real``),
        in the synthetic frame's order (which breaks ties between equally good CART splits).
    method : {"cart", "logit"}, default "cart"
        Propensity model (synthpop's default is ``"cart"``).
    missing_codes : mapping of str to list of float, optional
        Codes of numeric columns, e.g. ``{"income": [-8, -9]}``.
    maxorder : int, default 1
        Highest interaction order of the logit model minus one (0: main effects only).
    max_params : int, default 400
        Largest logit model allowed (synthpop's ``max.params``).
    maxit : int, default 200
        IRLS iterations of the logit fit.
    nperms : int, default 50
        Label permutations for the CART null.
    cp : float, default 0.001
        rpart's complexity parameter (synthpop's default).
    minbucket : int, default 5
        Smallest leaf of the tree (synthpop's default; rpart's ``minsplit`` is then 15).
    seed : int, numpy.random.Generator, numpy.random.SeedSequence or None
        Randomness of the permutations; the logit method uses none.

    Returns
    -------
    PropensityUtility

    Raises
    ------
    TypeError
        If an input is not a DataFrame, a column is numeric in one frame only, or a code of a
        numeric column is not a number.
    ValueError
        If a column is missing, an argument is out of range, no column varies, or the logit
        model is too large.

    Notes
    -----
    Differences from synthpop, all in corner cases: a missing cell found only in the synthetic
    frame makes its level or indicator as one in the real frame does (synthpop's logit fit
    drops such records); a numeric column whose code is 0 keeps its missing cells apart from
    that code.
    """
    real, synthetic = check_pair(real, synthetic)
    if method not in ("cart", "logit"):
        raise ValueError(f"The 'method' argument must be 'cart' or 'logit'. Got {method!r}.")
    maxorder = check_positive_int(maxorder, "maxorder", minimum=0)
    max_params = check_positive_int(max_params, "max_params")
    maxit = check_positive_int(maxit, "maxit")
    nperms = check_positive_int(nperms, "nperms")
    cp = check_in_interval(cp, "cp", 0.0, 1.0)
    minbucket = check_positive_int(minbucket, "minbucket")
    rng = as_generator(seed)
    cols = check_variables(variables, real, synthetic, "variables")
    codes = check_missing_codes(missing_codes, real, synthetic)
    columns, dropped = _model_columns(real, synthetic, cols, codes)

    n_syn, n_real = len(synthetic), len(real)
    n = n_syn + n_real
    c = n_syn / n
    labels = np.r_[np.ones(n_syn), np.zeros(n_real)]
    common = {
        "c": c,
        "n_real": n_real,
        "n_synthetic": n_syn,
        "variables": tuple(col.name for col in columns),
        "dropped": tuple(dropped),
    }
    if method == "logit":
        if maxorder >= len(columns):
            raise ValueError(
                f"The 'maxorder' argument ({maxorder}) must be below the number of model "
                f"variables ({len(columns)}: {[col.name for col in columns]}); use maxorder=0 "
                f"for main effects only."
            )
        n_params = _n_parameters(columns, maxorder)
        if n_params > max_params:
            raise ValueError(
                f"The logit model would have {n_params} coefficients, more than max_params="
                f"{max_params}; compare fewer variables, lower 'maxorder', or raise "
                f"'max_params' (large models may fail to converge)."
            )
        design = _logit_design(columns, maxorder)
        keep = design_rank_columns(design)
        score, converged = fit_logistic(design[:, keep], labels, maxit=maxit)
        km1 = keep.size - 1
        value = _pmse(score, c)
        null = km1 * c * (1 - c) / n
        null_sp = km1 * (1 - c) ** 2 * c / n
        extra = {
            "df": km1,
            "converged": converged,
            "n_splits": None,
            "permutation_pMSE": (),
            "n_no_split": None,
        }
    else:
        tree = CartDesign(
            [col.values if col.n_levels == 0 else (col.values, col.n_levels) for col in columns]
        )
        kw = {"cp": cp, "minbucket": minbucket}
        score, n_splits = tree.leaf_probabilities(labels, **kw)
        value = _pmse(score, c)
        perm = []
        for _ in range(nperms):
            p, _ = tree.leaf_probabilities(rng.permutation(labels), **kw)
            perm.append(_pmse(p, c))
        perm_arr = np.asarray(perm)
        null = float(perm_arr.mean())
        null_sp = null / 2
        extra = {
            "df": None,
            "converged": None,
            "n_splits": n_splits,
            "permutation_pMSE": tuple(float(v) for v in perm_arr),
            "n_no_split": int(np.sum(perm_arr < 1e-8)),
        }
    specks, po50, u = _score_statistics(score, labels)
    with np.errstate(divide="ignore", invalid="ignore"):
        s_pmse = float(np.float64(value) / null)
        s_pmse_sp = float(np.float64(value) / null_sp)
    return PropensityUtility(
        method=method,
        pMSE=value,
        S_pMSE=s_pmse,
        null_pMSE=float(null),
        S_pMSE_synthpop=s_pmse_sp,
        null_pMSE_synthpop=float(null_sp),
        SPECKS=specks,
        PO50=po50,
        U=u,
        **common,
        **extra,
    )
