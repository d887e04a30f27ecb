"""Old import paths of pseudopost 0.1, forwarded for one version with a DeprecationWarning.

The package was reorganised so that its folders follow the data flow (models, fitting, privacy,
risk, mechanisms, synthesis, evaluate, release). ``import pseudopost.releases.reps`` and the
like still work: a finder on ``sys.meta_path`` maps each old module name to its new module,
warns once, and registers the new module object under the old name.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings

__all__ = ["MOVED", "install", "moved_names"]

#: old module -> new module
MOVED = {
    "pseudopost.backends": "pseudopost.mechanisms.pseudo_posterior.dask",
    "pseudopost.backends._kernels": "pseudopost.mechanisms.pseudo_posterior.dask.kernels",
    "pseudopost.backends._passes": "pseudopost.mechanisms.pseudo_posterior.dask.passes",
    "pseudopost.backends._records": "pseudopost.mechanisms.pseudo_posterior.dask.records",
    "pseudopost.backends._reps": "pseudopost.mechanisms.reps.dask",
    "pseudopost.backends.dask": "pseudopost.mechanisms.pseudo_posterior.dask.backend",
    "pseudopost.combine": "pseudopost.evaluate.combine",
    "pseudopost.mechanism": "pseudopost.mechanisms.pseudo_posterior.core",
    "pseudopost.models.sufficient": "pseudopost.fitting.sufficient",
    "pseudopost.privacy.reps_accounting": "pseudopost.mechanisms.reps.accounting",
    "pseudopost.release.disclosure": "pseudopost.evaluate.disclosure",
    "pseudopost.release.histogram_synth": "pseudopost.mechanisms.entropy.joint",
    "pseudopost.releases": "pseudopost.mechanisms",
    "pseudopost.releases._gaussian_nb": "pseudopost.mechanisms.reps.gaussian_nb",
    "pseudopost.releases._reps_data": "pseudopost.mechanisms.reps.data",
    "pseudopost.releases.entropy": "pseudopost.mechanisms.entropy.histogram",
    "pseudopost.releases.prism": "pseudopost.mechanisms.prism",
    "pseudopost.releases.prism.baselines": "pseudopost.mechanisms.prism.baselines",
    "pseudopost.releases.prism.budget": "pseudopost.mechanisms.prism.budget",
    "pseudopost.releases.prism.datasets": "pseudopost.mechanisms.prism.datasets",
    "pseudopost.releases.prism.discretize": "pseudopost.mechanisms.prism.discretize",
    "pseudopost.releases.prism.measure": "pseudopost.mechanisms.prism.measure",
    "pseudopost.releases.prism.mst": "pseudopost.mechanisms.prism.mst",
    "pseudopost.releases.prism.naive_bayes": "pseudopost.mechanisms.prism.naive_bayes",
    "pseudopost.releases.prism.pgm": "pseudopost.mechanisms.prism.pgm",
    "pseudopost.releases.prism.prism": "pseudopost.mechanisms.prism.core",
    "pseudopost.releases.prism.regimes": "pseudopost.mechanisms.prism.regimes",
    "pseudopost.releases.prism.release": "pseudopost.mechanisms.prism.release",
    "pseudopost.releases.prism.selection": "pseudopost.mechanisms.prism.selection",
    "pseudopost.releases.prism.workload": "pseudopost.mechanisms.prism.workload",
    "pseudopost.releases.privacy_test": "pseudopost.mechanisms.privacy_testing",
    "pseudopost.releases.reps": "pseudopost.mechanisms.reps.core",
    "pseudopost.releases.reps_baselines": "pseudopost.mechanisms.reps.baselines",
    "pseudopost.releases.wiener": "pseudopost.mechanisms.wiener",
    "pseudopost.risk.rarity": "pseudopost.mechanisms.reps.rarity",
    "pseudopost.risk.weight_maps": "pseudopost.mechanisms.reps.weight_maps",
    "pseudopost.sampling": "pseudopost.fitting.sampler",
}


class _Alias(importlib.abc.Loader):
    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec):
        warnings.warn(
            f"'{spec.name}' moved to '{self.target}'; the old path is deprecated and will be "
            "removed in pseudopost 0.3.",
            DeprecationWarning,
            stacklevel=2,
        )
        return importlib.import_module(self.target)

    def exec_module(self, module) -> None:  # the target module is already executed
        return None


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        new = MOVED.get(fullname)
        if new is None:
            return None
        is_package = importlib.util.find_spec(new).submodule_search_locations is not None
        return importlib.util.spec_from_loader(fullname, _Alias(new), is_package=is_package)


def install() -> None:
    """Put the forwarding finder first on ``sys.meta_path`` (idempotent)."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def moved_names(old: str, names: dict[str, str]):
    """A module ``__getattr__`` for the package ``old`` that forwards each moved name (name ->
    its new module) with a DeprecationWarning, imported only when asked for (so a lower layer
    names what moved up without importing it)."""

    def __getattr__(name: str):
        new = names.get(name)
        if new is None:
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        warnings.warn(
            f"'{old}.{name}' moved to '{new}.{name}'; the old path is deprecated and will be "
            "removed in pseudopost 0.3.",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(importlib.import_module(new), name)

    return __getattr__
