"""A binned column's grid points inside its bins: levels, rest draws against a brute-force
enumeration of the bins' free points, and a whole-file release that keeps a heap off the round
numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd

import pseudopost as pp
from pseudopost.models.file.bin_points import CONCENTRATION, BinPoints
from pseudopost.models.file.bins import Bins
from pseudopost.models.file.grid import Grid


def _points(edges, step, digits):
    """Brute force: every grid point of each bin (the last bin closed)."""
    grid = np.round(np.arange(-1000, 1000) * step, digits)
    out = []
    for j in range(len(edges) - 1):
        last = j == len(edges) - 2
        inside = (grid >= edges[j]) & ((grid <= edges[j + 1]) if last else (grid < edges[j + 1]))
        out.append(set(np.round(grid[inside], digits).tolist()))
    return out


def test_levels_priors_and_rest_draws_match_a_brute_force_enumeration():
    edges, step, digits = (0.0, 0.35, 1.0, 1.7), 0.1, 1
    bins, grid = Bins(edges), Grid(step=step, digits=digits)
    x = np.array([0.1, 0.1, 0.3, 0.5, 0.5, 0.9, 1.7])
    forbidden = (0.7,)  # a declared code inside the second bin
    bp = BinPoints.build(bins, grid, x, forbidden)
    truth = _points(edges, step, digits)
    truth[1].discard(0.7)
    held = [set(np.round(x[bins.index(x) == j], 1).tolist()) for j in range(3)]
    # each observed value's level is its own grid point, in its own bin
    lv = bp.levels(x)
    np.testing.assert_allclose(grid.point(bp.level_k[lv]), x)
    np.testing.assert_array_equal(bp.level_bin[lv], bins.index(x))
    for j in range(3):
        n_j = len(truth[j])
        at = bp.level_bin == j
        assert bp.n_points[j] == n_j
        # held points a / n_j each, the rest (n_j - held) a / n_j
        np.testing.assert_allclose(bp.prior[at & (bp.level_k >= 0)], CONCENTRATION / n_j)
        free = truth[j] - held[j]
        rest = at & (bp.level_k < 0)
        assert rest.sum() == (1 if free else 0)
        if free:
            np.testing.assert_allclose(bp.prior[rest], CONCENTRATION * len(free) / n_j)
            # the rest's draws: each free point equally often, never a held or forbidden one
            u = (np.arange(len(free) * 50) + 0.5) / (len(free) * 50)
            v = np.round(bp.values(np.full(u.size, np.flatnonzero(rest)[0]), u), 1)
            counts = pd.Series(v).value_counts()
            assert set(counts.index) == free
            assert counts.nunique() == 1


def test_a_release_keeps_a_heap_that_no_round_number_explains():
    rng = np.random.default_rng(4)
    n = 1500
    wage = np.round(rng.lognormal(2.6, 0.4, n), 2)
    wage[rng.random(n) < 0.12] = 6.70  # a minimum wage: 12 % of records, not a round number
    frame = pd.DataFrame({"wage": wage, "group": rng.choice(["a", "b"], n)})
    out = pp.synthesize(frame, seed=2, draws=60, tune=60, chains=1, progress=False)
    assert "wage.points (bin_points)" in out.choices.set_index("column").loc["wage", "parts"]
    syn = out.synthesize(seed=3, weighted=False)["wage"].to_numpy()
    share = np.mean(np.isclose(syn, 6.70))
    assert 0.08 < share < 0.16, share  # uniform inside a bin would put ~0 % on one cent
    lo, hi = (float(v) for v in out.structure.columns["wage"].support)
    assert np.all((syn >= lo) & (syn <= hi))
    np.testing.assert_allclose(syn, np.round(syn, 2))  # on the cent grid
