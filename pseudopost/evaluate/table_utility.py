r"""One-, two- and three-way table utility with synthpop's definitions (``utility.tab``).

The tabular utility measures of Raab, Nowok & Dibben (2021) as synthpop's ``utility.tab`` and
``utility.tables`` compute them (synthpop 1.9-2, ``R/utility.syn.r``, ``R/utility.tables.R``),
under synthpop's names, so that values compare across tools.

References
----------
Raab, G. M., Nowok, B. & Dibben, C. (2021). Assessing, visualizing and improving the utility of
synthetic data. arXiv:2109.12717.

Snoke, J., Raab, G. M., Nowok, B., Dibben, C. & Slavkovic, A. (2018). General and specific
utility measures for synthetic data. Journal of the Royal Statistical Society A 181, 663-688.

Voas, D. & Williamson, P. (2001). Evaluating goodness-of-fit measures for synthetic microdata.
Geographical and Environmental Modelling 5, 177-200.

Read, T. R. C. & Cressie, N. A. C. (1988). Goodness-of-Fit Statistics for Discrete Multivariate
Data. Springer, New York.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pseudopost._validation import check_positive_int
from pseudopost.evaluate._score_tests import ks_statistic, wilcoxon_w
from pseudopost.evaluate._synthpop_prep import (
    category_values,
    check_missing_codes,
    check_pair,
    check_variables,
    factor_codes,
    group_numeric,
    is_numeric,
    numeric_values,
)

__all__ = ["TABLE_STATISTICS", "TableUtility", "utility_tab", "utility_tables"]

TABLE_STATISTICS = (
    "VW",
    "FT",
    "JSD",
    "SPECKS",
    "WMabsDD",
    "U",
    "G",
    "pMSE",
    "PO50",
    "MabsDD",
    "dBhatt",
    "S_VW",
    "S_FT",
    "S_JSD",
    "S_WMabsDD",
    "S_G",
    "S_pMSE",
    "df",
    "dfG",
    "nempty",
)
"""The statistics of :func:`utility_tab`, in synthpop's order and with synthpop's names."""


@dataclass(frozen=True)
class TableUtility:
    """Utility of one table (see :func:`utility_tab`).

    Attributes
    ----------
    variables : tuple of str
        The table's variables.
    statistics : pandas.Series
        The measures of :data:`TABLE_STATISTICS`, by name (as floats; ``df``, ``dfG`` and
        ``nempty`` are whole numbers).
    table_real, table_synthetic : pandas.Series
        Cell counts over every combination of levels (empty cells included), indexed by the
        levels (a MultiIndex for two or more variables).
    """

    variables: tuple[str, ...]
    statistics: pd.Series
    table_real: pd.Series
    table_synthetic: pd.Series


def _levels_and_codes(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    column: str,
    ngroups: int,
    codes: Mapping[str, tuple[float, ...]],
) -> tuple[np.ndarray, np.ndarray, list]:
    """Level codes of one variable: numerics grouped, missing cells as a level."""
    if is_numeric(real[column]):
        grouped = group_numeric(
            numeric_values(real[column], column, "real"),
            numeric_values(synthetic[column], column, "synthetic"),
            ngroups,
            codes.get(column, ()),
            column,
        )
        return grouped.real, grouped.synthetic, grouped.levels
    return factor_codes(category_values(real[column]), category_values(synthetic[column]))


def _table_statistics(td: np.ndarray, ts: np.ndarray, nempty: int) -> dict[str, float]:
    """synthpop's ``utility.tab`` statistics from the non-empty cells (``k.syn = FALSE``)."""
    totcells = td.size
    df = totcells - 1
    n = float(np.sum(ts + td))
    cc = float(np.sum(ts)) / n
    sumos = ts + td
    expect = sumos * cc
    diff = ts - td * cc / (1 - cc)
    with np.errstate(divide="ignore", invalid="ignore"):
        vw = float(np.sum(diff**2 / expect))
        ft = float(4 * np.sum((np.sqrt(ts) - np.sqrt(cc / (1 - cc) * td)) ** 2))
        ptabd, ptabs = td / np.sum(td), ts / np.sum(ts)
        phalf = (ptabd + ptabs) * 0.5
        jsd = float(
            np.sum((ptabd * np.log2(ptabd / phalf))[ptabd > 0]) / 2
            + np.sum((ptabs * np.log2(ptabs / phalf))[ptabs > 0]) / 2
        )
        both = (ts > 1e-8) & (td > 1e-8)
        sok, dok = ts[both], td[both]
        dfg = sok.size - 1
        g = float(2 * np.sum(sok * np.log(sok / np.sum(sok) / dok * np.sum(dok))))
        score = ts / (ts + td)
        predsyn = ptabs > ptabd
        po50 = float(
            (np.sum(ts[predsyn]) + np.sum(td[~predsyn])) / (np.sum(ts) + np.sum(td)) * 100 - 50
        )
        wmabsdd = float(np.sum(np.abs(diff) / np.sqrt(expect)) / np.sqrt(2 / np.pi))
        out = {
            "VW": vw,
            "FT": ft,
            "JSD": jsd,
            "SPECKS": ks_statistic(score, ts, td),
            "WMabsDD": wmabsdd,
            "U": wilcoxon_w(score, ts, td),
            "G": g,
            "pMSE": vw * cc * (1 - cc) ** 2 / n,
            "PO50": po50,
            "MabsDD": float(np.sum(np.abs(diff)) / np.sum(ts)),
            "dBhatt": float(np.sqrt(max(0.0, 1 - np.sum(np.sqrt(ptabd * ptabs))))),
            "S_VW": np.float64(vw) / df,
            "S_FT": np.float64(ft) / df,
            "S_JSD": np.float64(jsd) * 2 * n / df / np.log(2),
            "S_WMabsDD": np.float64(wmabsdd) / df,
            "S_G": np.float64(g) / dfg,
            "S_pMSE": np.float64(vw) / df,
            "df": df,
            "dfG": dfg,
            "nempty": nempty,
        }
    return {k: float(v) for k, v in out.items()}


