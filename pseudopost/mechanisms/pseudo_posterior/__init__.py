"""The risk-weighted pseudo posterior mechanism (Savitsky, Williams & Hu 2022).

:class:`PseudoPosterior` (the algorithm, :mod:`.core`), :class:`PseudoPosteriorResult` (what a
fit returns, :mod:`.result`) and the Dask backend (:mod:`.dask`) for data beyond memory.
"""

from pseudopost.mechanisms.pseudo_posterior.core import PseudoPosterior, PseudoPosteriorResult

__all__ = ["PseudoPosterior", "PseudoPosteriorResult"]
