"""Fitting the (weighted) posterior: nutpie by default, compiled once, refit with new weights.

nutpie (with its low-rank mass-matrix adaptation, which handles the intercept/slope correlation of
uncentred regressions: about 6x the bulk ESS of a diagonal one on the shipped fatigue data)
compiles the weighted model once (``compile_pymc_model``); every refit only swaps the
weights (``with_data(alpha=...)``), which costs about a second instead of a recompilation. PyMC's
own NUTS is the fallback (``sampler="pymc"`` or a model nutpie cannot compile); it recompiles on
each fit. Diagnostics (R-hat, bulk/tail ESS, divergences) are computed for every fit and a
:class:`SamplingWarning` names the fit and the parameter when they are poor.

Ready sampler. A caller may hand :class:`Sampler` a nutpie model it built itself
(``compiled=``) instead of having the PyMC model compiled: the sufficient-statistics fast path
passes its log density written out in NumPy
(:class:`~pseudopost.fitting.statistics_density.StatisticsDensity`, through
``nutpie.from_pyfunc``), so it compiles nothing on any machine.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass
from typing import Literal

import arviz_stats as azs
import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from pseudopost.models.weighting import CENSOR_NAME, WEIGHTS_NAME

__all__ = [
    "SAMPLERS",
    "FitDiagnostics",
    "Sampler",
    "SamplingWarning",
    "interactive",
]

SAMPLERS = ("nutpie", "nutpie-jax", "pymc")
RHAT_MAX = 1.01
ESS_MIN = 400


class SamplingWarning(UserWarning):
    """Poor convergence diagnostics of a fit."""


def interactive() -> bool:
    """True in a Jupyter kernel or a terminal, False under pytest or CI."""
    if os.environ.get("PYTEST_CURRENT_TEST") or os.environ.get("CI"):
        return False
    if "ipykernel" in sys.modules:
        return True
    return sys.stderr.isatty()


@dataclass(frozen=True)
class FitDiagnostics:
    """R-hat and ESS by parameter (a tidy table) and the number of divergent transitions."""

    fit: str
    table: pd.DataFrame
    divergences: int
    draws: int

    @classmethod
    def from_fit(cls, fit: str, posterior: xr.Dataset, sample_stats: xr.Dataset | None):
        rhat = azs.rhat(posterior)
        ess_bulk = azs.ess(posterior, method="bulk")
        ess_tail = azs.ess(posterior, method="tail")
        rows = []
        for name in posterior.data_vars:
            r, b, t = (
                np.atleast_1d(d[name].to_numpy()).ravel() for d in (rhat, ess_bulk, ess_tail)
            )
            for j in range(r.size):
                label = name if r.size == 1 else f"{name}[{j}]"
                rows.append((label, float(r[j]), float(b[j]), float(t[j])))
        table = pd.DataFrame(rows, columns=["parameter", "r_hat", "ess_bulk", "ess_tail"])
        div = 0
        if sample_stats is not None and "diverging" in sample_stats:
            div = int(sample_stats["diverging"].sum())
        n = int(posterior.sizes["chain"] * posterior.sizes["draw"])
        return cls(fit, table, div, n)

    def problems(self) -> list[str]:
        """Human-readable list of what is poor (empty when all is well)."""
        out = []
        bad_r = self.table[self.table.r_hat > RHAT_MAX]
        out += [
            f"R-hat of '{p}' is {r:.3f} > {RHAT_MAX}"
            for p, r in zip(bad_r.parameter, bad_r.r_hat, strict=True)
        ]
        ess_min = min(ESS_MIN, self.draws // 2)
        bad_e = self.table[self.table.ess_bulk < ess_min]
        out += [
            f"bulk ESS of '{p}' is {e:.0f} < {ess_min}"
            for p, e in zip(bad_e.parameter, bad_e.ess_bulk, strict=True)
        ]
        if self.divergences:
            out.append(f"{self.divergences} divergent transition(s)")
        return out

    def warn(self) -> None:
        issues = self.problems()
        if issues:
            warnings.warn(
                f"The {self.fit} fit has poor diagnostics: "
                + "; ".join(issues)
                + ". Increase draws/tune or revisit the model.",
                SamplingWarning,
                stacklevel=3,
            )


class Sampler:
    """Fits a weighted model (from :func:`~pseudopost.models.weighted_model`) for given weights.

    Parameters
    ----------
    model
        The weighted PyMC model (with ``pm.Data("alpha")``).
    sampler
        ``"nutpie"`` (default; numba, compiled once, refits swap the data), ``"nutpie-jax"``
        (nutpie's JAX backend: data are frozen into the compiled function, so every fit
        recompiles, but in a fraction of a second instead of ~10 s: faster end to end for small
        data and few fits) or ``"pymc"`` (PyMC's NUTS; recompiles every fit).
    compiled
        With ``"nutpie"``: a nutpie model of the same density built by the caller (e.g.
        ``nutpie.from_pyfunc``; its shared data are the model's ``pm.Data`` names), used instead
        of compiling ``model``.
    """

    def __init__(
        self,
        model: pm.Model,
        sampler: Literal["nutpie", "nutpie-jax", "pymc"] = "nutpie",
        *,
        compiled=None,
    ) -> None:
        if sampler not in SAMPLERS:
            raise ValueError(f"The 'sampler' parameter must be one of {SAMPLERS}. Got {sampler!r}.")
        self.model = model
        self.kind = sampler
        self.compilations = 0
        self.data: dict[str, np.ndarray] = {}  # data values swapped in at every fit
        self._compiled = None
        if sampler == "nutpie":
            try:
                import nutpie

                self._compiled = nutpie.compile_pymc_model(model) if compiled is None else compiled
                self.compilations += 1
            except Exception as err:
                warnings.warn(
                    f"nutpie could not compile the model ({err}); using PyMC's NUTS.",
                    SamplingWarning,
                    stacklevel=2,
                )
                self.kind = "pymc"

    def sample(
        self,
        weights: np.ndarray,
        *,
        draws: int,
        tune: int,
        chains: int,
        seed: int,
        progress: bool = False,
        censor_bound: float | None = None,
    ) -> xr.DataTree:
        """Posterior draws (groups ``posterior`` and ``sample_stats``) under ``weights`` (and
        the censoring bound, for a model built with one)."""
        data = {**self.data, WEIGHTS_NAME: np.asarray(weights, dtype=float)}
        if censor_bound is not None and CENSOR_NAME in self.model.named_vars:
            data[CENSOR_NAME] = np.asarray(float(censor_bound))
        return self.sample_data(
            data, draws=draws, tune=tune, chains=chains, seed=seed, progress=progress
        )

    def sample_data(
        self,
        data: dict[str, np.ndarray],
        *,
        draws: int,
        tune: int,
        chains: int,
        seed: int,
        progress: bool = False,
    ) -> xr.DataTree:
        """Posterior draws with the model's ``pm.Data`` variables set to ``data``."""
        if self.kind == "nutpie-jax":
            import nutpie

            pm.set_data(data, model=self.model)
            compiled = nutpie.compile_pymc_model(self.model, backend="jax", gradient_backend="jax")
            self.compilations += 1
        elif self.kind == "nutpie":
            compiled = self._compiled.with_data(**data)
        if self.kind in ("nutpie", "nutpie-jax"):
            import nutpie

            trace = nutpie.sample(
                compiled,
                draws=draws,
                tune=tune,
                chains=chains,
                cores=min(chains, os.cpu_count() or 1),
                seed=seed,
                progress_bar=progress,
                save_warmup=False,
                adaptation="low_rank",
            )
        else:
            with self.model:
                pm.set_data(data)
                trace = pm.sample(
                    draws=draws,
                    tune=tune,
                    chains=chains,
                    random_seed=seed,
                    progressbar=progress,
                    nuts_sampler="pymc",
                    cores=min(chains, os.cpu_count() or 1),
                    compute_convergence_checks=False,
                    mp_ctx="forkserver",  # never fork after JAX (PRISM, nutpie-jax) is loaded
                )
            self.compilations += 1
        free = [rv.name for rv in self.model.free_RVs]
        keep = [
            v
            for v in trace["posterior"].data_vars
            if v in free or v in {d.name for d in self.model.deterministics}
        ]
        post = trace["posterior"].to_dataset()[keep]
        stats = trace["sample_stats"].to_dataset() if "sample_stats" in trace else None
        return xr.DataTree.from_dict(
            {"posterior": post, "sample_stats": stats} if stats is not None else {"posterior": post}
        )
