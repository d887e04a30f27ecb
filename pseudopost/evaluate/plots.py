"""Plots statisticians expect beside a release: violins of per-record quantities by synthesizer."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["plot_violins"]


def plot_violins(groups: Mapping[str, np.ndarray], *, ylabel: str = "", title: str = "", ax=None):
    """One violin per labelled array (e.g. by-record Lipschitz bounds or weights per synthesizer,
    as in the range-restricted paper's figures 1, 6, 7 and 15); the extremes and median are marked."""
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=(1.4 * max(3, len(groups)) + 1, 3.5))
    labels = list(groups)
    ax.violinplot(
        [np.asarray(groups[k], dtype=float).ravel() for k in labels],
        showextrema=True,
        showmedians=True,
    )
    ax.set_xticks(range(1, len(labels) + 1), labels, rotation=20, ha="right")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return ax
