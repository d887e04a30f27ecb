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
6. synthesis by inversion from record-indexed uniforms, partition by partition, to a lazy Dask
   DataFrame (:meth:`DaskPseudoPosteriorResult.synthesize`) or to Parquet
   (:meth:`DaskPseudoPosteriorResult.write_parquet`).

Covered: ready models with sufficient statistics (normal, log-normal, Poisson), the
unrestricted accountant, both risk normalisations, ``exclude_quantile``. Sensitive ranges,
``target_epsilon``, ``censor_epsilon``, ``reweight`` and fixed ``weights`` raise
``NotImplementedError`` before any work (use the in-memory mechanism). The weights, the
accountant and the statistics are the in-memory functions applied block by block
(:func:`pseudopost.risk.weights.weights_from_risk`,
:func:`pseudopost.privacy.accountant.account_block`,
:func:`pseudopost.fitting.sufficient.block_statistics`); ``"logistic"`` weights use Dask's mean
and sd of the risk, equal to NumPy's up to rounding; everything else is bit-identical.

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

from pseudopost._rng import SeedLike
from pseudopost._streams import record_uniforms
from pseudopost.fitting.cache import statistics_sampler
from pseudopost.fitting.sampler import Sampler
from pseudopost.fitting.sufficient import statistics_data, unsupported_reason
from pseudopost.mechanisms.pseudo_posterior.dask.kernels import kernel_for
from pseudopost.mechanisms.pseudo_posterior.dask.passes import (
    abs_reduction,
    design_rows_of,
    risk_weights,
    statistics,
)
from pseudopost.mechanisms.pseudo_posterior.dask.records import DaskRecords, load_records
from pseudopost.mechanisms.pseudo_posterior.result import (
    ResultBase,
    fit_groups,
    guarantee_text,
    privacy_attrs,
    weights_origin,
)
from pseudopost.mechanisms.pseudo_posterior.settings import FitSettings, diagnose, fit_seeds
from pseudopost.models.base import Prepared, SynthModel, synthesis_stream
from pseudopost.models.loglik import stack_draws
from pseudopost.privacy.decomposition import Unrestricted
from pseudopost.privacy.lipschitz import local_epsilon
from pseudopost.risk.weights import RiskSummary

__all__ = ["DaskPseudoPosteriorResult", "fit_dask"]

_UNSUPPORTED = {
    "sensitive_range": lambda m: m.sensitive_range is not None,
    "target_epsilon": lambda m: m.target_epsilon is not None,
    "censor_epsilon": lambda m: m.censor_epsilon is not None,
    "reweight": lambda m: m.reweight,
}


def _lazy(attr: str, name: str, doc: str) -> property:
    """A per-record lazy :class:`xarray.DataArray` (dimension ``record``) over a Dask array."""
    return property(
        lambda self: xr.DataArray(getattr(self, attr), dims="record", name=name), doc=doc
    )


