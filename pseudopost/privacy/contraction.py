r"""The aDP contraction diagnostic (range-restricted paper, figure 5; Savitsky et al. 2022).

The local :math:`\varepsilon_x` contracts onto a global epsilon as n grows (asymptotic DP).
:func:`contraction` refits a mechanism on nested random subsamples of growing size and returns
the per-record Lipschitz bounds and epsilon at each size, as data (a tidy DataFrame) and as a
violin plot (:func:`plot_contraction`). A mechanism whose bounds do not settle as n grows is
not in its asymptotic regime, and its local epsilon should not be read as a guarantee.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd

from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_frame, check_positive_int

__all__ = ["contraction", "plot_contraction"]


def contraction(
    mechanism,
    data: pd.DataFrame,
    sizes: Sequence[int],
    *,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    seed: SeedLike = None,
) -> pd.DataFrame:
    """Fit ``mechanism`` (a :class:`~pseudopost.PseudoPosterior`) on nested subsamples.

    Returns one row per record and size with columns ``n``, ``record``, ``lipschitz`` and
    ``epsilon`` (the size's local epsilon, repeated).
    """
    check_frame(data, "data")
    sizes = sorted(check_positive_int(s, "sizes", minimum=2) for s in sizes)
    if not sizes or sizes[-1] > len(data):
        raise ValueError(
            f"'sizes' must be non-empty and at most len(data) = {len(data)}; got {sizes}."
        )
    rng = as_generator(seed)
    order = rng.permutation(len(data))
    rows = []
    for n in sizes:
        sub = data.iloc[np.sort(order[:n])].reset_index(drop=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = mechanism.fit(
                sub,
                draws=draws,
                tune=tune,
                chains=chains,
                seed=int(rng.integers(2**31 - 1)),
                progress=False,
            )
        lip = res.lipschitz.to_numpy()
        rows.append(
            pd.DataFrame({"n": n, "record": np.arange(n), "lipschitz": lip, "epsilon": res.epsilon})
        )
    return pd.concat(rows, ignore_index=True)


def plot_contraction(table: pd.DataFrame, ax=None):
    """Violins of the per-record Lipschitz bounds by n (the paper's figure 5)."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    sizes = sorted(table["n"].unique())
    ax.violinplot(
        [table.loc[table.n == n, "lipschitz"].to_numpy() for n in sizes], showextrema=True
    )
    ax.set_xticks(range(1, len(sizes) + 1), [str(n) for n in sizes])
    ax.set_xlabel("n")
    ax.set_ylabel("by-record Lipschitz bound")
    return ax
