"""pseudopost: privacy-protected synthetic microdata.

The risk-weighted pseudo posterior mechanism on PyMC models (:class:`PseudoPosterior`), with
ready models in :mod:`pseudopost.models`, risk and weights in :mod:`pseudopost.risk`,
accountants and noise calibration in :mod:`pseudopost.privacy`, lighter releases in
:mod:`pseudopost.releases` and evaluation in :mod:`pseudopost.evaluate`.
"""

from . import datasets, models, privacy, risk
from .mechanism import PseudoPosterior, PseudoPosteriorResult
from .sampling import SamplingWarning

__version__ = "0.1.0"

__all__ = [
    "PseudoPosterior",
    "PseudoPosteriorResult",
    "SamplingWarning",
    "datasets",
    "models",
    "privacy",
    "risk",
]
