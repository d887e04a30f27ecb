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

Fully synthetic data (REPS, PRISM, the entropy histogram) have no row correspondence: no
synthetic record is "the" version of a real one. :func:`match_risk` then asks how often a
synthetic record pins down one real person. Synthetic record j *matches* real record i when every
key agrees: categorical keys exactly, numeric keys within the radius,
:math:`|\tilde x_{jk} - x_{ik}| \le r |x_{ik}|`. With :math:`c_j` the number of real records
that synthetic record j matches,

.. math::
    \mathrm{unique\ match\ share} = \frac1{n^*}\sum_j 1\{c_j = 1\},\qquad
    \mathrm{singled\ out\ share} = \frac1n \#\{i : i \text{ is the only match of some } j\},

beside the share of real records matched by at least one synthetic record. An intruder who
links a uniquely matching synthetic record to the one real record it matches identifies that
person's key values (and learns the synthetic record's other values).
:func:`synthetic_attribute_risk` is the attribute risk above for such data: the guess is the
median (numeric) or the most frequent value (categorical) of the sensitive column among the
synthetic records that match i's keys (the whole synthetic column's when none does, as an
intruder would); a categorical guess must be exact.

The measures agencies compare across tools, synthpop's replicated uniques (repU) and DiSCO
(disclosive in synthetic, correct in original) from key-target tables, are in
:mod:`pseudopost.evaluate.disclosure_tables`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["attribute_risk", "identification_risk", "match_risk", "synthetic_attribute_risk"]


def _check(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    cols: Sequence[str],
    radius: float,
    *,
    paired: bool = True,
) -> None:
    """Frames with ``cols``, a finite ``radius`` >= 0, and one synthetic row per real record
    (``paired``) or at least one row each (fully synthetic data)."""
    if not isinstance(real, pd.DataFrame) or not isinstance(synthetic, pd.DataFrame):
        raise TypeError("'real' and 'synthetic' must be pandas DataFrames.")
    if paired and len(real) != len(synthetic):
        raise ValueError(
            f"'synthetic' must have one row per real record ({len(real)}); got {len(synthetic)}."
        )
    if not paired and (len(real) == 0 or len(synthetic) == 0):
        raise ValueError("'real' and 'synthetic' must have at least one row each.")
    for c in cols:
        for name, frame in (("real", real), ("synthetic", synthetic)):
            if c not in frame.columns:
                raise ValueError(f"Column {c!r} is missing from '{name}'.")
    if not (np.isfinite(radius) and radius >= 0):
        raise ValueError(f"The 'radius' parameter must be a finite float >= 0. Got {radius!r}.")