def _check_ngroups(ngroups: int) -> int:
    return check_positive_int(ngroups, "ngroups", minimum=2)


def _tab(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    variables: list[str],
    ngroups: int,
    codes: Mapping[str, tuple[float, ...]],
    max_table: float,
    cache: dict | None = None,
) -> TableUtility:
    coded = []
    for v in variables:
        if cache is not None and v in cache:
            coded.append(cache[v])
            continue
        item = _levels_and_codes(real, synthetic, v, ngroups, codes)
        if cache is not None:
            cache[v] = item
        coded.append(item)
    shape = tuple(len(levels) for _, _, levels in coded)
    size = float(np.prod(shape, dtype=float))
    if size > max_table:
        raise ValueError(
            f"The table of {variables} has {size:.0f} cells, more than max_table={max_table:.0f}"
            f"; use fewer variables, a smaller 'ngroups' or raise 'max_table'."
        )
    cell_real = np.ravel_multi_index(tuple(cr for cr, _, _ in coded), shape)
    cell_syn = np.ravel_multi_index(tuple(cs for _, cs, _ in coded), shape)
    tab_real = np.bincount(cell_real, minlength=int(size)).astype(float)
    tab_syn = np.bincount(cell_syn, minlength=int(size)).astype(float)
    used = tab_real + tab_syn > 0
    stats = _table_statistics(tab_real[used], tab_syn[used], int(np.sum(~used)))
    if len(variables) == 1:
        index = pd.Index([str(x) for x in coded[0][2]], name=variables[0])
    else:
        index = pd.MultiIndex.from_product(
            [[str(x) for x in levels] for _, _, levels in coded], names=variables
        )
    return TableUtility(
        variables=tuple(variables),
        statistics=pd.Series(stats, dtype=float).reindex(TABLE_STATISTICS),
        table_real=pd.Series(tab_real.astype(np.int64), index=index, name="real"),
        table_synthetic=pd.Series(tab_syn.astype(np.int64), index=index, name="synthetic"),
    )


