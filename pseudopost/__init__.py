"""pseudopost: privacy-protected synthetic microdata.

The risk-weighted pseudo posterior mechanism on PyMC models (:class:`PseudoPosterior`), with
ready models in :mod:`pseudopost.models`, risk and weights in :mod:`pseudopost.risk`,
accountants and noise calibration in :mod:`pseudopost.privacy`, lighter releases in
:mod:`pseudopost.releases` and evaluation in :mod:`pseudopost.evaluate`.
"""

import importlib

from . import datasets, models, privacy, risk
from .mechanism import PseudoPosterior, PseudoPosteriorResult
from .sampling import SamplingWarning

_LAZY = {
    "backends",
    "combine",
    "evaluate",
    "release",
    "releases",
}  # heavy (scikit-learn): on first use


def __getattr__(name: str):
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    if name == "synthesize":  # whole-record synthesis with automatic model choice
        return importlib.import_module(".synthesis", __name__).synthesize
    raise AttributeError(f"module 'pseudopost' has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "PseudoPosterior",
    "PseudoPosteriorResult",
    "SamplingWarning",
    "backends",
    "combine",
    "datasets",
    "evaluate",
    "models",
    "privacy",
    "release",
    "releases",
    "risk",
    "synthesize",
]