def _paired(
    real: pd.DataFrame, synthetic: pd.DataFrame, keys: Sequence[str], column: str, radius: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Checked inputs: the real and synthetic ``column`` as floats and the boolean
    (n_real, n_syn) matrix of synthetic row j having the keys of real row i."""
    _check(real, synthetic, [*keys, column], radius)
    y = real[column].to_numpy(dtype=float)
    ys = synthetic[column].to_numpy(dtype=float)
    same = np.ones((len(real), len(synthetic)), dtype=bool)
    for k in keys:
        same &= real[k].to_numpy()[:, None] == synthetic[k].to_numpy()[None, :]
    return y, ys, same


def identification_risk(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    keys: Sequence[str],
    outcome: str,
    radius: float = 0.1,
) -> dict[str, float]:
    """Expected match risk and true match rate (see the module docstring)."""
    y, ys, match = _paired(real, synthetic, list(keys), outcome, radius)
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
    y, ys, same = _paired(real, synthetic, list(keys), sensitive, radius)
    guess = np.array([np.median(ys[row]) if row.any() else np.nan for row in same])
    close = np.abs(guess - y) <= radius * np.abs(y)
    base = np.abs(np.median(ys) - y) <= radius * np.abs(y)
    return {
        "attribute_risk": float(np.mean(close)),
        "baseline": float(np.mean(base)),
        "records": len(real),
    }


def _key_match_blocks(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    keys: Sequence[str],
    radius: float,
    block: int = 512,
):
    """Yield (row slice of ``real``, boolean (block, n_syn) key-match matrix)."""
    numeric = [
        pd.api.types.is_numeric_dtype(real[k]) and not pd.api.types.is_bool_dtype(real[k])
        for k in keys
    ]
    rk = [
        real[k].to_numpy(float) if num else real[k].astype(str).to_numpy()
        for k, num in zip(keys, numeric, strict=True)
    ]
    sk = [
        synthetic[k].to_numpy(float) if num else synthetic[k].astype(str).to_numpy()
        for k, num in zip(keys, numeric, strict=True)
    ]
    for start in range(0, len(real), block):
        sl = slice(start, min(start + block, len(real)))
        same = np.ones((sl.stop - sl.start, len(synthetic)), dtype=bool)
        for r, s, num in zip(rk, sk, numeric, strict=True):
            x = r[sl][:, None]
            same &= (np.abs(s[None, :] - x) <= radius * np.abs(x)) if num else (s[None, :] == x)
        yield sl, same


def match_risk(
    real: pd.DataFrame, synthetic: pd.DataFrame, keys: Sequence[str], radius: float = 0.1
) -> dict[str, float]:
    """Identification risk of fully synthetic records by key matching (module docstring)."""
    keys = list(keys)
    if not keys:
        raise ValueError("The 'keys' argument must name at least one column.")
    _check(real, synthetic, keys, radius, paired=False)
    c = np.zeros(len(synthetic), dtype=np.int64)
    matched = np.zeros(len(real), dtype=bool)
    for sl, same in _key_match_blocks(real, synthetic, keys, radius):
        c += same.sum(axis=0)
        matched[sl] = same.any(axis=1)
    unique = c == 1
    singled = np.zeros(len(real), dtype=bool)
    for sl, same in _key_match_blocks(real, synthetic, keys, radius):
        singled[sl] = (same & unique[None, :]).any(axis=1)
    return {
        "unique_match_share": float(unique.mean()),
        "singled_out_share": float(singled.mean()),
        "matched_share": float(matched.mean()),
        "records": len(real),
        "synthetic_records": len(synthetic),
    }


def synthetic_attribute_risk(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    keys: Sequence[str],
    sensitive: str,
    radius: float = 0.1,
) -> dict[str, float]:
    """Attribute risk for fully synthetic records (module docstring), with its baseline."""
    keys = list(keys)
    if not keys:
        raise ValueError("The 'keys' argument must name at least one column.")
    if sensitive in keys:
        raise ValueError(f"The sensitive column {sensitive!r} cannot also be a key.")
    _check(real, synthetic, [*keys, sensitive], radius, paired=False)
    numeric = pd.api.types.is_numeric_dtype(real[sensitive]) and not (
        pd.api.types.is_bool_dtype(real[sensitive])
    )
    if numeric:
        y, ys = real[sensitive].to_numpy(float), synthetic[sensitive].to_numpy(float)

        def guess(rows: np.ndarray) -> float:
            return float(np.median(ys[rows])) if rows.any() else base_guess

        def close(g, truth):
            return np.abs(g - truth) <= radius * np.abs(truth)

        base_guess = float(np.median(ys))

    else:
        y, ys = real[sensitive].astype(str).to_numpy(), synthetic[sensitive].astype(str).to_numpy()

        def guess(rows: np.ndarray):
            if not rows.any():
                return base_guess
            values, counts = np.unique(ys[rows], return_counts=True)
            return values[np.argmax(counts)]

        def close(g, truth):
            return np.array([a == b for a, b in zip(g, truth, strict=True)])

        levels, freq = np.unique(ys, return_counts=True)
        base_guess = levels[np.argmax(freq)]
    hits = np.zeros(len(real), dtype=bool)
    for sl, same in _key_match_blocks(real, synthetic, keys, radius):
        g = np.array([guess(row) for row in same], dtype=float if numeric else object)
        hits[sl] = close(g, y[sl])
    base = close(np.full(len(real), base_guess, dtype=float if numeric else object), y)
    return {
        "attribute_risk": float(np.mean(hits)),
        "baseline": float(np.mean(base)),
        "records": len(real),
    }