def utility_tab(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    variables: Sequence[str],
    *,
    ngroups: int = 5,
    missing_codes: Mapping[str, Sequence[float]] | None = None,
    max_table: float = 1e6,
) -> TableUtility:
    r"""Utility of the table of ``variables`` as synthpop's ``utility.tab``.

    **Table.** Numeric variables are grouped into ``ngroups`` groups (synthpop's default 5;
    see ``pseudopost.evaluate._synthpop_prep.group_numeric``: quantile breaks of the
    real and synthetic values together, equal-width breaks when quantiles give fewer than
    three levels), each code of a numeric column (``missing_codes``, synthpop's ``cont.na``)
    and the missing cells of any variable are levels of their own (``useNA = TRUE``). Cells
    empty in both frames are dropped; the :math:`K` cells left have real counts :math:`d_j`
    and synthetic counts :math:`s_j`, :math:`N = \sum_j (s_j + d_j)`,
    :math:`c = \sum_j s_j / N`, :math:`\mathrm{df} = K - 1`, :math:`e_j = (s_j + d_j)\,c`
    and :math:`\delta_j = s_j - d_j\,c/(1-c)`. Then

    .. math::

        \mathrm{VW} = \sum_j \delta_j^2 / e_j, \qquad
        \mathrm{FT} = 4 \sum_j \Big(\sqrt{s_j} - \sqrt{d_j\,c/(1-c)}\Big)^2, \qquad
        \mathrm{pMSE} = \mathrm{VW}\,c\,(1-c)^2 / N,

    .. math::

        \mathrm{S\_pMSE} = \mathrm{S\_VW} = \mathrm{VW}/\mathrm{df}, \qquad
        \mathrm{S\_FT} = \mathrm{FT}/\mathrm{df},

    VW being :math:`1/(1-c)` times Pearson's :math:`\chi^2` of the two-row table (the
    Voas-Williamson statistic) and FT the Freeman-Tukey statistic. With the shares
    :math:`p^d_j = d_j/\sum d`, :math:`p^s_j = s_j/\sum s` and :math:`m_j = (p^d_j+p^s_j)/2`:
    :math:`\mathrm{JSD} = \frac12\sum_j p^d_j \log_2(p^d_j/m_j) + \frac12\sum_j p^s_j
    \log_2(p^s_j/m_j)` and :math:`\mathrm{S\_JSD} = 2N\,\mathrm{JSD}/(\mathrm{df}\ln 2)`;
    :math:`G = 2\sum s_j \log\{(s_j/\sum s)/(d_j/\sum d)\}` over the cells non-empty in both
    (:math:`\mathrm{dfG}` of them minus one), :math:`\mathrm{S\_G} = G/\mathrm{dfG}`;
    with the cell score :math:`q_j = s_j/(s_j + d_j)`, SPECKS is the Kolmogorov-Smirnov
    distance and U the Wilcoxon statistic between the scores of the synthetic and the real
    records, and :math:`\mathrm{PO50} = 100\,[\sum_{p^s_j > p^d_j} s_j + \sum_{p^s_j \le
    p^d_j} d_j]/N - 50`; :math:`\mathrm{MabsDD} = \sum_j |\delta_j| / \sum_j s_j`,
    :math:`\mathrm{WMabsDD} = \sum_j |\delta_j|/\sqrt{e_j} \,/\, \sqrt{2/\pi}`,
    :math:`\mathrm{S\_WMabsDD} = \mathrm{WMabsDD}/\mathrm{df}` and the Bhattacharyya
    distance :math:`\mathrm{dBhatt} = \sqrt{1 - \sum_j \sqrt{p^d_j p^s_j}}`.

    The standardised statistics use synthpop's reference, under which a synthesis that
    reproduces the real table up to its own sampling noise scores about 1; two independent
    samples of one population score about :math:`1/(1-c)` (2 for frames of equal size),
    since :math:`E[\chi^2] = \mathrm{df}` for them (see
    :func:`~pseudopost.evaluate.propensity.propensity_utility` for the two references).

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        Confidential and synthetic data; not modified.
    variables : sequence of str
        One or more columns of both frames.
    ngroups : int, default 5
        Groups per numeric variable (synthpop's default).
    missing_codes : mapping of str to list of float, optional
        Codes of numeric columns, e.g. ``{"income": [-8, -9]}``.
    max_table : float, default 1e6
        Largest table allowed (cells, empty ones included).

    Returns
    -------
    TableUtility

    Notes
    -----
    Differences from synthpop, in corner cases only: a missing cell or a level found only in
    the synthetic frame is a level here (synthpop folds synthetic-only levels of a character
    column into its missing level); a numeric column with a single distinct value is one group
    (synthpop stops). A variable with no value but missing cells and codes in the synthetic
    frame cannot be grouped, as in synthpop.
    """
    real, synthetic = check_pair(real, synthetic)
    cols = check_variables(variables, real, synthetic, "variables")
    ngroups = _check_ngroups(ngroups)
    codes = check_missing_codes(missing_codes, real, synthetic)
    return _tab(real, synthetic, cols, ngroups, codes, float(max_table))


