"""The risk-weighted pseudo posterior mechanism (Savitsky, Williams & Hu 2022).

:class:`PseudoPosterior` (the algorithm, :mod:`.core`), :class:`PseudoPosteriorResult` (what a
fit returns, :mod:`.result`, with the privacy statement), the sampling settings and seeds both
paths share (:mod:`.settings`) and the Dask backend (:mod:`.dask`) for data beyond memory.
"""

from pseudopost.mechanisms.pseudo_posterior.core import PseudoPosterior
from pseudopost.mechanisms.pseudo_posterior.result import PseudoPosteriorResult

__all__ = ["PseudoPosterior", "PseudoPosteriorResult"]