@dataclass(repr=False)
class DaskPseudoPosteriorResult(ResultBase):
    """A pseudo posterior fitted over Dask records: what every result reads from its DataTree
    (:class:`~pseudopost.mechanisms.pseudo_posterior.result.ResultBase`: ``epsilon``,
    ``unweighted_epsilon``, ``privacy_statement``, ``posterior``, ``summary``, synthesis, ...;
    the tree holds the posterior groups and the privacy attributes, no per-record groups),
    plus lazy per-record arrays.

    ``lipschitz``, ``unweighted_lipschitz`` (= ``risk``), ``alpha`` and ``alpha_star`` are lazy
    :class:`xarray.DataArray` over Dask arrays (dimension ``record``): ``.compute()`` brings
    them into memory, ``.data`` is the Dask array (``.max().compute()`` reduces it, and
    ``dask.array.to_npy_stack(folder, result.lipschitz.data)`` writes it block by block).
    Computing them reruns the kernel passes they need, on the active scheduler. Synthetic
    datasets are lazy Dask DataFrames (:meth:`synthesize`, :meth:`synthesize_datasets`) or
    Parquet datasets written partition by partition (:meth:`write_parquet`).
    """

    records: DaskRecords = field(repr=False)
    _risk: da.Array = field(repr=False)
    _alpha: da.Array = field(repr=False)
    _lipschitz: da.Array = field(repr=False)
    client: object = field(default=None, repr=False)
    _workdir: object = field(default=None, repr=False)  # keeps a temporary folder alive

    lipschitz = _lazy("_lipschitz", "lipschitz", "Per-record bounds of the weighted fit.")
    unweighted_lipschitz = _lazy("_risk", "unweighted_lipschitz", "Bounds of the unweighted fit.")
    risk = _lazy("_risk", "risk", ":math:`L_i = \\max_m |f_{\\theta_m}(x_i)|` (unweighted fit).")
    alpha = _lazy("_alpha", "alpha", "Weights of the weighted fit.")
    alpha_star = _lazy("_alpha", "alpha_star", "Weights of the fitted posterior (= alpha here).")

    def synthesize(
        self,
        m: int | None = None,
        seed: SeedLike = None,
        *,
        weighted: bool = True,
        path: str | os.PathLike | None = None,
    ):
        """One lazy synthetic Dask DataFrame (see
        :meth:`~pseudopost.mechanisms.pseudo_posterior.result.ResultBase.synthesize`; ``m`` is
        deprecated). ``path`` is deprecated too: it forwards to :meth:`write_parquet`."""
        if path is None:
            return super().synthesize(m, seed, weighted=weighted)
        warnings.warn(
            "synthesize(path=...) is deprecated and will be removed in pseudopost 0.3; use "
            "write_parquet(path, m, seed=...).",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.write_parquet(path, 1 if m is None else m, seed, weighted=weighted)

    def write_parquet(
        self,
        path: str | os.PathLike,
        m: int = 1,
        seed: SeedLike = None,
        *,
        weighted: bool = True,
    ) -> list[Path]:
        """Write ``m`` synthetic datasets (those of :meth:`synthesize_datasets` for the same
        seed) as Parquet datasets ``path/synthetic-{j}``, partition by partition; ``path`` must
        be new or empty. Returns their paths."""
        if path is not None and Path(path).exists() and any(Path(path).iterdir()):
            raise ValueError(f"'path' {str(path)!r} exists and is not empty; give a new folder.")
        frames = self.synthesize_datasets(m, seed, weighted=weighted)
        out = [Path(path) / f"synthetic-{j + 1}" for j in range(len(frames))]
        with _scheduler(self.client):
            for frame, target in zip(frames, out, strict=True):
                frame.to_parquet(target, write_index=True)
        return out

    def _frames(self, posterior, chosen, seed) -> list[dd.DataFrame]:
        """Record i's value is :math:`F^{-1}_\\theta(u_i \\mid z_i)` with :math:`u_i` from
        :func:`~pseudopost._streams.record_uniforms` at its global record number: the in-memory
        result's data for the same seed, whatever the partitioning."""
        flat = stack_draws(posterior, _free_names(self.model))
        return [
            synthesize_frame(self.records, self.model, {k: v[d] for k, v in flat.items()}, seed, j)
            for j, d in enumerate(chosen)
        ]


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


def _free_names(model: SynthModel) -> list[str]:
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


def _risk_summary(risk: da.Array, normalisation: str) -> tuple[RiskSummary, float]:
    """The global :class:`~pseudopost.risk.weights.RiskSummary` of the risk (one reduction) and
    its maximum (the unweighted epsilon is twice it)."""
    lo, hi, mean, sd = dask.compute(risk.min(), risk.max(), risk.mean(), risk.std())
    if not np.isfinite(hi):
        bad = int(da.argmax(~da.isfinite(risk)).compute())
        raise ValueError(
            f"Risk of record {bad} is not finite: the model gives it no finite "
            "log-likelihood under some posterior draw."
        )
    lo, hi = float(lo), float(hi)
    if normalisation == "linear":
        return RiskSummary("linear", lo, hi - lo), hi
    return RiskSummary("logistic", float(mean), float(sd)), hi


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
    settings = FitSettings.checked(draws, tune, chains, progress)
    model = mech.model
    _check_supported(mech, model, weights)
    if client is not None and not hasattr(client, "get"):
        raise TypeError(f"'client' must be a distributed.Client. Got {type(client).__name__}.")
    work, owned = _workdir(workdir, client)
    seeds = fit_seeds(seed, mech.max_refits)
    timings: dict[str, float] = {}

    def sample(stats, seed):
        data = statistics_data(model, stats)
        return sampler.sample(data, seed=seed, **settings.sampling())

    with _scheduler(client):
        t0 = time.perf_counter()
        records = load_records(data, model)
        rows = design_rows_of(records, model)
        stats = statistics(records, model, None, rows)  # validates every value (first pass)
        timings["statistics"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        sampler = _sampler(model, records, mech.sampler)
        timings["compile"] = time.perf_counter() - t0
        # 1. unweighted posterior; risk L_i = max_m |f_theta_m(x_i)|
        t0 = time.perf_counter()
        unweighted = sample(stats, seeds[0])
        timings["unweighted_fit"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        risk, _ = abs_reduction(records, model, Unrestricted(), _flat(model, unweighted))
        risk = _store(risk, work, "risk")
        # 2. weights alpha_i = clip(c (1 - r_i) + g, 0, 1), r_i by the global summary
        summary, risk_max = _risk_summary(risk, mech.normalisation)
        alpha = risk_weights(risk, summary, mech.scale, mech.shift)
        timings["risk"] = time.perf_counter() - t0

        # 4. the pseudo posterior (eq. 1) from weighted statistics, then its accountant
        t0 = time.perf_counter()
        decomp = Unrestricted()
        wstats = statistics(records, model, decomp.fit_weights(alpha), rows)
        timings["weighted_statistics"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        weighted = sample(wstats, seeds[1])
        timings["weighted_fit"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        flat = _flat(model, weighted)
        coef = decomp.coefficient(alpha)
        per_record, per_draw = abs_reduction(records, model, decomp, flat, coef)
        (per_draw,) = dask.compute(per_draw)
        kept = np.ones(per_draw.size, dtype=bool)
        epsilon = local_epsilon(per_draw)  # 2 max_m max_i c_i |g| = 2 max_i Delta_i
        # 5. optional draw exclusion: re-account on the kept draws
        if mech.exclude_quantile is not None and mech.exclude_quantile < 1.0:
            kept = per_draw <= np.quantile(per_draw, mech.exclude_quantile)
            per_record, again = abs_reduction(
                records, model, decomp, {k: v[kept] for k, v in flat.items()}, coef
            )
            (again,) = dask.compute(again)
            epsilon = local_epsilon(again)
        lipschitz = coef * per_record
        timings["accountant"] = time.perf_counter() - t0

    diagnostics = diagnose(unweighted, weighted)
    tree = _assemble(mech, records, unweighted, weighted, per_draw, kept, epsilon, risk_max)
    return DaskPseudoPosteriorResult(
        tree, diagnostics, timings, model, records, risk, alpha, lipschitz, client, owned
    )


def _flat(model: SynthModel, tree: xr.DataTree) -> dict[str, np.ndarray]:
    return stack_draws(tree["posterior"].to_dataset(), _free_names(model))


def _sampler(model: SynthModel, records: DaskRecords, kind: str) -> Sampler:
    """The compiled sufficient-statistics sampler: the in-memory mechanism's, compiled once per
    model structure whatever n (the statistics are passed at every fit), so a Dask run
    after an in-memory run (or the reverse) does not compile again."""
    head = records.matrix[:2].compute()  # two records: the cache builds its first statistics
    arrays = {c: np.ascontiguousarray(head[:, j]) for j, c in enumerate(records.columns)}
    return statistics_sampler(model, arrays, kind)


def _assemble(mech, records, unweighted, weighted, per_draw, kept, epsilon, risk_max):
    groups = fit_groups(unweighted, weighted)
    post = groups["posterior"]
    shape = (post.sizes["chain"], post.sizes["draw"])
    origin = weights_origin(mech.reweight, mech.shift, None, False)
    attrs = privacy_attrs(
        mech,
        epsilon=epsilon,
        unweighted_epsilon=2.0 * risk_max,
        decomposition=Unrestricted.name,
        guarantee=guarantee_text(Unrestricted(), False, origin),
        weights_origin=origin,
    )
    attrs.update(backend="dask", n=records.n, partitions=len(records.lengths))
    groups["privacy"] = xr.Dataset(
        {
            "draw_kept": (("chain", "draw"), kept.reshape(shape)),
            "draw_max": (("chain", "draw"), np.asarray(per_draw).reshape(shape)),
        },
        coords={"chain": post["chain"], "draw": post["draw"]},
        attrs=attrs,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tree = xr.DataTree.from_dict(groups)
    tree.attrs.update(
        likelihood="sufficient",
        likelihood_note="fitted from weighted sufficient statistics (exact), chunked with Dask",
    )
    return tree
