r"""Sufficient-statistics fast path: fit the pseudo posterior from weighted sums, not records.

For exponential-family ready models the weighted log-likelihood
:math:`\ell_w(\theta) = \sum_i w_i \log p(x_i\mid\theta)` (range-restricted paper eq. 1, the
pseudo likelihood with weights :math:`w = \alpha^*`) depends on the data only through a few
weighted sums, so one gradient costs O(p^2) instead of O(n p). With the design
:math:`z_i = (1, z_{i1}, \dots, z_{ip})` (intercept column first) and
:math:`b = (\beta_0, \beta)`:

* Normal, :math:`y_i \sim N(z_i^\top b, \sigma^2)`; log-normal on :math:`y_i = \log x_i`:

  .. math::
      \ell_w = -S_w(\tfrac12\log 2\pi + \log\sigma)
               - \frac{S_{wyy} - 2 b^\top Z^\top W y + b^\top Z^\top W Z\, b}{2\sigma^2} + J,

  with :math:`S_w = \sum w_i`, :math:`S_{wyy} = \sum w_i y_i^2` and, for the log-normal, the
  Jacobian :math:`J = -\sum_i w_i \log x_i` (the density of x as given; 0 for the normal).
* Poisson, :math:`\log\mu_i = z_i^\top b`:

  .. math::
      \ell_w = b^\top Z^\top W y - \sum_{u} W_u\, e^{z_u^\top b} - \sum_i w_i \log y_i!,

  where u runs over the *unique* predictor rows of the design and :math:`W_u` is the sum of the
  weights of the records with that row. This compression is exact; it pays when the number of
  unique rows U is small (categorical or rounded predictors). Above :data:`MAX_UNIQUE_ROWS`,
  :func:`supports` says no and the full model is used.

Censoring (``censor_epsilon``) clips each record's contribution, which no sum preserves: there
is no fast path then. The accountant is unchanged: it still visits every record and every draw.

Blocks and order. Statistics are additive over records: :func:`block_statistics` returns them
for one block, and :func:`total_statistics` sums canonical blocks of :data:`STATS_BLOCK` records
in order (per key ``np.sum(np.stack(per_block), axis=0)``), so a chunked (Dask) computation over
the same blocks is bit-identical. The Poisson rows are the lexicographically sorted set of unique
predictor rows (``np.unique(..., axis=0)``) of *all* records, a function of the set of rows only:
computing it per chunk and merging (:func:`merge_rows`) gives the same array whatever the chunking
or record order, and every block's :math:`W_u` is a vector aligned to it (so blocks add).
Floating-point sums are taken in record order; reordering records changes them by rounding only.
Accuracy: :math:`S_{wyy} - 2b^\top Z^\top Wy + b^\top Z^\top WZb` cancels when residuals are
small against the outcome's mean (relative error about :math:`\epsilon_{64}\,\bar y^2/s^2`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy.special import gammaln

from pseudopost.fitting.parts import nutpie_model, shared_data
from pseudopost.fitting.sampler import Sampler, make_sampler
from pseudopost.models.base import Prepared, SynthModel
from pseudopost.models.counts import PoissonRegression
from pseudopost.models.parts import Part, Stats
from pseudopost.models.regression import LogNormalRegression, NormalRegression

__all__ = [
    "MAX_UNIQUE_ROWS",
    "STATS_BLOCK",
    "block_statistics",
    "design_rows",
    "merge_rows",
    "part_model",
    "part_statistics",
    "statistics_data",
    "statistics_model",
    "sufficient_sampler",
    "supports",
    "total_statistics",
    "unsupported_reason",
]

STATS_BLOCK = 65536
MAX_UNIQUE_ROWS = 4096
_TYPES = (NormalRegression, LogNormalRegression, PoissonRegression)
PREFIX = "suff_"


def unsupported_reason(model: SynthModel, prepared: Prepared | None = None) -> str | None:
    """Why ``model`` (on ``prepared``) has no sufficient-statistics fast path; None if it has."""
    if type(model) not in _TYPES:
        return (
            f"{type(model).__name__} has no sufficient statistics (only NormalRegression, "
            "LogNormalRegression and PoissonRegression do)"
        )
    if isinstance(model, PoissonRegression) and prepared is not None:
        u = design_rows(model, prepared.arrays).shape[0]
        if u > MAX_UNIQUE_ROWS:
            return (
                f"the Poisson design has {u} unique predictor rows > {MAX_UNIQUE_ROWS}: "
                "compressing it would not pay"
            )
    return None


def supports(model: SynthModel, prepared: Prepared | None = None) -> bool:
    """True when ``model`` can be fitted from sufficient statistics (see the module docstring).

    Without ``prepared`` this is the model-type check only; with it, a Poisson design must
    also have at most :data:`MAX_UNIQUE_ROWS` unique predictor rows.
    """
    return unsupported_reason(model, prepared) is None


def _check(model: SynthModel) -> None:
    if type(model) not in _TYPES:
        raise TypeError(unsupported_reason(model) + ".")


def _predictors(model, arrays: Mapping[str, np.ndarray]) -> np.ndarray:
    cols = [np.asarray(arrays[p], dtype=np.float64) for p in model.predictors]
    n = len(arrays[model.outcome])
    return np.column_stack(cols) if cols else np.zeros((n, 0))


def design_rows(model: PoissonRegression, arrays: Mapping[str, np.ndarray]) -> np.ndarray:
    """Sorted unique predictor rows (U x p) of the records in ``arrays`` (order-invariant)."""
    z = _predictors(model, arrays)
    if z.shape[1] == 0:
        return np.zeros((1, 0))
    return np.unique(z + 0.0, axis=0)  # + 0.0 turns -0.0 into 0.0


def merge_rows(*row_sets: np.ndarray) -> np.ndarray:
    """The sorted union of row sets from :func:`design_rows` on chunks (equal to the whole's)."""
    rows = np.concatenate(row_sets, axis=0)
    return rows[:1] if rows.shape[1] == 0 else np.unique(rows, axis=0)


def _row_index(z: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Position of each row of ``z`` in the sorted unique ``rows`` (error if one is missing)."""
    if rows.shape[1] == 0:
        return np.zeros(z.shape[0], dtype=np.intp)
    uniq, inverse = np.unique(z + 0.0, axis=0, return_inverse=True)
    dtype = [(f"f{j}", np.float64) for j in range(rows.shape[1])]
    key = np.ascontiguousarray(rows).view(dtype).ravel()
    pos = np.searchsorted(key, np.ascontiguousarray(uniq).view(dtype).ravel())
    pos = np.minimum(pos, len(rows) - 1)
    if not np.array_equal(rows[pos], uniq):
        raise ValueError("'rows' does not contain every predictor row of the block.")
    return pos[inverse.ravel()]


def block_statistics(
    model: SynthModel,
    arrays: Mapping[str, np.ndarray],
    weights: np.ndarray,
    *,
    rows: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Weighted sufficient statistics of one block of records (additive over blocks).

    Parameters
    ----------
    model
        A supported ready model (:func:`supports`).
    arrays
        The block's columns by name, as in :attr:`Prepared.arrays`.
    weights
        The block's weights :math:`w_i \\ge 0` (:math:`\\alpha^*`).
    rows
        Poisson only: the sorted unique predictor rows of *all* records (:func:`design_rows`,
        or :func:`merge_rows` of per-chunk ones); ``W_u`` is aligned to them. Required for
        Poisson, ignored otherwise.

    Returns
    -------
    dict
        Normal / log-normal: ``sw``, ``swy``, ``swyy``, ``ztwz`` ((p+1) x (p+1)), ``ztwy``
        (p+1), ``const`` (the Jacobian :math:`-\\sum w\\log x`; 0 for the normal). Poisson:
        ``sw``, ``ztwy``, ``const`` (:math:`-\\sum w \\log y!`), ``row_weights`` (U).
    """
    _check(model)
    w = np.asarray(weights, dtype=np.float64)
    x = np.asarray(arrays[model.outcome], dtype=np.float64)
    if w.shape != x.shape:
        raise ValueError(f"'weights' must have shape {x.shape}, one per record; got {w.shape}.")
    bad = ~(np.isfinite(w) & (w >= 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"'weights' must be finite and >= 0; record {i} has {w[i]}.")
    z = _predictors(model, arrays)
    design = np.column_stack([np.ones(len(x)), z])
    if isinstance(model, PoissonRegression):
        if rows is None:
            raise ValueError(
                "Poisson sufficient statistics need 'rows', the unique predictor rows of all "
                "records (design_rows(model, arrays) or merge_rows over chunks)."
            )
        idx = _row_index(z, rows)
        return {
            "sw": np.asarray(w.sum()),
            "ztwy": design.T @ (w * x),
            "const": np.asarray(-(w @ gammaln(x + 1.0))),
            "row_weights": np.bincount(idx, weights=w, minlength=len(rows)).astype(np.float64),
        }
    y = np.log(x) if isinstance(model, LogNormalRegression) else x
    wy = w * y
    return {
        "sw": np.asarray(w.sum()),
        "swy": np.asarray(wy.sum()),
        "swyy": np.asarray(wy @ y),
        "ztwz": (design * w[:, None]).T @ design,
        "ztwy": design.T @ wy,
        "const": np.asarray(-wy.sum() if isinstance(model, LogNormalRegression) else 0.0),
    }


def total_statistics(
    model: SynthModel, arrays: Mapping[str, np.ndarray], weights: np.ndarray
) -> dict[str, np.ndarray]:
    """Statistics of all records: the ordered sum over canonical blocks of :data:`STATS_BLOCK`.

    For Poisson the result also carries ``rows`` (the unique predictor rows, not summed).
    """
    _check(model)
    w = np.asarray(weights, dtype=np.float64)
    n = len(arrays[model.outcome])
    if w.shape != (n,):
        raise ValueError(f"'weights' must have shape ({n},), one per record; got {w.shape}.")
    rows = design_rows(model, arrays) if isinstance(model, PoissonRegression) else None
    per_block = [
        block_statistics(
            model,
            {k: np.asarray(v)[i : i + STATS_BLOCK] for k, v in arrays.items()},
            w[i : i + STATS_BLOCK],
            rows=rows,
        )
        for i in range(0, n, STATS_BLOCK)
    ]
    out = {k: np.sum(np.stack([b[k] for b in per_block]), axis=0) for k in per_block[0]}
    if rows is not None:
        out["rows"] = rows
    return out


def _coefficients(model: SynthModel, intercept_scale: float):
    """Declare ``intercept`` and ``beta`` (the ready models' priors) and return b = (b0, beta)."""
    intercept = pm.Normal("intercept", 0.0, intercept_scale)
    if not model.predictors:
        return intercept[None]
    beta = pm.Normal("beta", 0.0, model.prior_scale, dims="predictor")
    return pt.concatenate([intercept[None], beta])


def statistics_model(model: SynthModel, stats: Mapping[str, np.ndarray]) -> pm.Model:
    """The PyMC model of the weighted posterior given the statistics (in ``pm.Data``).

    Same free variables, priors and dims as ``model.build(prepared)``: ``intercept``, ``beta``
    (``predictor``) and, for normal/log-normal, ``sigma``. The weighted log-likelihood is one
    ``pm.Potential`` (``weighted_loglik``); its structure does not depend on n, so one compiled
    model serves every data size and every set of weights.
    """
    _check(model)
    with model.model_context() as m:
        data = {k: pm.Data(PREFIX + k, v) for k, v in _data_values(model, stats).items()}
        if isinstance(model, PoissonRegression):
            b = _coefficients(model, 2.0 * model.prior_scale)
            eta = b[0] + (data["rows"] @ b[1:] if model.predictors else 0.0)
            loglik = (
                pt.dot(data["ztwy"], b) - pt.sum(data["row_weights"] * pt.exp(eta)) + data["const"]
            )
        else:
            b = _coefficients(model, model.prior_scale)
            sigma = pm.HalfNormal("sigma", model.prior_scale)
            quad = data["swyy"] - 2.0 * pt.dot(data["ztwy"], b) + pt.dot(b, data["ztwz"] @ b)
            loglik = (
                -data["sw"] * (0.5 * np.log(2.0 * np.pi) + pt.log(sigma))
                - quad / (2.0 * sigma**2)
                + data["const"]
            )
        pm.Potential("weighted_loglik", loglik)
    return m


_USED = {
    "poisson": ("ztwy", "const", "row_weights", "rows"),
    "gaussian": ("sw", "swyy", "ztwz", "ztwy", "const"),
}


def _data_values(model: SynthModel, stats: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The statistics the model's graph uses, as float64 arrays (by statistic name)."""
    used = _USED["poisson" if isinstance(model, PoissonRegression) else "gaussian"]
    missing = [k for k in used if k not in stats]
    if missing:
        raise ValueError(f"The statistics lack {missing} (expected keys {list(used)}).")
    return {k: np.asarray(stats[k], dtype=np.float64) for k in used}


def statistics_data(model: SynthModel, stats: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The data of the statistics model (:func:`statistics_model`) for the statistics ``stats``
    (as :func:`total_statistics` returns them): what its sampler's ``sample`` takes."""
    return {PREFIX + k: v for k, v in _data_values(model, stats).items()}


def family_part(model: SynthModel) -> Part:
    """The ready model's family part (:meth:`GLM.family_part
    <pseudopost.models._glm.GLM.family_part>`: its priors, as :func:`statistics_model`'s) with
    the model's predictor names (the posterior's ``predictor`` labels)."""
    _check(model)
    part = model.family_part({})
    return dataclasses.replace(part, predictors=tuple(model.predictors))


def part_statistics(part: Part, data: Mapping[str, np.ndarray]) -> Stats:
    r"""The family part's statistics (:class:`~pseudopost.models.parts.Stats`) for the
    statistics model's ``data`` (:func:`statistics_data`: keys prefixed ``suff_``), of the same
    weighted log-likelihood.

    Normal and log-normal: the same sums under the part's names (``swy``, which the density
    does not use, is the intercept's entry of ``ztwy``). Poisson: the part sums the outcome per
    design row (:math:`Y_g`), ``data`` only :math:`D^\top W y` (``ztwy``), the one way the
    log-likelihood depends on them: :math:`\sum_g Y_g \eta_g = b^\top D^\top W y`. That is one
    row more, at :math:`\bar z = (D^\top W y)_{1:} / S_{wy}` (the predictors' mean weighted by
    :math:`w_i y_i`, :math:`S_{wy} = \sum w_i y_i`; 0 when :math:`S_{wy} = 0`, when
    :math:`D^\top W y = 0` too), with :math:`Y = S_{wy}` and :math:`W = 0`; the unique rows
    keep their :math:`W_u` and :math:`Y = 0`. Equal up to rounding (:math:`S_{wy}\,\bar z`
    against :math:`(D^\top W y)_{1:}`); :math:`\bar z`'s linear predictor lies between the
    unique rows' (a convex combination), so it overflows only where theirs do.
    """
    d = {k.removeprefix(PREFIX): np.asarray(v, dtype=np.float64) for k, v in data.items()}
    ztwy = d["ztwy"]
    if part.family != "poisson":
        keys = ("sw", "swyy", "ztwz", "ztwy", "const")
        return Stats(part.family, {"swy": ztwy[0].copy(), **{k: d[k] for k in keys}})
    total = float(ztwy[0])
    centre = ztwy[1:] / total if total > 0 else np.zeros(ztwy.size - 1)
    u = d["row_weights"].size
    return Stats(
        "poisson",
        {
            "rows": np.vstack([d["rows"], centre[None, :]]),
            "w": np.append(d["row_weights"], 0.0),
            "wy": np.append(np.zeros(u), total),
            "const": d["const"],
        },
    )


class _PartModel:
    """The family part's nutpie model (:func:`~pseudopost.fitting.parts.nutpie_model`) fed the
    statistics model's data: ``with_data`` takes :func:`statistics_data`'s names and swaps in
    the part's statistics (:func:`part_statistics`), once per fit."""

    def __init__(self, part: Part, data: Mapping[str, np.ndarray]) -> None:
        self.part = part
        self.compiled = nutpie_model(part, part_statistics(part, data))

    def with_data(self, **data: np.ndarray):
        return self.compiled.with_data(**shared_data(self.part, part_statistics(self.part, data)))


def part_model(model: SynthModel, stats: Mapping[str, np.ndarray]):
    """A nutpie model of the weighted posterior of a supported ``model`` given ``stats`` (as
    :func:`total_statistics` returns them), whose log density is the family part's
    (:func:`family_part`, :meth:`Part.logp_grad <pseudopost.models.parts.Part.logp_grad>`):
    nothing is compiled; ``with_data`` takes :func:`statistics_data`'s names."""
    return _PartModel(family_part(model), statistics_data(model, stats))


def sufficient_sampler(
    model: SynthModel, stats: Mapping[str, np.ndarray], kind: str = "nutpie"
) -> Sampler:
    """The sampler of the weighted posterior of a supported model given its statistics: a
    :class:`~pseudopost.fitting.sampler.Sampler` of :func:`statistics_model`, whose data are
    :func:`statistics_data` (the weights enter through the statistics).

    With ``kind="nutpie"`` (the default) nutpie evaluates the log density of the model's family
    part (:func:`part_model`: the same priors and weighted log-likelihood, written out in NumPy
    in :mod:`pseudopost.models.parts`): nothing is compiled, on a new machine or an old one,
    and every fit passes its statistics, whatever n, the weights or the data are (for Poisson
    the number of unique rows may change between fits). ``"nutpie-jax"`` and ``"pymc"`` compile
    the PyMC model of :func:`statistics_model`, the reference the part's density is tested
    against.

    Parameters
    ----------
    model
        A supported ready model.
    stats
        Statistics of the shape to build for (e.g. :func:`total_statistics` with unit weights).
    kind
        ``"nutpie"``, ``"nutpie-jax"`` or ``"pymc"`` (:func:`~pseudopost.fitting.sampler.make_sampler`).
    """
    pymc_model = statistics_model(model, stats)
    compiled = part_model(model, stats) if kind == "nutpie" else None
    return make_sampler(pymc_model, kind, compiled=compiled)
