r"""The accountant's block kernel as the Dask backend uses it.

One block of records (columns as in ``Prepared.arrays``) against all posterior draws gives
:class:`~pseudopost.privacy.lipschitz.AbsReduction` through the one accountant's block function,
:func:`pseudopost.privacy.accountant.account_block`; blocks combine with
:func:`~pseudopost.privacy.accountant.combine_blocks` (concatenated ``per_record``, elementwise max
of ``per_draw``), so any partitioning gives the in-memory accountant's numbers bit for bit. This
module picks the kernel: the fused one of the model and decomposition, on the NumPy or Numba path
the in-memory accountant takes for the whole problem.
"""

from __future__ import annotations

import dataclasses

from pseudopost.models.base import SynthModel
from pseudopost.privacy.decomposition import Decomposition
from pseudopost.privacy.fused import BlockKernel, block_kernel, dense_for

__all__ = ["kernel_for"]


def kernel_for(
    model: SynthModel, decomposition: Decomposition, n: int | None = None, n_draws: int = 0
) -> BlockKernel:
    """The fused block kernel; ``NotImplementedError`` when the model has none. Given the whole
    problem's size (``n`` records, ``n_draws`` draws), every block takes the path (NumPy or
    Numba) the in-memory accountant would take for all records and draws."""
    kernel = block_kernel(model, decomposition)
    if kernel is None:
        raise NotImplementedError(
            f"No fused block accountant for {type(model).__name__} with the "
            f"'{decomposition.name}' accountant, which the Dask backend needs."
        )
    if n is None:
        return kernel
    return dataclasses.replace(kernel, dense=dense_for(n, n_draws))
