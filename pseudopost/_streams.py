r"""Record-indexed random streams: synthesis that does not depend on how records are chunked.

Synthetic values are drawn by inversion, :math:`x^*_i = F^{-1}_{\theta}(u_i \mid z_i)`, from
uniforms :math:`u_i` that depend only on ``(seed, stream, i)``: Philox4x64 with key
``(seed, stream)`` and counter i (one counter holds four 64-bit outputs, so a record's k <= 4
uniforms are one counter; larger k takes ceil(k / 4) counters). A block of records starting at
record ``start`` advances the counter to it, so an in-memory run, a run over record chunks and a
Dask run over partitions give bit-identical synthetic data for the same seed.

``stream`` separates independent uses (e.g. column j of a sequential model, or synthetic
dataset d); ``seed`` is the release's integer seed.
"""

from __future__ import annotations

import numpy as np

__all__ = ["record_uniforms"]

_HALF_ULP = 0.5 / 2.0**53


def record_uniforms(seed: int, stream: int, start: int, n: int, k: int = 1) -> np.ndarray:
    """Uniforms in the open interval (0, 1), shape ``(n, k)``, for records ``start..start+n-1``.

    Record i's values are a function of ``(seed, stream, i)`` alone (see the module docstring).
    """
    for name, v in (("seed", seed), ("stream", stream), ("start", start), ("n", n), ("k", k)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ValueError(f"'{name}' must be a non-negative integer; got {v!r}.")
    if k < 1:
        raise ValueError(f"'k' must be at least 1; got {k}.")
    per = -(-int(k) // 4)
    key = np.array([int(seed) % 2**64, int(stream) % 2**64], dtype=np.uint64)
    bits = np.random.Philox(key=key).advance(int(start) * per)
    raw = np.random.Generator(bits).random(int(n) * per * 4).reshape(int(n), per * 4)[:, :k]
    # random() gives multiples of 2**-53 in [0, 1): shift by half a step into (0, 1)
    return raw + _HALF_ULP
