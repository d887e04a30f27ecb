r"""The accountant: per-record Lipschitz bounds and the local epsilon from posterior draws.

For the alpha-weighted pseudo posterior (Savitsky, Williams & Hu 2022; range-restricted paper
section 1.1), with :math:`f_{\theta}(x_i) = \log p(x_i\mid\theta)` and draws
:math:`\theta_1..\theta_M` of the *weighted* posterior,

.. math::
    \Delta_{\alpha,x_i} = \max_m |\alpha_i f_{\theta_m}(x_i)|, \qquad
    \Delta_{\alpha,x} = \max_i \Delta_{\alpha,x_i}, \qquad
    \varepsilon_x = 2\,\Delta_{\alpha,x}.

What this is and is not: :math:`\varepsilon_x` is *local* to the database x (asymptotic DP,
Savitsky et al. 2022, Thm 3): it contracts onto a global epsilon as n grows but is not a
worst-case guarantee over all databases. The neighbouring relation is add/remove of one record
(the factor 2 covers the record entering both numerator and normaliser of the posterior ratio).

The range-restricted accountants (section 3.2, eqs. 20-21) have the same shape with a different
*sensitive part* :math:`g_{\theta}(x_i)` and record coefficient :math:`c_i`:
:math:`\Delta_i = c_i \max_m |g_{\theta_m}(x_i)|`. :func:`reduce_abs` computes exactly this in
one pass over blocks of records and draws, together with the per-draw maxima
:math:`\max_i |c_i g_{\theta_m}(x_i)|` used by the optional draw exclusion.

``fn`` is either a generic :class:`~pseudopost.models.loglik.RecordFunction` (a compiled PyTensor
graph, reduced here block by block within ``max_bytes``) or a fused function of a ready model
(:class:`~pseudopost.privacy.fused.FusedFunction`, marked ``fused = True``), which computes the
same reductions in one Numba pass without the n x M matrix (``max_bytes`` then does not apply:
its memory is O(n + M)).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

__all__ = ["AbsReduction", "PerRecordFunction", "local_epsilon", "reduce_abs", "reduce_sum"]

DEFAULT_MAX_BYTES = 256 * 2**20


class PerRecordFunction(Protocol):
    """What the reductions need of g: ``n`` records, and either ``fused = True`` with
    ``reduce_abs``/``reduce_sum`` of its own, or ``blocks``/``reduce_block``/``check_chunking``
    over record and draw blocks (:class:`~pseudopost.models.loglik.RecordFunction`)."""

    n: int


@dataclass(frozen=True)
class AbsReduction:
    """Result of :func:`reduce_abs`: ``per_record[i] = max_m |g_m(x_i)|`` and
    ``per_draw[m] = max_i |c_i g_m(x_i)|``."""

    per_record: np.ndarray
    per_draw: np.ndarray


def reduce_abs(
    fn: PerRecordFunction,
    draws: Mapping[str, np.ndarray],
    coefficient: np.ndarray | None = None,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    **extras: np.ndarray,
) -> AbsReduction:
    """Max of ``|g|`` over draws per record, and of ``|c g|`` over records per draw.

    Works block by block (:meth:`RecordFunction.blocks
    <pseudopost.models.RecordFunction.blocks>`): at most ``max_bytes`` of float64 values are
    alive at once, whatever n and M are.
    """
    n_draws = len(next(iter(draws.values())))
    c = np.ones(fn.n) if coefficient is None else np.asarray(coefficient, dtype=float)
    if c.shape != (fn.n,) or np.any(c < 0):
        raise ValueError(f"'coefficient' must be {fn.n} non-negative values; got shape {c.shape}.")
    if getattr(fn, "fused", False):
        return fn.reduce_abs(draws, c, **extras)
    if fn.n * 8 > max_bytes or n_draws * fn.n * 8 > max_bytes:
        fn.check_chunking(draws, **extras)
    per_record = np.zeros(fn.n)
    per_draw = np.zeros(n_draws)
    for rec, dr in fn.blocks(n_draws, max_bytes):
        block = {k: v[dr] for k, v in draws.items()}
        # |g| (NaN, an undefined log density, counts as unbounded) reduced inside the graph
        rec_max, draw_max = fn.reduce_block("abs", block, rec, c[rec], **extras)
        np.maximum(per_record[rec], rec_max, out=per_record[rec])
        np.maximum(per_draw[dr], draw_max, out=per_draw[dr])
    return AbsReduction(per_record, per_draw)


def local_epsilon(lipschitz: np.ndarray) -> float:
    r""":math:`\varepsilon_x = 2 \max_i \Delta_i` (add/remove neighbours; local, asymptotic DP)."""
    lip = np.asarray(lipschitz, dtype=float)
    if lip.size == 0:
        raise ValueError("'lipschitz' is empty.")
    return float(2.0 * lip.max())


def reduce_sum(
    fn: PerRecordFunction,
    draws: Mapping[str, np.ndarray],
    coefficient: np.ndarray,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    **extras: np.ndarray,
) -> np.ndarray:
    """Per draw, :math:`\\sum_i c_i g_m(x_i)` (block by block, as :func:`reduce_abs`)."""
    n_draws = len(next(iter(draws.values())))
    c = np.asarray(coefficient, dtype=float)
    if c.shape != (fn.n,):
        raise ValueError(f"'coefficient' must have shape ({fn.n},); got {c.shape}.")
    if getattr(fn, "fused", False):
        return fn.reduce_sum(draws, c, **extras)
    if fn.n * 8 > max_bytes or n_draws * fn.n * 8 > max_bytes:
        fn.check_chunking(draws, **extras)
    out = np.zeros(n_draws)
    for rec, dr in fn.blocks(n_draws, max_bytes):
        block = {k: v[dr] for k, v in draws.items()}
        out[dr] += fn.reduce_block("sum", block, rec, c[rec], **extras)[0]
    return out
