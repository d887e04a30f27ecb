r"""The pseudo posterior mechanism on a Dask DataFrame or a Parquet file: chunked over records.

Same algorithm, seeds and numbers as :meth:`pseudopost.PseudoPosterior.fit` on the pandas frame
(its sufficient-statistics path), computed as Dask graphs over blocks of records, on the local
threaded scheduler by default or on a ``distributed`` cluster (``client=``, or the active client):

1. validate the schema (columns, dtypes, at least 2 rows) before any work; values (finite, in
   the model's support) in the first pass, with the in-memory error messages;
2. unweighted sufficient statistics (one pass) -> fit (MCMC cost independent of n);
3. risk :math:`L_i = \max_m |f_{\theta_m}(x_i)|` per block (the fused block kernel, the
   draws broadcast), then its global min/max (or mean/sd for ``"logistic"``): a reduction;
4. weights :math:`\alpha_i = \mathrm{clip}(c(1 - r_i) + g, 0, 1)` (lazy, per block) -> weighted
   statistics (one pass) -> refit;
5. accountant: :math:`\Delta_i = \alpha_i \max_m |f_{\theta_m}(x_i)|` stays a lazy Dask array;
   the per-draw maxima :math:`\max_i \alpha_i|f_{\theta_m}(x_i)|` (a vector of M numbers) give
   :math:`\varepsilon_x = 2\max_m\max_i = 2\max_i\Delta_i` (exact: a max does not round);
6. synthesis by inversion from record-indexed uniforms, partition by partition, to a Dask
   DataFrame or to Parquet (:meth:`DaskPseudoPosteriorResult.synthesize`).

Covered: ready models with sufficient statistics (normal, log-normal, Poisson), the
unrestricted accountant, both risk normalisations, ``exclude_quantile``. Sensitive ranges,
``target_epsilon``, ``censor_epsilon``, ``reweight`` and fixed ``weights`` raise
``NotImplementedError`` before any work (use the in-memory mechanism). ``"logistic"`` weights
use Dask's mean and sd, equal to NumPy's up to rounding; everything else is bit-identical.

Privacy: identical to the in-memory mechanism (local :math:`\varepsilon_x` of the weighted pseudo
posterior, Savitsky, Williams & Hu 2022, range-restricted paper section 1.1; add/remove
neighbours; one synthetic dataset per posterior draw, m datasets compose to
:math:`m\varepsilon_x`).

Memory: bounded by a few blocks and partitions. The only arrays held whole are the posterior
draws (M x parameters), the per-draw maxima (M) and the statistics. Per-record quantities
(risk, weights, Lipschitz bounds) are lazy Dask arrays. The risk, which the weighted-statistics
and accountant passes both need, is written once to disk as a NumPy stack (``da.to_npy_stack``,
8 bytes per record) in ``workdir`` and read back block by block; by default a temporary folder
that lives as long as the result, on the local scheduler. On a distributed cluster (whose
workers may not share a disk) the default is ``workdir=False``: the risk is recomputed from
the data in each pass that needs it (two more kernel passes); pass a folder every worker sees to
store it instead.
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import xarray as xr

from pseudopost._rng import SeedLike, as_generator
from pseudopost._streams import record_uniforms
from pseudopost._validation import check_positive_int
from pseudopost.fitting.cache import statistics_sampler
from pseudopost.fitting.sampler import FitDiagnostics, interactive
from pseudopost.fitting.sufficient import SufficientSampler, unsupported_reason
from pseudopost.mechanisms.pseudo_posterior.core import pseudo_posterior_statement
from pseudopost.mechanisms.pseudo_posterior.dask.kernels import kernel_for
from pseudopost.mechanisms.pseudo_posterior.dask.passes import (
    abs_reduction,
    design_rows_of,
    risk_weights,
    statistics,
)
from pseudopost.mechanisms.pseudo_posterior.dask.records import DaskRecords, load_records
from pseudopost.models.base import Prepared, SynthModel, synthesis_stream
from pseudopost.models.loglik import stack_draws
from pseudopost.privacy.decomposition import Unrestricted
from pseudopost.privacy.statement import PrivacyStatement

__all__ = ["DaskPseudoPosteriorResult", "fit_dask"]

_UNSUPPORTED = {
    "sensitive_range": lambda m: m.sensitive_range is not None,
    "target_epsilon": lambda m: m.target_epsilon is not None,
    "censor_epsilon": lambda m: m.censor_epsilon is not None,
    "reweight": lambda m: m.reweight,
}


@dataclass
class DaskPseudoPosteriorResult:
    """A pseudo posterior fitted over Dask records; mirrors
    :class:`~pseudopost.PseudoPosteriorResult` where that makes sense.

    ``epsilon``, ``unweighted_epsilon``, ``posterior``, ``datatree`` (posterior groups and the
    privacy attributes, no per-record groups), ``diagnostics`` and ``timings`` are in memory;
    ``lipschitz``, ``unweighted_lipschitz`` (= ``risk``) and ``alpha`` are lazy
    :class:`xarray.DataArray` over Dask arrays (dimension ``record``): ``.compute()`` brings
    them into memory, ``.data`` is the Dask array (``.max().compute()`` reduces it, and
    ``dask.array.to_npy_stack(folder, result.lipschitz.data)`` writes it block by block).
    Computing them reruns the kernel passes they need, on the active scheduler.
    """

    datatree: xr.DataTree
    diagnostics: dict[str, FitDiagnostics]
    timings: dict[str, float]
    model: SynthModel
    records: DaskRecords = field(repr=False)
    _risk: da.Array = field(repr=False)
    _alpha: da.Array = field(repr=False)
    _lipschitz: da.Array = field(repr=False)
    _kept: np.ndarray = field(repr=False)
    client: object = field(default=None, repr=False)
    _workdir: object = field(default=None, repr=False)  # keeps a temporary folder alive

    @property
    def epsilon(self) -> float:
        return float(self.datatree["privacy"].attrs["epsilon"])

    @property
    def privacy_statement(self) -> PrivacyStatement:
        """The guarantee of one synthetic dataset (as the in-memory result's)."""
        return pseudo_posterior_statement(self.datatree["privacy"].attrs)

    @property
    def unweighted_epsilon(self) -> float:
        return float(self.datatree["privacy"].attrs["unweighted_epsilon"])

    @property
    def posterior(self) -> xr.Dataset:
        return self.datatree["posterior"].to_dataset()

    @property
    def likelihood(self) -> str:
        """Always ``"sufficient"``: the Dask backend fits from sufficient statistics."""
        return "sufficient"

    @property
    def lipschitz(self) -> xr.DataArray:
        return xr.DataArray(self._lipschitz, dims="record", name="lipschitz")

    @property
    def unweighted_lipschitz(self) -> xr.DataArray:
        return xr.DataArray(self._risk, dims="record", name="unweighted_lipschitz")

    @property
    def risk(self) -> xr.DataArray:
        return xr.DataArray(self._risk, dims="record", name="risk")

    @property
    def alpha(self) -> xr.DataArray:
        return xr.DataArray(self._alpha, dims="record", name="alpha")

    @property
    def alpha_star(self) -> xr.DataArray:
        """Weights of the fitted posterior (equal to alpha: no range averaging here)."""
        return self.alpha

    def summary(self) -> pd.DataFrame:
        """ArviZ summary of the weighted posterior (raw numbers)."""
        import arviz as az

        return az.summary(self.datatree, round_to="none")

    def synthesize(
        self, m: int = 1, seed: SeedLike = None, *, path: str | os.PathLike | None = None
    ) -> dd.DataFrame | list[dd.DataFrame] | list[Path]:
        """``m`` synthetic datasets, each under its own kept posterior draw.

        The draws and the synthesis seed are chosen exactly as
        :meth:`pseudopost.PseudoPosteriorResult.synthesize` chooses them, and record i's value
        is :math:`F^{-1}_\\theta(u_i \\mid z_i)` with :math:`u_i` from
        :func:`~pseudopost._streams.record_uniforms` at its global record number: the in-memory
        result for the same seed, whatever the partitioning. Returns lazy Dask DataFrames
        (one for ``m == 1``), or, with ``path``, writes ``path/synthetic-{j}`` Parquet
        datasets partition by partition and returns their paths.
        """
        m = check_positive_int(m, "m")
        rng = as_generator(seed)
        kept = np.flatnonzero(self._kept)
        if m > kept.size:
            raise ValueError(f"'m'={m} exceeds the {kept.size} kept posterior draws.")
        if path is not None and Path(path).exists() and any(Path(path).iterdir()):
            raise ValueError(f"'path' {str(path)!r} exists and is not empty; give a new folder.")
        chosen = np.sort(rng.choice(kept, size=m, replace=False))
        seed_int = int(rng.integers(2**31 - 1))
        flat = stack_draws(self.posterior, _free_names(self.model, self.posterior))
        frames = [
            synthesize_frame(
                self.records, self.model, {k: v[d] for k, v in flat.items()}, seed_int, j
            )
            for j, d in enumerate(chosen)
        ]
        if path is None:
            return frames[0] if m == 1 else frames
        out = [Path(path) / f"synthetic-{j + 1}" for j in range(m)]
        with _scheduler(self.client):
            for frame, target in zip(frames, out, strict=True):
                frame.to_parquet(target, write_index=True)
        return out


def synthesize_frame(
    records: DaskRecords, model: SynthModel, params: dict, seed: int, dataset: int
) -> dd.DataFrame:
    """Lazy synthetic dataset ``dataset`` under one posterior draw ``params`` (see
    :meth:`DaskPseudoPosteriorResult.synthesize`)."""
    empty = Prepared(
        {c: np.zeros(0) for c in records.columns}, 0, records.frame._meta.index[:0], records.dtypes
    )
    meta = model.to_frame(empty, {model.outcome: np.zeros(0)})
    return records.frame.map_partitions(
        _synthesize_partition,
        model,
        params,
        seed,
        synthesis_stream(dataset, 0),
        records.offsets,
        records.dtypes,
        meta=meta,
    )


def _synthesize_partition(
    part, model, params, seed, stream, offsets, dtypes, partition_info=None
) -> pd.DataFrame:
    start = int(offsets[partition_info["number"]]) if partition_info else 0
    arrays = {c: part[c].to_numpy(dtype=np.float64) for c in part.columns}
    prepared = Prepared(arrays, len(part), part.index, dtypes)
    u = record_uniforms(int(seed), int(stream), start, len(part), model.uniforms_per_record)
    predictors = {k: v for k, v in arrays.items() if k != model.outcome}
    y = model.sample_outcome(params, predictors, u)
    return model.to_frame(prepared, {model.outcome: y})


class _scheduler:
    """Run Dask computations on ``client`` when given; else Dask's default (the active
    distributed client if there is one, the local threaded scheduler otherwise)."""

    def __init__(self, client) -> None:
        self._ctx = dask.config.set(scheduler=client) if client is not None else None

    def __enter__(self):
        if self._ctx is not None:
            self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        if self._ctx is not None:
            self._ctx.__exit__(*exc)
        return False


def _free_names(model: SynthModel, posterior: xr.Dataset) -> list[str]:
    """The model's free variables (the accountant kernel's parameter names)."""
    return kernel_for(model, Unrestricted()).free_names


def _check_supported(mech, model: SynthModel, weights) -> None:
    for name, used in _UNSUPPORTED.items():
        if used(mech):
            raise NotImplementedError(
                f"The Dask backend does not support '{name}' yet; use the in-memory "
                "PseudoPosterior.fit on a pandas DataFrame for it."
            )
    if weights is not None:
        raise NotImplementedError("The Dask backend derives the weights from risk; 'weights' "
                                  "must be None.")  # fmt: skip
    reason = unsupported_reason(model)
    if reason is not None:
        raise NotImplementedError(
            f"The Dask backend fits from sufficient statistics, but {reason}."
        )
    kernel_for(model, Unrestricted())


def _workdir(workdir, client):
    """(folder or None, TemporaryDirectory to keep alive or None) for the stored risk."""
    if workdir is False or (workdir is None and _distributed(client)):
        return None, None
    if workdir is None or workdir is True:
        owned = tempfile.TemporaryDirectory(prefix="pseudopost-dask-")
        return Path(owned.name), owned
    if not isinstance(workdir, (str, os.PathLike)):
        raise TypeError(f"'workdir' must be a folder path, False or None. Got {workdir!r}.")
    work = Path(workdir)
    if work.exists() and (not work.is_dir() or any(work.iterdir())):
        raise ValueError(f"'workdir' {str(work)!r} exists and is not an empty folder.")
    return work, None


def _distributed(client) -> bool:
    """Whether computations go to a distributed cluster (given, or the active client)."""
    if client is not None:
        return True
    try:
        from distributed import get_client

        get_client()
    except (ImportError, ValueError):
        return False
    return True


def _store(x: da.Array, workdir: Path | None, name: str) -> da.Array:
    """``x`` written once to ``workdir/name`` and read back lazily (identity without workdir)."""
    if workdir is None:
        return x
    target = workdir / name
    target.mkdir(parents=True, exist_ok=True)
    da.to_npy_stack(target, x)
    return da.from_npy_stack(target, mmap_mode=None)  # read, not mapped: RSS stays bounded


def _summary(risk: da.Array, normalisation: str) -> dict[str, float]:
    lo, hi, mean, sd = dask.compute(risk.min(), risk.max(), risk.mean(), risk.std())
    if not np.isfinite(hi):
        bad = int(da.argmax(~da.isfinite(risk)).compute())
        raise ValueError(
            f"Risk of record {bad} is not finite: the model gives it no finite "
            "log-likelihood under some posterior draw."
        )
    return {"min": float(lo), "max": float(hi), "mean": float(mean), "sd": float(sd)}


def fit_dask(
    mech,
    data: dd.DataFrame | str | os.PathLike,
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    seed: SeedLike = None,
    weights: np.ndarray | None = None,
    progress: bool | None = None,
    client=None,
    workdir: str | os.PathLike | bool | None = None,
) -> DaskPseudoPosteriorResult:
    """Run ``mech`` (a :class:`~pseudopost.PseudoPosterior`) on Dask records (module docstring).

    ``client``: a ``distributed.Client`` to run on (default: the active client, else the local
    threaded scheduler). ``workdir``: a new or empty folder for the stored risk, ``False`` to
    recompute it instead, ``None`` for the default (module docstring). Seeds are derived as in :meth:`PseudoPosterior.fit`, so the same seed
    gives the same epsilon and synthetic data as the in-memory sufficient-statistics run.
    """
    draws = check_positive_int(draws, "draws")
    tune = check_positive_int(tune, "tune", minimum=0)
    chains = check_positive_int(chains, "chains")
    model = mech.model
    _check_supported(mech, model, weights)
    if client is not None and not hasattr(client, "get"):
        raise TypeError(f"'client' must be a distributed.Client. Got {type(client).__name__}.")
    work, owned = _workdir(workdir, client)
    rng = as_generator(seed)
    seeds = [int(s) for s in rng.integers(0, 2**31 - 1, size=5 + mech.max_refits)]
    progress = interactive() if progress is None else bool(progress)
    timings: dict[str, float] = {}

    with _scheduler(client):
        t0 = time.perf_counter()
        records = load_records(data, model)
        rows = design_rows_of(records, model)
        stats = statistics(records, model, None, rows)  # validates every value (first pass)
        timings["statistics"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        sampler = _sampler(model, records, mech.sampler)
        timings["compile"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        unweighted = sampler.sample(stats, draws, tune, chains, seeds[0], progress)
        timings["unweighted_fit"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        post0 = unweighted["posterior"].to_dataset()
        flat0 = stack_draws(post0, _free_names(model, post0))
        risk, _ = abs_reduction(records, model, Unrestricted(), flat0)
        risk = _store(risk, work, "risk")
        summary = _summary(risk, mech.normalisation)
        alpha = risk_weights(risk, summary, mech.scale, mech.shift, mech.normalisation)
        timings["risk"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        decomp = Unrestricted()
        wstats = statistics(records, model, decomp.fit_weights(alpha), rows)
        timings["weighted_statistics"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        weighted = sampler.sample(wstats, draws, tune, chains, seeds[1], progress)
        timings["weighted_fit"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        post1 = weighted["posterior"].to_dataset()
        flat1 = stack_draws(post1, _free_names(model, post1))
        coef = decomp.coefficient(alpha)
        per_record, per_draw = abs_reduction(records, model, decomp, flat1, coef)
        (per_draw,) = dask.compute(per_draw)
        kept = np.ones(per_draw.size, dtype=bool)
        if mech.exclude_quantile is not None and mech.exclude_quantile < 1.0:
            kept = per_draw <= np.quantile(per_draw, mech.exclude_quantile)
            flat_kept = {k: v[kept] for k, v in flat1.items()}
            per_record, again = abs_reduction(records, model, decomp, flat_kept, coef)
            (again,) = dask.compute(again)
            epsilon = float(2.0 * again.max())
        else:
            epsilon = float(2.0 * per_draw.max())
        lipschitz = coef * per_record
        timings["accountant"] = time.perf_counter() - t0

    diagnostics = {
        "unweighted": FitDiagnostics.from_fit("unweighted", post0, _maybe(unweighted)),
        "weighted": FitDiagnostics.from_fit("weighted", post1, _maybe(weighted)),
    }
    for d in diagnostics.values():
        d.warn()
    tree = _assemble(mech, records, unweighted, weighted, per_draw, kept, epsilon, summary)
    return DaskPseudoPosteriorResult(
        tree, diagnostics, timings, model, records, risk, alpha, lipschitz, kept, client, owned
    )


def _sampler(model: SynthModel, records: DaskRecords, kind: str) -> SufficientSampler:
    """The compiled sufficient-statistics sampler: the in-memory mechanism's, compiled once per
    model structure whatever n (the statistics are swapped in at every fit), so a Dask run
    after an in-memory run (or the reverse) does not compile again."""
    head = records.matrix[:2].compute()  # two records: the cache builds its first statistics
    arrays = {c: np.ascontiguousarray(head[:, j]) for j, c in enumerate(records.columns)}
    return statistics_sampler(model, arrays, kind)


def _maybe(tree: xr.DataTree) -> xr.Dataset | None:
    return tree["sample_stats"].to_dataset() if "sample_stats" in tree.children else None


def _assemble(mech, records, unweighted, weighted, per_draw, kept, epsilon, summary):
    post = weighted["posterior"].to_dataset()
    shape = (post.sizes["chain"], post.sizes["draw"])
    attrs = {
        "epsilon": epsilon,
        "unweighted_epsilon": 2.0 * summary["max"],
        "mechanism": "risk-weighted pseudo posterior (Savitsky, Williams & Hu 2022)",
        "decomposition": "weighted",
        "neighbouring_relation": "add/remove one record",
        "guarantee": "local epsilon_x = 2 max_i Delta_i (asymptotic DP), per synthetic dataset",
        "scale": mech.scale,
        "shift": mech.shift,
        "normalisation": mech.normalisation,
        "reweight": 0,
        "exclude_quantile": -1.0 if mech.exclude_quantile is None else mech.exclude_quantile,
        "units": "log density of the outcome as given (log-normal includes -log x)",
        "backend": "dask",
        "n": records.n,
        "partitions": len(records.lengths),
    }
    privacy = xr.Dataset(
        {
            "draw_kept": (("chain", "draw"), kept.reshape(shape)),
            "draw_max": (("chain", "draw"), np.asarray(per_draw).reshape(shape)),
        },
        coords={"chain": post["chain"], "draw": post["draw"]},
        attrs=attrs,
    )
    groups = {
        "posterior": post,
        "risk_posterior": unweighted["posterior"].to_dataset(),
        "privacy": privacy,
    }
    if "sample_stats" in weighted.children:
        groups["sample_stats"] = weighted["sample_stats"].to_dataset()
    if "sample_stats" in unweighted.children:
        groups["risk_sample_stats"] = unweighted["sample_stats"].to_dataset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return xr.DataTree.from_dict(groups)
