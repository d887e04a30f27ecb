r"""The PRISM workload :math:`\mathcal W = \mathcal W_{task} \cup \mathcal W_{bg}` (section 5.3).

Task workload (pool ``task``), preserving :math:`P_{S,Y}`:

* every 2-way marginal :math:`(X_j, Y)`, :math:`j \in S`, weight :math:`w = 1` (or the caller's
  task weights, e.g. DP-estimated MI, normalised to average 1);
* up to :math:`m_3` 3-way marginals :math:`(X_j, X_{j'}, Y)` for the pairs with the largest
  DP-estimated :math:`\tilde I(X_j; X_{j'} \mid Y)`, weights that CMI normalised to average 1;
  a pair is skipped when adding it would make the graphical model's junction tree larger than
  ``max_model_cells`` (post-processing of the noisy CMI, so free);
* the full joint :math:`(X_S, Y)` when it has at most ``joint_cells`` cells, weight :math:`|S|`.

Background workload (pool ``bg``), weight 1: the 1-way marginals and the 2-way marginals
:math:`(X_i, X_j)` on the edges of a DP spanning tree over the features (MST-style,
:func:`.selection.exponential_spanning_tree`). Deviation: 1-way marginals are measured only for
the columns whose 1-way margin no task marginal already contains (the columns outside S; Y too
for the naive Bayes backend, as in appendix C.2), which saves budget and model-fitting time.

Only cliques, weights and pools live here; nothing is measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np

__all__ = [
    "MIN_WEIGHT",
    "Query",
    "Workload",
    "background_queries",
    "candidate_pairs",
    "junction_tree_cells",
    "noisy_weights",
    "task_queries",
    "triple_queries",
]


MIN_WEIGHT = 0.1  # floor on data-derived task weights, relative to their average


@dataclass(frozen=True)
class Query:
    """One marginal to measure: its clique, pool, task weight and role."""

    clique: tuple[str, ...]
    pool: str
    weight: float
    kind: str  # "2way", "3way", "joint", "1way", "tree"

    def cells(self, sizes: Mapping[str, int]) -> int:
        r""":math:`|\Omega_q|`, the number of cells of the marginal."""
        return int(np.prod([sizes[c] for c in self.clique]))


@dataclass(frozen=True)
class Workload:
    """The measured workload: the selected features S, the target and every query."""

    target: str
    features: tuple[str, ...]
    queries: tuple[Query, ...]

    def pool(self, name: str) -> list[Query]:
        """The queries of one pool."""
        return [q for q in self.queries if q.pool == name]


def _normalise(w: Sequence[float]) -> list[float]:
    arr = np.asarray(w, dtype=float)
    return (arr / arr.mean()).tolist()


def noisy_weights(values: Sequence[float], floor: float = MIN_WEIGHT) -> list[float]:
    r"""Task weights from noisy (C)MI: clipped at 0, normalised to average 1, floored.

    A weight near 0 would give its marginal almost no budget, and a marginal measured with noise
    far above its signal injects spurious structure (the naive Bayes backend uses it as is), so
    weights are floored at ``floor`` times the average before renormalising. All
    post-processing of the released noisy values.
    """
    arr = np.clip(np.asarray(values, dtype=float), 0.0, None)
    if arr.sum() <= 0:
        return [1.0] * arr.size
    return _normalise(np.maximum(arr / arr.mean(), floor))


def task_queries(
    features: Sequence[str],
    target: str,
    sizes: Mapping[str, int],
    *,
    weights: Mapping[str, float] | None = None,
    joint_cells: int = 0,
) -> list[Query]:
    """2-way :math:`(X_j, Y)` queries (and the full joint when small enough)."""
    w = [1.0] * len(features) if weights is None else _normalise([weights[f] for f in features])
    out = [Query((f, target), "task", wi, "2way") for f, wi in zip(features, w, strict=True)]
    cells = int(np.prod([sizes[f] for f in features])) * sizes[target]
    if len(features) >= 2 and cells <= joint_cells:
        out.append(Query((*features, target), "task", float(len(features)), "joint"))
    return out


def junction_tree_cells(cliques: Sequence[Sequence[str]], sizes: Mapping[str, int]) -> float:
    """Total cells of the junction tree mbi would build on these cliques."""
    from pseudopost.mechanisms.prism.pgm import load_mbi

    mbi = load_mbi()
    Domain, hypothetical_model_size = mbi.Domain, mbi.junction_tree.hypothetical_model_size
    attrs = sorted({a for cl in cliques for a in cl})
    dom = Domain(attrs, [int(sizes[a]) for a in attrs])
    # mbi reports megabytes of float64 potentials; convert back to cells
    return float(hypothetical_model_size(dom, [tuple(c) for c in cliques])) * 2**20 / 8


def triple_queries(
    noisy_cmi: Mapping[tuple[str, str], float],
    target: str,
    sizes: Mapping[str, int],
    *,
    m3: int,
    base_cliques: Sequence[Sequence[str]] = (),
    max_model_cells: float | None = None,
) -> list[Query]:
    r"""Up to ``m3`` 3-way queries :math:`(X_j, X_{j'}, Y)` in decreasing noisy CMI.

    Weights: the noisy CMI normalised to average 1 over the chosen triples (section 5.4), with
    the floor of :func:`noisy_weights`.
    """
    chosen: list[tuple[str, str]] = []
    cliques = [tuple(c) for c in base_cliques]
    for pair in sorted(noisy_cmi, key=lambda p: (-noisy_cmi[p], p)):
        if len(chosen) >= m3:
            break
        trial = [*cliques, (*pair, target)]
        if max_model_cells is not None and junction_tree_cells(trial, sizes) > max_model_cells:
            continue
        chosen.append(pair)
        cliques = trial
    if not chosen:
        return []
    weights = noisy_weights([noisy_cmi[p] for p in chosen])
    return [Query((*p, target), "task", w, "3way") for p, w in zip(chosen, weights, strict=True)]


def background_queries(columns: Sequence[str], tree: Sequence[tuple[str, str]] = ()) -> list[Query]:
    """All 1-way marginals and the spanning-tree 2-way marginals, weight 1."""
    ones = [Query((c,), "bg", 1.0, "1way") for c in columns]
    return ones + [Query(tuple(e), "bg", 1.0, "tree") for e in tree]


def candidate_pairs(features: Sequence[str]) -> list[tuple[str, str]]:
    """All unordered pairs of selected features (the 3-way candidates)."""
    return list(combinations(features, 2))
