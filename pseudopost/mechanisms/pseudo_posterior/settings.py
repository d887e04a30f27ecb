"""How a pseudo posterior fit samples, shared by the in-memory and the Dask fits: the checked
sampling settings, the seeds of the fit's steps, and the diagnostics of its two posteriors.

The same seed gives the same seeds to the same steps on both paths, so a Dask run reproduces
the in-memory run of the same data.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass

import xarray as xr

from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_positive_int
from pseudopost.fitting.columns import part_samplers
from pseudopost.fitting.parts import NUTS_RERUN_UNMIXED
from pseudopost.fitting.sampler import FitDiagnostics, SamplingWarning, interactive
from pseudopost.models.parts import SEP

__all__ = ["FitSettings", "diagnose", "fit_seeds"]

#: seeds drawn per fit: unweighted, weighted, reweighted, range-averaged lambda, calibration
#: (one more per calibration refit)
STEP_SEEDS = 5


@dataclass(frozen=True)
class FitSettings:
    """Draws, tuning steps and chains of every posterior of one fit, and whether to show
    progress (default: in a terminal or a notebook, not under pytest or CI)."""

    draws: int
    tune: int
    chains: int
    progress: bool

    @classmethod
    def checked(cls, draws: int, tune: int, chains: int, progress: bool | None) -> FitSettings:
        """Validated settings (a clear error naming the argument, before any work)."""
        return cls(
            check_positive_int(draws, "draws"),
            check_positive_int(tune, "tune", minimum=0),
            check_positive_int(chains, "chains"),
            interactive() if progress is None else bool(progress),
        )

    def sampling(self) -> dict:
        """Keyword arguments of :meth:`~pseudopost.fitting.sampler.Sampler.sample` (all but
        the data and the seed)."""
        return asdict(self)


def fit_seeds(seed: SeedLike, max_refits: int) -> list[int]:
    """Integer seeds of a fit's steps (:data:`STEP_SEEDS` plus one per calibration refit), all
    drawn from the one ``seed``."""
    rng = as_generator(seed)
    return [int(s) for s in rng.integers(0, 2**31 - 1, size=STEP_SEEDS + max_refits)]


def mcmc_draws(tree: xr.DataTree) -> xr.DataTree:
    """The tree without the column parts drawn independently (a conjugate part's exact draws,
    a part's Laplace draws: :mod:`pseudopost.fitting.parts`), which have no chain to diagnose
    (R-hat over hundreds of parameters of independent draws exceeds 1.01 somewhere by chance).
    A part (variables ``"part::name"``) was drawn by MCMC when the sampler statistics hold its
    ``"part::n_steps"``; a tree of other variables is returned as it is."""
    post = tree["posterior"].to_dataset()
    parted = [v for v in post.data_vars if SEP in str(v)]
    if not parted:
        return tree
    stats = tree["sample_stats"].to_dataset() if "sample_stats" in tree.children else None
    mcmc = set() if stats is None else {
        str(v).split(SEP)[0] for v in stats.data_vars if str(v).endswith(f"{SEP}n_steps")
    }  # fmt: skip
    keep = [v for v in post.data_vars if SEP not in str(v) or str(v).split(SEP)[0] in mcmc]
    groups = {"posterior": post[keep]}
    if stats is not None:
        groups["sample_stats"] = stats
    return xr.DataTree.from_dict(groups)


def diagnose(unweighted: xr.DataTree, weighted: xr.DataTree) -> dict[str, FitDiagnostics]:
    """R-hat, ESS and divergences of both posteriors' MCMC draws (:func:`mcmc_draws`); a
    :class:`~pseudopost.fitting.sampler.SamplingWarning` for each poor one, and one naming the
    weighted fit's column parts that did not mix in two NUTS runs
    (:func:`~pseudopost.fitting.columns.part_samplers`)."""
    out = {
        "unweighted": FitDiagnostics.from_tree("unweighted", mcmc_draws(unweighted)),
        "weighted": FitDiagnostics.from_tree("weighted", mcmc_draws(weighted)),
    }
    for d in out.values():
        d.warn(stacklevel=4)  # the caller of the fit
    unmixed = [k for k, (how, _) in part_samplers(weighted).items() if how == NUTS_RERUN_UNMIXED]
    if unmixed:
        warnings.warn(
            f"The weighted fit's part(s) {', '.join(map(repr, unmixed))} did not mix in two NUTS "
            "runs (R-hat above 1.1 or bulk ESS below 10 % of the draws): the accountant's "
            "maximum over their draws may understate epsilon, and their synthetic values come "
            "from draws that need not cover the posterior. A column that is a function of "
            "others can be declared derived ('derived'): computed, not modelled, and then no "
            "later column's predictor, which costs utility where later columns depend on it; "
            "more draws and tuning steps may help.",
            SamplingWarning,
            stacklevel=4,
        )
    return out
