r"""The structural regimes of PRISM (sections 4.3 and 5.2) that need no data: causal and graphical.

* Regime 1, causal: :math:`S = \mathrm{Pa}(Y)`, given by the user. No privacy cost.
* Regime 2, graphical: :math:`S = \mathrm{MB}(Y)`, the Markov blanket read off a given DAG:
  parents, children and the children's other parents (section 3.3; Koller & Friedman 2009).
  No privacy cost when the DAG is public knowledge.
* Regime 3, predictive, spends budget and lives in :mod:`.selection`.

A DAG is given either as a mapping ``{node: [its parents]}`` or as an iterable of
``(parent, child)`` edges.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping

__all__ = ["DAG", "as_parent_map", "check_acyclic", "markov_blanket", "parents_of"]

DAG = Mapping[Hashable, Iterable[Hashable]] | Iterable[tuple[Hashable, Hashable]]


def as_parent_map(dag: DAG) -> dict[Hashable, frozenset]:
    """Normalise a DAG to ``{node: frozenset(parents)}`` covering every node named."""
    parents: dict[Hashable, set] = {}
    if isinstance(dag, Mapping):
        for child, pas in dag.items():
            if isinstance(pas, (str, bytes)):
                raise TypeError(
                    f"The parents of node {child!r} must be an iterable of node names, "
                    f"not the string {pas!r}."
                )
            parents.setdefault(child, set()).update(pas)
    else:
        for edge in dag:
            if not (isinstance(edge, tuple) and len(edge) == 2):
                raise TypeError(
                    f"A DAG given as edges must hold (parent, child) pairs. Got {edge!r}."
                )
            parents.setdefault(edge[1], set()).add(edge[0])
    for pas in list(parents.values()):
        for p in pas:
            parents.setdefault(p, set())
    for node, pas in parents.items():
        if node in pas:
            raise ValueError(f"The graph has a self-loop on node {node!r}; a DAG cannot.")
    return {k: frozenset(v) for k, v in parents.items()}


def check_acyclic(dag: DAG) -> dict[Hashable, frozenset]:
    """Return the parent map, or raise ``ValueError`` naming a cycle (Kahn's algorithm)."""
    parents = as_parent_map(dag)
    children: dict[Hashable, set] = {n: set() for n in parents}
    for node, pas in parents.items():
        for p in pas:
            children[p].add(node)
    indegree = {n: len(p) for n, p in parents.items()}
    ready = [n for n, d in indegree.items() if d == 0]
    seen = 0
    while ready:
        node = ready.pop()
        seen += 1
        for c in children[node]:
            indegree[c] -= 1
            if indegree[c] == 0:
                ready.append(c)
    if seen < len(parents):
        raise ValueError(
            f"The 'dag' argument is not acyclic: a cycle runs through "
            f"{_find_cycle(parents, {n for n, d in indegree.items() if d > 0})}."
        )
    return parents


def _find_cycle(parents: Mapping[Hashable, frozenset], remaining: set) -> list:
    """Walk parents inside the cyclic remainder until a node repeats."""
    node = next(iter(remaining))
    path: list = []
    while node not in path:
        path.append(node)
        node = next(p for p in parents[node] if p in remaining)
    return [*path[path.index(node) :], node]


def parents_of(dag: DAG, node: Hashable) -> list:
    r""":math:`\mathrm{Pa}(node)` in the (checked acyclic) DAG, in a stable order."""
    parents = check_acyclic(dag)
    if node not in parents:
        raise ValueError(
            f"Node {node!r} is not in the DAG; its nodes are {sorted(map(str, parents))}."
        )
    return sorted(parents[node], key=str)


def markov_blanket(dag: DAG, target: Hashable) -> list:
    r"""Markov blanket :math:`\mathrm{MB}(Y)`: parents, children and co-parents of ``target``.

    .. math:: \mathrm{MB}(Y) = \mathrm{Pa}(Y) \cup \mathrm{Ch}(Y)
              \cup \bigcup_{C \in \mathrm{Ch}(Y)} \mathrm{Pa}(C) \setminus \{Y\}

    Under the Markov property (Assumption 4.1),
    :math:`Y \perp X_{\setminus MB} \mid X_{MB}` (Proposition 6.1). Returned sorted by name.
    """
    parents = check_acyclic(dag)
    if target not in parents:
        raise ValueError(
            f"The target {target!r} is not a node of the DAG; its nodes are "
            f"{sorted(map(str, parents))}."
        )
    children = [n for n, pas in parents.items() if target in pas]
    blanket = set(parents[target]) | set(children)
    for c in children:
        blanket |= parents[c]
    blanket.discard(target)
    return sorted(blanket, key=str)
