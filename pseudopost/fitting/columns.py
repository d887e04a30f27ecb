r"""Per-column fitting of a whole file: every part's weighted posterior alone, in parallel.

For fixed weights :math:`\alpha` the pseudo posterior of a sequential model factorises over its
parts (guide: *Whole files*): part q's parameters :math:`\theta_q` appear only in its own
term of the record log-likelihood, the priors are independent, and a record's weight
multiplies each term, so

.. math::
    \prod_i \prod_q p_q(x_i \mid \theta_q)^{\alpha_i a_{iq}} \prod_q \pi(\theta_q)
    = \prod_q \Bigl[\prod_i p_q(x_i \mid \theta_q)^{\alpha_i a_{iq}}\, \pi(\theta_q)\Bigr].

Each factor is a posterior of its own, fitted from the part's grouped statistics
(:mod:`pseudopost.models.parts`): nutpie on the written-out density
(:class:`~pseudopost.fitting.parts.PartSampler`, its own step size and mass matrix), or exact
draws for a conjugate part (Dirichlet-categorical). Independent fits of the factors are draws of
the product: draw (chain c, draw d) of every part together is one joint draw, so the parts'
draws are *paired by index* into one posterior (variables ``"{part}::{param}"``), which the risk
step and the accountant evaluate as the sum over parts
(:class:`~pseudopost.privacy.kernels.parts.PartAccountant`).

Parallelism: parts are fitted on a pool of threads (nutpie's sampler runs in Rust and NumPy
releases the GIL in the densities' heavy loops), or as Dask tasks when a ``distributed`` client
is active (a cluster fits parts on different workers). Each part's seed is a function of the fit
seed and the part's position only (:func:`part_seed`), so the same seed gives the same draws
whatever the number of workers or their schedule.

:class:`ColumnSampler` follows the package's sampler protocol: it is built once for the parts,
keeps no data of a fit (only the last fit's seconds per part, for inspection), and
``sample(data, *, draws, tune, chains, seed, progress)`` takes the statistics of every part
(:func:`statistics_data`: arrays keyed ``"{part}::{statistic}"``). A refit under other weights
may pass ``start``, the modes of an earlier fit (:meth:`ColumnSampler.sample_with_modes`),
where each part's preconditioner starts its mode search: a weighted fit's modes are a few
Newton steps from the unweighted fit's (Adult's weighted fit: 126 s -> 105 s).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Collection, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager

import numpy as np
import pandas as pd
import xarray as xr

from pseudopost.fitting.laplace import _one_blas_thread
from pseudopost.fitting.parts import NUTS_RERUN, PartSampler, drawn_by
from pseudopost.fitting.sampler import Sampler, posterior_tree
from pseudopost.models.parts import SEP, GroupedData, Part, PartData, Stats, dim_name

__all__ = [
    "ColumnSampler",
    "active_client",
    "file_part_data",
    "pair_draws",
    "part_samplers",
    "part_seed",
    "parts_progress",
    "samplers_table",
    "samplers_text",
    "statistics_data",
]


def part_seed(seed: int, position: int) -> int:
    """The seed of the part at ``position`` for the fit seed ``seed`` (independent streams of
    one ``SeedSequence``; nothing else enters)."""
    ss = np.random.SeedSequence(entropy=int(seed), spawn_key=(int(position),))
    return int(ss.generate_state(1, np.uint32)[0])


def file_part_data(model, prepared) -> tuple[list[Part], list[PartData | GroupedData]]:
    """A whole-file model's parts and their data, one design matrix alive at a time: grouped by
    (design row, outcome) for parts evaluated per key (:class:`~pseudopost.models.parts.
    GroupedData`), as records for the normal and log-normal parts (whose statistics are
    :math:`Z^\top W Z` sums, and whose outcomes are continuous)."""
    parts, data = [], []
    for part, d in model.iter_part_data(prepared):
        parts.append(part)
        data.append(d if part.kind == "gauss" else GroupedData.of(part, d))
    return parts, data


def statistics_data(
    parts: Sequence[Part], data: Sequence[PartData | GroupedData], weights: np.ndarray
) -> dict[str, np.ndarray]:
    """Every part's grouped statistics under record ``weights``, keyed
    ``"{part}::{statistic}"`` (the ``data`` of :meth:`ColumnSampler.sample`)."""
    out = {}
    for part, d in zip(parts, data, strict=True):
        stats = d.statistics(part, weights) if isinstance(d, GroupedData) else part.statistics(
            d, weights
        )  # fmt: skip
        out.update({f"{part.name}{SEP}{k}": np.asarray(v) for k, v in stats.arrays.items()})
    return out


def active_client():
    """The active ``distributed`` client, or None (no client, or distributed not installed)."""
    try:
        from distributed import get_client
    except ImportError:  # pragma: no cover
        return None
    try:
        return get_client()
    except ValueError:
        return None


def _fit_one(
    part: Part,
    stats: Stats,
    settings: dict,
    seed: int,
    sampler: PartSampler | None,
    start: np.ndarray | None = None,
    hard: bool = False,
):
    """One part's fit ``(tree, seconds, mode)``, its mode search started at ``start``, with
    BLAS on one thread throughout: the process-wide BLAS limit would otherwise depend on
    whether another part is in its preconditioner at that moment
    (:func:`~pseudopost.fitting.laplace._one_blas_thread`), and with it the rounding of the
    densities' matrix products, so the same seed could give other draws on another schedule or
    number of workers. (Also set around the whole fit by :meth:`ColumnSampler._draw_parts`; here for
    a Dask worker process.)"""
    t0 = time.perf_counter()
    with _one_blas_thread():
        sampler = sampler if sampler is not None else PartSampler(part, stats)
        tree, mode = sampler.sample_with_mode(stats, seed=seed, start=start, hard=hard,
                                              **settings)  # fmt: skip
    return tree, time.perf_counter() - t0, mode


def _prefixed(part: Part, ds: xr.Dataset) -> xr.Dataset:
    """A part's variables named ``"{part}::..."`` and its own dimensions by
    :func:`~pseudopost.models.parts.dim_name` (``"age_value_predictor"``)."""
    own = [d for d in ds.dims if d not in ("chain", "draw")]
    ds = ds.rename({d: dim_name(part.name, d) for d in own})
    return ds.rename({v: f"{part.name}{SEP}{v}" for v in ds.data_vars})


class ColumnSampler(Sampler):
    """Fits every part of a whole file separately and pairs their draws (module docstring).

    A :class:`~pseudopost.fitting.sampler.Sampler` whose data are the parts' statistics
    (:func:`statistics_data`, names ``"{part}::{statistic}"``) rather than a PyMC model's
    ``pm.Data``: there is no PyMC model (:attr:`model` is None); every part's density is written
    out in NumPy (:mod:`pseudopost.fitting.parts`), so nothing is ever compiled.

    Parameters
    ----------
    parts
        The file's parts (unique names), in a fixed order (their positions seed their fits).
    workers
        Threads for the parts (default: the machine's cores); ignored when a ``distributed``
        client is active and ``backend`` allows it.
    backend
        ``"auto"`` (Dask when a client is active, else threads), ``"threads"`` or ``"dask"``.
    """

    kind = "columns"

    def __init__(
        self, parts: Sequence[Part], *, workers: int | None = None, backend: str = "auto"
    ) -> None:
        parts = list(parts)
        names = [p.name for p in parts]
        if len(set(names)) != len(names):
            raise ValueError(f"Part names must be unique; got {names}.")
        if backend not in ("auto", "threads", "dask"):
            raise ValueError(f"'backend' must be 'auto', 'threads' or 'dask'. Got {backend!r}.")
        if workers is not None and (
            isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
        ):
            raise ValueError(f"'workers' must be a positive integer. Got {workers!r}.")
        self.parts = parts
        self.workers = workers
        self.backend = backend
        self.model = None  # no PyMC model: the parts' densities are written out in NumPy
        self.compilations = 0
        self._fields = {p.name: tuple(p.empty_statistics().arrays) for p in parts}
        self._names = frozenset(f"{p}{SEP}{k}" for p, ks in self._fields.items() for k in ks)
        self._keep = frozenset(f"{p.name}{SEP}{q}" for p in parts for q in p.layout.names)
        self._samplers: dict[str, PartSampler] = {}
        self.timings: dict[str, float] = {}

    def __repr__(self) -> str:
        return f"ColumnSampler(parts={[p.name for p in self.parts]}, backend={self.backend!r})"

    def _stats(self, data: Mapping[str, np.ndarray]) -> list[Stats]:
        out = []
        for part in self.parts:
            prefix = f"{part.name}{SEP}"
            arrays = {k: np.asarray(data[prefix + k]) for k in self._fields[part.name]}
            out.append(Stats(part.family, arrays))
        return out

    def sample(
        self,
        data: Mapping[str, np.ndarray],
        *,
        draws: int,
        tune: int,
        chains: int,
        seed: int,
        progress: bool = False,
        start: Mapping[str, np.ndarray] | None = None,
    ) -> xr.DataTree:
        """Paired draws of every part (:meth:`Sampler.sample
        <pseudopost.fitting.sampler.Sampler.sample>`); ``start`` as in
        :meth:`sample_with_modes`."""
        return self.sample_with_modes(
            data, draws=draws, tune=tune, chains=chains, seed=seed, progress=progress,
            start=start,
        )[0]  # fmt: skip

    def sample_with_modes(
        self,
        data: Mapping[str, np.ndarray],
        *,
        draws: int,
        tune: int,
        chains: int,
        seed: int,
        progress: bool = False,
        start: Mapping[str, np.ndarray] | None = None,
        laplace: bool = False,
        independence: bool = False,
        hard: Collection[str] = (),
    ) -> tuple[xr.DataTree, dict[str, np.ndarray]]:
        """:meth:`sample`, and each preconditioned part's mode (packed parameters).

        ``start`` maps part names to where each part's mode search starts: the modes of an
        earlier fit of the same parts (the unweighted fit's, for a weighted refit), passed
        explicitly so that a fit's draws depend on its arguments only, on threads and on Dask
        alike. :attr:`timings` keeps the last fit's seconds per part, for inspection.

        ``laplace``: each part's draws from its Laplace approximation where its mode is found
        by Newton steps on its exact Hessian, NUTS elsewhere
        (:meth:`PartSampler.sample_with_mode <pseudopost.fitting.parts.PartSampler.
        sample_with_mode>`). ``independence``: each such part's draws by the independence
        Metropolis-Hastings sampler with that approximation as its proposal (an exact MCMC
        kernel), NUTS elsewhere. ``hard``: names of parts drawn by NUTS with the second run's
        settings from the start (:meth:`PartSampler.sample_with_mode
        <pseudopost.fitting.parts.PartSampler.sample_with_mode>`).
        """
        trace, modes = self._draw_parts(self._checked(data), draws=draws, tune=tune,
                                        chains=chains, seed=seed, progress=progress,
                                        start=start, laplace=laplace,
                                        independence=independence, hard=hard)  # fmt: skip
        return posterior_tree(trace, self._keep), modes

    def _draw(self, data, *, draws, tune, chains, seed, progress) -> xr.DataTree:
        return self._draw_parts(data, draws=draws, tune=tune, chains=chains, seed=seed,
                                progress=progress, start=None)[0]  # fmt: skip

    def _draw_parts(
        self,
        data,
        *,
        draws,
        tune,
        chains,
        seed,
        progress,
        start,
        laplace=False,
        independence=False,
        hard=(),
    ) -> tuple[xr.DataTree, dict[str, np.ndarray]]:
        """The paired posterior of all parts (groups ``posterior`` and ``sample_stats``) and
        their modes, with BLAS on one thread throughout (:func:`_fit_one`; set here, in the
        calling thread, so that the limit holds in the pool's threads)."""
        with _one_blas_thread():
            return self._fit_parts(data, draws=draws, tune=tune, chains=chains, seed=seed,
                                   progress=progress, start=start, laplace=laplace,
                                   independence=independence, hard=hard)  # fmt: skip

    def _fit_parts(
        self,
        data,
        *,
        draws,
        tune,
        chains,
        seed,
        progress,
        start,
        laplace=False,
        independence=False,
        hard=(),
    ) -> tuple[xr.DataTree, dict[str, np.ndarray]]:
        stats = self._stats(data)
        # one bar over the parts (below), none per part's sampler
        settings = {"draws": draws, "tune": tune, "chains": chains, "progress": False,
                    "laplace": bool(laplace), "independence": bool(independence)}  # fmt: skip
        seeds = [part_seed(seed, j) for j in range(len(self.parts))]
        starts = [None if start is None else start.get(p.name) for p in self.parts]
        hard = set(hard)
        hards = [p.name in hard for p in self.parts]
        client = active_client() if self.backend in ("auto", "dask") else None
        if self.backend == "dask" and client is None:
            raise ValueError("backend='dask' needs an active distributed client.")
        with parts_progress(
            len(self.parts),
            "Laplace or NUTS" if laplace else "IMH or NUTS" if independence else "NUTS",
            progress,
        ) as done:
            results = self._run(client, stats, settings, seeds, starts, hards, done)
        self.timings = {p.name: r[1] for p, r in zip(self.parts, results, strict=True)}
        modes = {p.name: r[2] for p, r in zip(self.parts, results, strict=True)
                 if r[2] is not None}  # fmt: skip
        tree = _pair(self.parts, [r[0] for r in results], chains, draws)
        tree["sample_stats"].attrs["seconds"] = json.dumps(
            {k: round(v, 3) for k, v in self.timings.items()}
        )
        return tree, modes

    def _run(self, client, stats, settings, seeds, starts, hards, done) -> list:
        """Every part's ``(tree, seconds, mode)`` in the parts' order, ``done(name)`` called
        as each part ends."""
        if client is not None:
            futures = [
                client.submit(_fit_one, part, st, settings, s, None, x, h, pure=False)
                for part, st, s, x, h in zip(self.parts, stats, seeds, starts, hards, strict=True)
            ]
            results = client.gather(futures)
            for part in self.parts:
                done(part.name)
            return results
        for part, st in zip(self.parts, stats, strict=True):
            if part.name not in self._samplers:
                self._samplers[part.name] = PartSampler(part, st)
        jobs = [
            (part, st, settings, s, self._samplers[part.name], x, h)
            for part, st, s, x, h in zip(self.parts, stats, seeds, starts, hards, strict=True)
        ]
        workers = self.workers or os.cpu_count() or 1
        if workers == 1:
            results = []
            for job in jobs:
                results.append(_fit_one(*job))
                done(job[0].name)
            return results
        # largest parts first, so the pool's tail is short
        order = sorted(range(len(jobs)), key=lambda j: -_cost(stats[j], self.parts[j]))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(_fit_one, *jobs[j]): j for j in order}
            for f in as_completed(futures):
                f.result()  # an error stops the fit here
                done(self.parts[futures[f]].name)
            by = {j: f.result() for f, j in futures.items()}
        return [by[j] for j in range(len(jobs))]


@contextmanager
def parts_progress(total: int, how: str, show: bool):
    """One progress bar over a whole file's parts (rich, as PyMC's samplers show theirs), or
    none when ``show`` is false (the default under pytest and CI:
    :func:`~pseudopost.fitting.sampler.interactive`). Yields ``done(name)``, called as each
    part's fit ends."""
    if not show:
        yield lambda name: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn(), TextColumn("{task.fields[last]}"))  # fmt: skip
    with Progress(*columns, transient=False) as bar:
        task = bar.add_task(f"fitting {total} parts ({how})", total=total, last="")
        yield lambda name: bar.update(task, advance=1, last=f"{name} done")


def _cost(stats: Stats, part: Part) -> float:
    return float(stats.n_patterns) * part.layout.size


def _pair(parts: Sequence[Part], trees: Sequence[xr.DataTree], chains: int, draws: int):
    """One DataTree whose draw (c, d) is every part's draw (c, d); its ``sample_stats``
    attribute ``samplers`` is how each part was drawn (:func:`part_samplers`)."""
    posts, stats = [], []
    diverging = np.zeros((chains, draws), dtype=np.int64)
    for part, tree in zip(parts, trees, strict=True):
        post = tree["posterior"].to_dataset()
        post = post.assign_coords(chain=np.arange(chains), draw=np.arange(draws))
        posts.append(_prefixed(part, post))
        if "sample_stats" in tree.children:
            ss = tree["sample_stats"].to_dataset()
            keep = [v for v in ("diverging", "n_steps", "depth", "accepted") if v in ss]
            ss = ss[keep].assign_coords(chain=np.arange(chains), draw=np.arange(draws))
            if "diverging" in ss:
                diverging += ss["diverging"].to_numpy().astype(np.int64)
            stats.append(ss.rename({v: f"{part.name}{SEP}{v}" for v in keep}))
    # each part's own attributes (its Laplace k-hat, IMH acceptance, "rerun") are left out:
    # merged, the first part's would stand for all; how each was drawn is recorded below
    posterior = xr.merge(posts, compat="no_conflicts", join="exact", combine_attrs="drop")
    sample_stats = xr.merge(stats, join="exact", combine_attrs="drop") if stats else xr.Dataset(
        coords={"chain": np.arange(chains), "draw": np.arange(draws)}
    )  # fmt: skip
    sample_stats["diverging"] = (("chain", "draw"), diverging)
    how = {part.name: drawn_by(tree) for part, tree in zip(parts, trees, strict=True)}
    sample_stats.attrs["samplers"] = json.dumps({k: v for k, v in how.items() if v is not None})
    return xr.DataTree.from_dict({"posterior": posterior, "sample_stats": sample_stats})


def pair_draws(
    parts: Sequence[Part], trees: Sequence[xr.DataTree], chains: int, draws: int
) -> xr.DataTree:
    """The parts' trees (each with ``chains`` x ``draws`` draws and its ``sampler``
    attribute) paired by index into one tree, as :class:`ColumnSampler` pairs its fits (the
    censored fit's parts: :mod:`pseudopost.fitting.censored`)."""
    return _pair(parts, trees, chains, draws)


def part_samplers(
    tree: xr.DataTree, group: str = "sample_stats"
) -> dict[str, tuple[str, float | None]]:
    """How each part of a :class:`ColumnSampler` fit was drawn and in how many seconds,
    ``{part: (sampler, seconds)}`` (the sampler one of
    :data:`~pseudopost.fitting.parts.HOW_DRAWN`: exact, Laplace, split-normal, independence
    Metropolis-Hastings, NUTS, NUTS twice because its first run had not mixed); empty for
    a tree without that record. Kept as JSON strings in ``sample_stats.attrs`` (``samplers``,
    ``seconds``) so that the tree writes to netCDF; ``group``: the sampler statistics' group
    (a pseudo posterior result's ``risk_sample_stats`` for its risk step)."""
    if group not in tree.children:
        return {}
    attrs = tree[group].attrs
    how, seconds = json.loads(attrs.get("samplers", "{}")), json.loads(attrs.get("seconds", "{}"))
    return {k: (v, seconds.get(k)) for k, v in how.items()}


def samplers_text(drawn: Mapping[str, tuple[str, float | None]]) -> str:
    """One line on how a fit's parts were drawn (:func:`part_samplers`): the count per
    sampler, the parts drawn twice and the slowest part."""
    names: dict[str, list[str]] = {}
    for part, (how, _) in drawn.items():
        names.setdefault(how, []).append(part)
    text = ", ".join(
        f"{len(parts)} {how}" + (f" ({', '.join(map(repr, parts))})" if how.startswith(NUTS_RERUN) else "")
        for how, parts in names.items()
    )
    timed = {k: s for k, (_, s) in drawn.items() if s is not None}
    if timed:
        slowest = max(timed, key=timed.get)
        text += f"; slowest {slowest!r} {timed[slowest]:.3g} s"
    return text


def samplers_table(tree: xr.DataTree) -> pd.DataFrame | None:
    """Each part's sampler and seconds in the risk step (``risk_sample_stats``) and the
    weighted fit (``sample_stats``), slowest first: a ``pandas.DataFrame`` with columns
    ``part``, ``risk step``, ``risk s``, ``weighted fit``, ``weighted s``; None for a tree
    without that record (:func:`part_samplers`)."""
    weighted, risk = part_samplers(tree), part_samplers(tree, "risk_sample_stats")
    if not weighted:
        return None
    rows = [
        {
            "part": k,
            "risk step": risk.get(k, ("-", None))[0],
            "risk s": risk.get(k, ("-", float("nan")))[1],
            "weighted fit": how,
            "weighted s": sec,
        }
        for k, (how, sec) in weighted.items()
    ]
    return pd.DataFrame(rows).sort_values("weighted s", ascending=False)
