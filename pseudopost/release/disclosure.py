r"""Disclosure measures of a released synthetic dataset: identification and attribute risk.

Both assume the intruder of Hu's work (Hu 2019; Hu, Savitsky & Williams 2022): they know the
*key* columns of a target record (here the unsynthesized predictors, released as given) and its
sensitive value, and look for it among the synthetic records. Synthetic row i is the synthetic
version of real record i (pseudopost's ready models synthesize the outcome row by row).

Identification risk. A synthetic record j *matches* target i if its key columns equal those of
i and its synthesized value lies within radius r of i's true value,
:math:`|\tilde y_j - y_i| \le r |y_i|`. With :math:`c_i` the number of matches,
:math:`T_i = 1` if row i is among them and :math:`K_i = 1` if it is the unique match,

.. math::
    \mathrm{EMR} = \sum_i T_i / c_i, \qquad \mathrm{TMR} = \frac{1}{n}\sum_i K_i

(expected match risk, a count, and true match rate, a share; :math:`T_i / c_i = 0` when
:math:`c_i = 0`).

Attribute risk. For a sensitive column, the intruder guesses record i's value as the median of
that column among synthetic records sharing i's keys; the risk is the share of records whose
guess lies within radius r of the truth, reported beside the same share for a guess from the
whole synthetic column (the baseline an intruder gets without the keys).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["attribute_risk", "identification_risk"]


def _check(real: pd.DataFrame, synthetic: pd.DataFrame, cols: Sequence[str], radius: float):
    if not isinstance(real, pd.DataFrame) or not isinstance(synthetic, pd.DataFrame):
        raise TypeError("'real' and 'synthetic' must be pandas DataFrames.")
    if len(real) != len(synthetic):
        raise ValueError(
            f"'synthetic' must have one row per real record ({len(real)}); got {len(synthetic)}."
        )
    for c in cols:
        for name, frame in (("real", real), ("synthetic", synthetic)):
            if c not in frame.columns:
                raise ValueError(f"Column {c!r} is missing from '{name}'.")
    if not (np.isfinite(radius) and radius >= 0):
        raise ValueError(f"The 'radius' parameter must be a finite float >= 0. Got {radius!r}.")


def _key_groups(real: pd.DataFrame, synthetic: pd.DataFrame, keys: Sequence[str]) -> np.ndarray:
    """Boolean (n_real, n_syn) matrix: synthetic row j has the keys of real row i."""
    same = np.ones((len(real), len(synthetic)), dtype=bool)
    for k in keys:
        same &= real[k].to_numpy()[:, None] == synthetic[k].to_numpy()[None, :]
    return same


def identification_risk(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    keys: Sequence[str],
    outcome: str,
    radius: float = 0.1,
) -> dict[str, float]:
    """Expected match risk and true match rate (see the module docstring)."""
    keys = list(keys)
    _check(real, synthetic, [*keys, outcome], radius)
    y = real[outcome].to_numpy(dtype=float)
    ys = synthetic[outcome].to_numpy(dtype=float)
    match = _key_groups(real, synthetic, keys)
    match &= np.abs(ys[None, :] - y[:, None]) <= radius * np.abs(y)[:, None]
    c = match.sum(axis=1)
    t = np.diagonal(match)
    emr = float(np.sum(np.where(c > 0, t / np.maximum(c, 1), 0.0)))
    tmr = float(np.mean(t & (c == 1)))
    return {"expected_match_risk": emr, "true_match_rate": tmr, "records": len(real)}


def attribute_risk(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    keys: Sequence[str],
    sensitive: str,
    radius: float = 0.1,
) -> dict[str, float]:
    """Share of records whose sensitive value is guessed within ``radius`` (see module doc)."""
    keys = list(keys)
    _check(real, synthetic, [*keys, sensitive], radius)
    y = real[sensitive].to_numpy(dtype=float)
    ys = synthetic[sensitive].to_numpy(dtype=float)
    same = _key_groups(real, synthetic, keys)
    guess = np.array([np.median(ys[row]) if row.any() else np.nan for row in same])
    close = np.abs(guess - y) <= radius * np.abs(y)
    base = np.abs(np.median(ys) - y) <= radius * np.abs(y)
    return {
        "attribute_risk": float(np.mean(close)),
        "baseline": float(np.mean(base)),
        "records": len(real),
    }
