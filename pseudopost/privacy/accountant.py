r"""The accountant of the pseudo posterior mechanism, in one place.

Given the posterior draws :math:`\theta_1..\theta_M` of the :math:`\alpha^*`-weighted pseudo
posterior, the weights :math:`\alpha` and a :class:`~pseudopost.privacy.decomposition.Decomposition`
(public/sensitive split, range-restricted paper eqs. 20-21), the per-record Lipschitz bound and
the local epsilon are

.. math::
    \Delta_i = c_i \max_m |g_{\theta_m}(x_i)|, \qquad
    \varepsilon_x = 2 \max_i \Delta_i

(Savitsky, Williams & Hu 2022, Theorem 3; range-restricted paper eq. 7 for the range-averaged
and Definition 4 for the range-truncated split). The guarantee is *local* (it holds for the
database x at hand and its add/remove-one neighbours) and asymptotic, unless the decomposition
is :class:`~pseudopost.privacy.decomposition.Censored` (see its docstring).

The same :func:`account` serves the in-memory mechanism, the draw exclusion, calibration and
``pseudopost account``. Over records beyond memory the accountant runs block by block:
:func:`account_block` reduces one block of records against every draw with the fused block
kernel (:func:`pseudopost.privacy.fused.block_kernel`), and :func:`combine_blocks` joins the
blocks' reductions, exactly (per-record values do not depend on the block, and a max does not
round), so any partitioning gives :func:`account`'s numbers bit for bit. The Dask backend maps
:func:`account_block` over record partitions
(:mod:`pseudopost.mechanisms.pseudo_posterior.dask.passes`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pymc as pm

from pseudopost.models.base import SynthModel
from pseudopost.privacy.decomposition import Decomposition
from pseudopost.privacy.fused import BlockKernel, fused_function
from pseudopost.privacy.lipschitz import (
    DEFAULT_MAX_BYTES,
    AbsReduction,
    PerRecordFunction,
    local_epsilon,
    reduce_abs,
)

__all__ = ["Accounting", "account", "account_block", "combine_blocks", "sensitive_function"]


@dataclass(frozen=True)
class Accounting:
    r"""What the accountant found: ``lipschitz[i]`` = :math:`\Delta_i`, ``per_draw[m]`` =
    :math:`\max_i c_i|g_{\theta_m}(x_i)|` and ``per_record[i]`` = :math:`\max_m |g_{\theta_m}(x_i)|`
    (before the coefficient)."""

    lipschitz: np.ndarray
    per_draw: np.ndarray
    per_record: np.ndarray

    @property
    def epsilon(self) -> float:
        r""":math:`\varepsilon_x = 2\max_i\Delta_i`."""
        return local_epsilon(self.lipschitz)


def sensitive_function(
    decomposition: Decomposition, model: SynthModel, base: pm.Model, loglik: PerRecordFunction
) -> PerRecordFunction:
    """g of ``decomposition`` as a function of (draws, records): the fused kernel of a ready model
    when one applies (:mod:`pseudopost.privacy.fused`), else the generic compiled graph
    (:meth:`Decomposition.generic_function`). ``loglik`` is the model's record function."""
    if getattr(loglik, "fused", False):
        fused = loglik.with_decomposition(decomposition)
    else:
        fused = fused_function(model, base, decomposition)
    if fused is not None:
        return fused
    return decomposition.generic_function(model, base, loglik)


def account(
    g: PerRecordFunction,
    draws: Mapping[str, np.ndarray],
    alpha: np.ndarray,
    decomposition: Decomposition,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Accounting:
    r""":math:`\Delta_i` and :math:`\varepsilon_x` of draws of the :math:`\alpha^*`-weighted
    posterior (module docstring), reduced over blocks of records and draws within
    ``max_bytes``."""
    coefficient = decomposition.coefficient(alpha)
    red = reduce_abs(g, draws, coefficient, max_bytes=max_bytes, **decomposition.extras(alpha))
    return Accounting(coefficient * red.per_record, red.per_draw, red.per_record)


def account_block(
    kernel: BlockKernel,
    draws: Mapping[str, np.ndarray],
    arrays: Mapping[str, np.ndarray],
    coefficient: np.ndarray | None = None,
    extras: Mapping[str, np.ndarray] | None = None,
) -> AbsReduction:
    r"""The accountant's reductions of one block of records against every draw:
    ``per_record[i]`` = :math:`\max_m |g_{\theta_m}(x_i)|` and ``per_draw[m]`` =
    :math:`\max_i c_i |g_{\theta_m}(x_i)|` over the block's records.

    ``kernel`` is the fused g of the model and decomposition
    (:func:`~pseudopost.privacy.fused.block_kernel`), ``arrays`` the block's columns (as in
    ``Prepared.arrays``), ``coefficient`` and ``extras`` the block's :math:`c_i` (1 if None) and
    :meth:`~pseudopost.privacy.decomposition.Decomposition.extras`. Blocks join with
    :func:`combine_blocks`; :math:`\Delta_i = c_i` ``per_record[i]``.
    """
    n = len(arrays[kernel.outcome])
    c = np.ones(n) if coefficient is None else np.asarray(coefficient, dtype=np.float64)
    return kernel.reduce_abs(draws, arrays, c, **dict(extras or {}))


def combine_blocks(per_draw: Sequence[np.ndarray]) -> np.ndarray:
    r"""The per-draw maxima :math:`\max_i c_i|g_{\theta_m}(x_i)|` over all records from each
    block's (:func:`account_block`): their elementwise max (exact, whatever the blocks).
    :math:`\varepsilon_x = 2\max_m` of it (:func:`~pseudopost.privacy.lipschitz.local_epsilon`)."""
    return np.max(np.stack(per_draw), axis=0)
