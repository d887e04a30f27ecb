"""pseudopost: privacy-protected synthetic microdata.

The risk-weighted pseudo posterior mechanism on PyMC models (:class:`PseudoPosterior`), with
ready models in :mod:`pseudopost.models`, risk and weights in :mod:`pseudopost.risk`,
accountants and noise calibration in :mod:`pseudopost.privacy`, lighter releases in
:mod:`pseudopost.mechanisms` and evaluation in :mod:`pseudopost.evaluate`.
"""

import importlib as _importlib

from pseudopost import _deprecated, datasets, models, privacy, risk
from pseudopost.fitting.sampler import SamplingWarning
from pseudopost.mechanisms.pseudo_posterior import PseudoPosterior, PseudoPosteriorResult

_deprecated.install()  # old import paths (pseudopost.releases, ...) forward with a warning

_LAZY = {"evaluate", "fitting", "mechanisms", "release"}  # heavy (scikit-learn): on first use
_OLD = {"backends", "combine", "releases"}  # moved: forwarded with a DeprecationWarning


def __getattr__(name: str):
    if name in _LAZY or name in _OLD:
        return _importlib.import_module(f"{__name__}.{name}")
    if name == "synthesize":  # whole-record synthesis with automatic model choice
        return _importlib.import_module(f"{__name__}.synthesis").synthesize
    raise AttributeError(f"module 'pseudopost' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The public names, the lazily imported ones included (``dir(pp)``, tab completion)."""
    return sorted(__all__)


__version__ = "0.2.0.dev0"

__all__ = [
    "PseudoPosterior",
    "PseudoPosteriorResult",
    "SamplingWarning",
    "datasets",
    "evaluate",
    "fitting",
    "mechanisms",
    "models",
    "privacy",
    "release",
    "risk",
    "synthesize",
]
