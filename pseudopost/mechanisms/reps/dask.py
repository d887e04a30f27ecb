r"""REPS's weighted clipped sufficient statistics (eq. 2) over a Dask DataFrame.

.. math:: f_w(D) = \frac1n \sum_i w_i\,\mathrm{clip}(\phi(z_i), C),

computed partition by partition with the in-memory code
(:meth:`~pseudopost.mechanisms.reps.gaussian_nb.NaiveBayesSchema.encode` and
:func:`~pseudopost.mechanisms.reps.gaussian_nb.weighted_clipped_mean`), each partition's mean times its
size summed and divided by the total n. Equal to the in-memory statistics up to floating-point
rounding of the sums (not bit for bit: the partial sums are added in another order). Neighbouring
relation and sensitivity are those of REPS (record replaced by the null record, :math:`C/n`);
only how the sum is computed changes.
"""

from __future__ import annotations

from collections.abc import Callable

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd

from pseudopost.mechanisms.reps.gaussian_nb import NaiveBayesSchema, weighted_clipped_mean

__all__ = ["weighted_clipped_statistics"]

Weights = da.Array | Callable[[pd.DataFrame], np.ndarray] | None


def _partition_sum(part, schema, clip, weights, w_block):
    u, y = schema.encode(part)
    if w_block is not None:
        w = np.asarray(w_block, dtype=np.float64)
    elif weights is not None:
        w = np.asarray(weights(part), dtype=np.float64)
    else:
        w = np.ones(len(part))
    if w.shape != (len(part),):
        raise ValueError(f"'weights' must give one weight per record; got shape {w.shape}.")
    return weighted_clipped_mean(u, y, w, clip, len(schema.classes)) * len(part), len(part)


def weighted_clipped_statistics(
    frame: dd.DataFrame, schema: NaiveBayesSchema, weights: Weights, clip: float
) -> np.ndarray:
    """:math:`f_w(D)`, shape ``(K, width)``, of a Dask DataFrame.

    ``weights``: ``None`` (all 1), a Dask array chunked like the frame's partitions, or a
    function of one partition returning its weights (e.g. a weight map of the rarity scores).
    """
    parts = frame.to_delayed()
    if isinstance(weights, da.Array):
        blocks = list(weights.to_delayed().ravel())
        if len(blocks) != len(parts):
            raise ValueError(
                f"'weights' has {len(blocks)} chunks but the frame {len(parts)} partitions; "
                "chunk the weights like the partitions."
            )
        tasks = [
            dask.delayed(_partition_sum)(p, schema, clip, None, b)
            for p, b in zip(parts, blocks, strict=True)
        ]
    else:
        tasks = [dask.delayed(_partition_sum)(p, schema, clip, weights, None) for p in parts]
    results = dask.compute(*tasks)
    n = sum(k for _, k in results)
    return np.sum(np.stack([s for s, _ in results]), axis=0) / n