def utility_tables(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    variables: Sequence[str] | None = None,
    *,
    tables: str = "twoway",
    ngroups: int = 5,
    missing_codes: Mapping[str, Sequence[float]] | None = None,
    max_table: float = 1e7,
) -> pd.DataFrame:
    """:func:`utility_tab` of every one-, two- or three-way table (synthpop's ``utility.tables``).

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        Confidential and synthetic data; not modified.
    variables : sequence of str, optional
        Columns to tabulate; default every column of ``synthetic`` (all must be in ``real``).
        Tables follow the synthetic frame's column order.
    tables : {"oneway", "twoway", "threeway"}, default "twoway"
        Size of the tables (synthpop's default ``"twoway"``).
    ngroups, missing_codes, max_table
        As in :func:`utility_tab` (``max_table`` per table, synthpop's default 1e7 here).

    Returns
    -------
    pandas.DataFrame
        One row per table, indexed ``"a"``, ``"a:b"`` or ``"a:b:c"``, with the columns of
        :data:`TABLE_STATISTICS`. synthpop prints the medians and maxima of ``pMSE``,
        ``S_pMSE`` and ``df`` over the rows: ``result[["pMSE", "S_pMSE", "df"]].median()`` and
        ``.max()``.
    """
    real, synthetic = check_pair(real, synthetic)
    order = {"oneway": 1, "twoway": 2, "threeway": 3}
    if tables not in order:
        raise ValueError(
            f"The 'tables' argument must be 'oneway', 'twoway' or 'threeway'. Got {tables!r}."
        )
    cols = check_variables(variables, real, synthetic, "variables")
    cols = [c for c in synthetic.columns if c in set(cols)]  # synthpop: synthetic column order
    if len(cols) < order[tables]:
        raise ValueError(f"{tables!r} tables need at least {order[tables]} variables; got {cols}.")
    ngroups = _check_ngroups(ngroups)
    codes = check_missing_codes(missing_codes, real, synthetic)
    cache: dict = {}
    rows, names = [], []
    for combo in itertools.combinations(cols, order[tables]):
        tab = _tab(real, synthetic, list(combo), ngroups, codes, float(max_table), cache)
        rows.append(tab.statistics)
        names.append(":".join(str(c) for c in combo))
    out = pd.DataFrame(rows, index=pd.Index(names, name="table"), dtype=float)
    return out.astype({"df": np.int64, "dfG": np.int64, "nempty": np.int64})
