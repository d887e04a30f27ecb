r"""The accountant's per-block reduction used by the Dask backend.

One block of records (columns as in ``Prepared.arrays``) against all posterior draws gives
:class:`~pseudopost.privacy.lipschitz.AbsReduction`: ``per_record[i] = max_m |g_m(x_i)|`` and
``per_draw[m] = max_i |c_i g_m(x_i)|``, by the fused accountant's block kernel
(:func:`pseudopost.privacy.fused.block_kernel`). Its per-record values do not depend on the
block, and blocks combine by concatenating ``per_record`` and taking the elementwise max of
``per_draw``: a max does not round, so any partitioning gives the in-memory accountant's numbers
bit for bit.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from pseudopost.models.base import SynthModel
from pseudopost.privacy.decomposition import Decomposition
from pseudopost.privacy.fused import BlockKernel, block_kernel
from pseudopost.privacy.lipschitz import AbsReduction

__all__ = ["kernel_for", "reduce_block"]


def kernel_for(model: SynthModel, decomposition: Decomposition) -> BlockKernel:
    """The fused block kernel; ``NotImplementedError`` when the model has none."""
    kernel = block_kernel(model, decomposition)
    if kernel is None:
        raise NotImplementedError(
            f"No fused block accountant for {type(model).__name__} with the "
            f"'{decomposition.name}' accountant, which the Dask backend needs."
        )
    return kernel


def reduce_block(
    kernel: BlockKernel,
    draws: Mapping[str, np.ndarray],
    arrays: Mapping[str, np.ndarray],
    coefficient: np.ndarray | None,
    extras: Mapping[str, np.ndarray] | None = None,
) -> AbsReduction:
    """:class:`AbsReduction` of one block of records against every draw (coefficient 1 if
    ``None``)."""
    n = len(arrays[kernel.outcome])
    c = np.ones(n) if coefficient is None else np.asarray(coefficient, dtype=np.float64)
    return kernel.reduce_abs(draws, arrays, c, **dict(extras or {}))
