r"""Identity and attribute disclosure from key-target tables: repU, DiSCO (synthpop's definitions).

The disclosure measures of Raab, Nowok & Dibben (synthpop's disclosure vignette, "Practical
privacy metrics for synthetic data") as synthpop's ``disclosure()`` and ``multi.disclosure()``
compute them with their defaults (synthpop 1.9-2, ``R/disclosure.R``: no exclusions, missing
values of keys and target used as a level), under synthpop's names, so that values compare
across tools.

An intruder knows the *keys* (quasi-identifiers) of a person in the real data and looks for
them in the synthetic data, either to single the person out (identity disclosure) or to learn
the *target* (attribute disclosure). Each record's key :math:`K` is the combination of its key
values, missing cells being a level of their own in every key and in the target. With
:math:`d_K`, :math:`s_K` the real and synthetic counts of key :math:`K`, :math:`d_{tK}`,
:math:`s_{tK}` the counts of target value :math:`t` with key :math:`K`, :math:`N_d`, :math:`N_s`
the record counts, all measures are percentages:

Identity disclosure (``ident``)

.. math::

    \mathrm{UiO} = \frac{100}{N_d}\#\{K: d_K = 1\}, \quad
    \mathrm{UiS} = \frac{100}{N_s}\#\{K: s_K = 1\}, \quad
    \mathrm{UiOiS} = \frac{100}{N_d}\#\{K: d_K = 1, s_K > 0\},

.. math::

    \mathrm{repU} = \frac{100}{N_d}\#\{K: d_K = 1, s_K = 1\}

(replicated uniques: records unique in the real data whose key is also unique in the
synthetic data).

Attribute disclosure (``attrib``). A key is *disclosive* in a frame when all its records there
share one target value (:math:`s_{tK} = s_K` for some :math:`t`).

.. math::

    \mathrm{DiSCO} = \frac{100}{N_d}\sum_{t,K} d_{tK}\,
        1\{s_K > 0,\ s_{tK} = s_K\}

(Disclosive in Synthetic, Correct in Original: real records whose key is disclosive in the
synthetic data with their own target value). Beside it: :math:`\mathrm{Dorig}` (real records
whose key is disclosive in the real data), :math:`\mathrm{Dsyn}` (synthetic records whose key is
disclosive in the synthetic data, per :math:`N_s`), :math:`\mathrm{iS}` (real records whose key
is in the synthetic data), :math:`\mathrm{DiS}` (real records whose key is disclosive in the
synthetic data), :math:`\mathrm{DiSDiO}` (DiSCO records whose key is also disclosive in the real
data), ``max_denom`` and ``mean_denom`` (the largest and mean non-zero DiSCO cell count
:math:`d_{tK}`), and the correct attribution probabilities

.. math::

    \mathrm{baseCAPd} = 100\sum_t (d_t/N_d)^2, \quad
    \mathrm{CAPd} = \frac{100}{N_d}\sum_{t,K} \frac{d_{tK}^2}{d_K}, \quad
    \mathrm{CAPs} = \frac{100}{N_s}\sum_{t,K} \frac{s_{tK}^2}{s_K},

.. math::

    \mathrm{DCAP} = \frac{100}{N_d}\sum_{t,K} d_{tK}\,\frac{s_{tK}}{s_K}, \quad
    \mathrm{TCAP} = 100\,\frac{N_d\,\mathrm{DiSCO}}{N_d\,\mathrm{iS}} .

References
----------
Raab, G. M., Nowok, B. & Dibben, C. (2025). Practical privacy metrics for synthetic data.
arXiv:2406.16826 (synthpop's disclosure vignette).

Nowok, B., Raab, G. M. & Dibben, C. (2016). synthpop: bespoke creation of synthetic data in R.
Journal of Statistical Software 74(11), 1-26.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from pseudopost._validation import check_positive_int
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

__all__ = ["DisclosureMeasures", "disclosure_measures", "multi_disclosure"]


@dataclass(frozen=True)
class DisclosureMeasures:
    """Identity and attribute disclosure of one target from one set of keys (module docstring).

    All measures are percentages except ``max_denom`` (a count) and ``mean_denom``.
    """

    keys: tuple[str, ...]
    target: str
    UiO: float
    UiS: float
    UiOiS: float
    repU: float
    Dorig: float
    Dsyn: float
    iS: float
    DiS: float
    DiSCO: float
    DiSDiO: float
    max_denom: int
    mean_denom: float
    baseCAPd: float
    CAPd: float
    CAPs: float
    DCAP: float
    TCAP: float
    n_real: int
    n_synthetic: int

    def to_series(self) -> pd.Series:
        """The measures as a Series (keys, target and counts left out)."""
        out = asdict(self)
        for name in ("keys", "target", "n_real", "n_synthetic"):
            out.pop(name)
        return pd.Series(out, dtype=float)


def _coded(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    column: str,
    ngroups: int | None,
    codes: Mapping[str, tuple[float, ...]],
) -> tuple[np.ndarray, np.ndarray]:
    """Level codes of a key or the target over both frames (missing cells a level)."""
    if is_numeric(real[column]):
        xr = numeric_values(real[column], column, "real")
        xs = numeric_values(synthetic[column], column, "synthetic")
        if ngroups is not None:
            grouped = group_numeric(xr, xs, ngroups, codes.get(column, ()), column)
            return grouped.real, grouped.synthetic
        vr = np.where(np.isnan(xr), None, xr.astype(object))
        vs = np.where(np.isnan(xs), None, xs.astype(object))
    else:
        vr, vs = category_values(real[column]), category_values(synthetic[column])
    cr, cs, _ = factor_codes(vr, vs)
    return cr, cs


def _joint(codes_real: list[np.ndarray], codes_syn: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    """One integer id per combination of codes, shared by both frames."""
    stacked = np.column_stack(
        [np.concatenate([r, s]) for r, s in zip(codes_real, codes_syn, strict=True)]
    )
    _, ids = np.unique(stacked, axis=0, return_inverse=True)
    ids = ids.ravel()
    n_real = codes_real[0].size
    return ids[:n_real], ids[n_real:]


def _measures(key_d, key_s, tgt_d, tgt_s) -> dict[str, float]:
    """The measures from the key and target ids of the real (d) and synthetic (s) records."""
    n_d, n_s = key_d.size, key_s.size
    n_key = int(max(key_d.max(), key_s.max())) + 1
    n_tgt = int(max(tgt_d.max(), tgt_s.max())) + 1
    d_k = np.bincount(key_d, minlength=n_key)
    s_k = np.bincount(key_s, minlength=n_key)
    cell_d = key_d * n_tgt + tgt_d
    cell_s = key_s * n_tgt + tgt_s
    d_tk = np.bincount(cell_d, minlength=n_key * n_tgt).reshape(n_key, n_tgt)
    s_tk = np.bincount(cell_s, minlength=n_key * n_tgt).reshape(n_key, n_tgt)
    # a key is disclosive in a frame when one target value holds all its records there
    syn_disc = (s_tk == s_k[:, None]) & (s_k[:, None] > 0)  # (key, target) cells
    orig_disc = (d_tk == d_k[:, None]) & (d_k[:, None] > 0)
    disco_cells = np.where(syn_disc, d_tk, 0)
    disdio_cells = np.where(syn_disc & orig_disc, d_tk, 0)
    in_syn = s_k > 0
    n_found = int(np.sum(d_k[in_syn]))  # real records whose key is in the synthetic data
    positive = disco_cells[disco_cells > 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        p_d = np.where(d_k[:, None] > 0, d_tk / d_k[:, None], 0.0)
        p_s = np.where(s_k[:, None] > 0, s_tk / s_k[:, None], 0.0)
    d_t = d_tk.sum(axis=0)
    return {
        "UiO": 100 * np.sum(d_k == 1) / n_d,
        "UiS": 100 * np.sum(s_k == 1) / n_s,
        "UiOiS": 100 * np.sum((d_k == 1) & in_syn) / n_d,
        "repU": 100 * np.sum((d_k == 1) & (s_k == 1)) / n_d,
        "Dorig": 100 * np.sum(d_k[orig_disc.any(axis=1)]) / n_d,
        "Dsyn": 100 * np.sum(s_k[syn_disc.any(axis=1)]) / n_s,
        "iS": 100 * n_found / n_d,
        "DiS": 100 * np.sum(d_k[syn_disc.any(axis=1)]) / n_d,
        "DiSCO": 100 * np.sum(disco_cells) / n_d,
        "DiSDiO": 100 * np.sum(disdio_cells) / n_d,
        "max_denom": int(disco_cells.max()),
        "mean_denom": float(positive.mean()) if positive.size else float("nan"),
        "baseCAPd": 100 * np.sum((d_t / n_d) ** 2),
        "CAPd": 100 * np.sum(np.sum(p_d**2, axis=1) * d_k) / n_d,
        "CAPs": 100 * np.sum(np.sum(p_s**2, axis=1) * s_k) / n_s,
        "DCAP": 100 * np.sum(p_s * d_tk) / n_d,
        "TCAP": 100 * np.sum(disco_cells) / n_found if n_found > 0 else float("nan"),
    }


def _check_keys(keys: Sequence[str], real, synthetic) -> list[str]:
    if isinstance(keys, str):
        raise TypeError(
            f"The 'keys' argument must be a sequence of column names, not the string {keys!r}; "
            f"use [{keys!r}]."
        )
    return check_variables(list(keys), real, synthetic, "keys")


def _check_groups(value: int | None, name: str) -> int | None:
    return None if value is None else check_positive_int(value, name, minimum=2)


def disclosure_measures(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    keys: Sequence[str],
    target: str,
    *,
    ngroups_keys: int | None = None,
    ngroups_target: int | None = None,
    missing_codes: Mapping[str, Sequence[float]] | None = None,
) -> DisclosureMeasures:
    """repU, DiSCO and synthpop's other disclosure measures of one target (module docstring).

    As synthpop's ``disclosure(synthetic, real, keys = keys, target = target)`` with its
    defaults: every record counts, missing cells of keys and target are a level of their own,
    and the values of a numeric key or target are its levels unless grouped.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        Confidential and synthetic data; not modified. The frames need not have the same
        number of rows.
    keys : sequence of str
        The quasi-identifiers an intruder knows, one or more distinct columns of both frames.
    target : str
        The column the intruder wants to learn; not one of the keys.
    ngroups_keys, ngroups_target : int, optional
        Group numeric keys (target) into this many groups first, as synthpop's
        ``ngroups_keys`` (``ngroups_target``), with the breaks of
        :func:`~pseudopost.evaluate.table_utility.utility_tab`. Default: no grouping.
    missing_codes : mapping of str to list of float, optional
        Codes of numeric columns; they matter only when grouping (a code is a group of its own).

    Returns
    -------
    DisclosureMeasures
    """
    real, synthetic = check_pair(real, synthetic)
    key_cols = _check_keys(keys, real, synthetic)
    if not isinstance(target, str):
        raise TypeError(f"The 'target' argument must be one column name. Got {target!r}.")
    (target,) = check_variables([target], real, synthetic, "target")
    if target in key_cols:
        raise ValueError(f"The target {target!r} cannot also be one of the keys {key_cols}.")
    ngk = _check_groups(ngroups_keys, "ngroups_keys")
    ngt = _check_groups(ngroups_target, "ngroups_target")
    codes = check_missing_codes(missing_codes, real, synthetic)
    return _disclosure(real, synthetic, key_cols, target, ngk, ngt, codes, {})


def _disclosure(real, synthetic, key_cols, target, ngk, ngt, codes, cache) -> DisclosureMeasures:
    if "keys" not in cache:
        coded = [_coded(real, synthetic, k, ngk, codes) for k in key_cols]
        cache["keys"] = _joint([c[0] for c in coded], [c[1] for c in coded])
    key_d, key_s = cache["keys"]
    tgt_d, tgt_s = _coded(real, synthetic, target, ngt, codes)
    values = _measures(key_d, key_s, tgt_d, tgt_s)
    return DisclosureMeasures(
        keys=tuple(key_cols),
        target=target,
        n_real=len(real),
        n_synthetic=len(synthetic),
        **{k: (int(v) if k == "max_denom" else float(v)) for k, v in values.items()},
    )


def multi_disclosure(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    keys: Sequence[str],
    targets: Sequence[str] | None = None,
    *,
    ngroups_keys: int | None = None,
    ngroups_target: int | None = None,
    missing_codes: Mapping[str, Sequence[float]] | None = None,
) -> pd.DataFrame:
    """:func:`disclosure_measures` for several targets from the same keys (``multi.disclosure``).

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
        Confidential and synthetic data; not modified.
    keys : sequence of str
        The quasi-identifiers.
    targets : sequence of str, optional
        Default: every column of ``synthetic`` that is not a key (synthpop's default).
    ngroups_keys, ngroups_target, missing_codes
        As in :func:`disclosure_measures`.

    Returns
    -------
    pandas.DataFrame
        One row per target with the measures of :class:`DisclosureMeasures` (synthpop plots
        ``repU`` against ``DiSCO`` per target, beside ``UiO`` and ``Dorig`` of the real data).
    """
    real, synthetic = check_pair(real, synthetic)
    key_cols = _check_keys(keys, real, synthetic)
    if targets is None:
        target_cols = [c for c in synthetic.columns if c not in key_cols]
        if not target_cols:
            raise ValueError("Every column is a key; there is no target to measure.")
        target_cols = check_variables(target_cols, real, synthetic, "targets")
    else:
        target_cols = check_variables(targets, real, synthetic, "targets")
    clash = [t for t in target_cols if t in key_cols]
    if clash:
        raise ValueError(f"Target(s) {clash} cannot also be keys.")
    ngk = _check_groups(ngroups_keys, "ngroups_keys")
    ngt = _check_groups(ngroups_target, "ngroups_target")
    codes = check_missing_codes(missing_codes, real, synthetic)
    cache: dict = {}
    rows = [
        _disclosure(real, synthetic, key_cols, t, ngk, ngt, codes, cache).to_series()
        for t in target_cols
    ]
    return pd.DataFrame(rows, index=pd.Index(target_cols, name="target"))
