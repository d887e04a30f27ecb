r"""DP selection for PRISM: regime 3 feature selection, noisy (conditional) MI and the DP spanning tree.

Score. Mutual information in nats of the empirical joint of two discrete variables,

.. math:: I(X; Y) = \sum_{x,y} \hat p(x,y) \ln\frac{\hat p(x,y)}{\hat p(x)\hat p(y)}.

Sensitivity (replace-one: same n, one record changed). PrivBayes (Zhang et al., TODS 2017,
Lemma 4.1), stated for this neighbouring relation, bounds the change of :math:`I(X;\Pi)` by

.. math:: \Delta_I(n) = \frac1n\ln n + \frac{n-1}{n}\ln\frac{n}{n-1}
          \quad\text{if } X \text{ or } \Pi \text{ is binary,}

.. math:: \Delta_I(n) = \frac2n\ln\frac{n+1}{2} + \frac{n-1}{n}\ln\frac{n+1}{n-1}
          \quad\text{otherwise}

(the lemma is in bits; every term scales by :math:`\ln 2`, so the same form holds in nats). The
argument: write :math:`I = H(X) + H(\Pi) - H(X,\Pi)` in counts; replacing one record moves one
unit of count between two cells of each table, and the largest change of the combination is
attained when one value's count goes from 1 to 0 while its partner cell is the dataset's bulk;
bounding :math:`t\ln t` differences by their extreme case gives the expressions above. The test
suite checks the bound against brute-force enumeration of every dataset and every replacement
for small n (where it is attained in the binary case).

Conditional MI. :math:`I(X;X' \mid Y) = I(X; (X', Y)) - I(X; Y)` (chain rule), so its change is
at most :math:`2\Delta_I(n)` (general case, as :math:`(X', Y)` is not binary).

Exponential mechanism (McSherry & Talwar 2007; PRISM section 3.2). Choosing :math:`c` with
probability :math:`\propto \exp(\varepsilon u(D, c)/(2\Delta_u))` is :math:`\varepsilon`-DP when
every :math:`|u(D,c) - u(D',c)| \le \Delta_u` for neighbours; it is also
:math:`\varepsilon^2/8`-zCDP (bounded range, Cesar & Rogers 2021, Lemma 3.2). Greedy top-k runs k
rounds at :math:`\varepsilon_{sel}/k` each (section 5.2, 3a): :math:`\varepsilon_{sel}`-DP by
basic composition.

Why not the paper's clipped chi-square. The paper uses :math:`u = \min(\chi^2/n, B)` and calls its
sensitivity :math:`O(1/n)`; it is not: for two binary columns :math:`\chi^2/n = \phi^2` is the
squared correlation, which one replaced record can move from 0 to 1 (one record (1,1) among
n - 1 records (0,0)). Its only safe bound is the clip B itself, which makes the mechanism
near-uniform; the MI bound above is :math:`O(\ln n / n)`.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np

from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_positive, check_positive_int

__all__ = [
    "conditional_mutual_information",
    "exponential_mechanism",
    "exponential_spanning_tree",
    "greedy_top_k",
    "mi_sensitivity",
    "mutual_information",
    "selection_probabilities",
]


def _joint(columns: Sequence[np.ndarray], sizes: Sequence[int]) -> np.ndarray:
    """Empirical joint probability table of integer-coded columns."""
    flat = np.ravel_multi_index(tuple(columns), tuple(sizes))
    counts = np.bincount(flat, minlength=int(np.prod(sizes)))
    return counts.reshape(tuple(sizes)) / len(columns[0])


def _mi_table(p: np.ndarray) -> float:
    """I(A; B) in nats of a 2-d probability table."""
    pa = p.sum(axis=1, keepdims=True)
    pb = p.sum(axis=0, keepdims=True)
    m = p > 0
    return float(np.sum(p[m] * np.log(p[m] / (pa @ pb)[m])))


def mutual_information(x: np.ndarray, y: np.ndarray, kx: int, ky: int) -> float:
    """Empirical mutual information (nats) of integer codes ``x`` in [0, kx) and ``y`` in [0, ky)."""
    return _mi_table(_joint([x, y], [kx, ky]))


def conditional_mutual_information(
    x: np.ndarray, x2: np.ndarray, y: np.ndarray, kx: int, kx2: int, ky: int
) -> float:
    r"""Empirical :math:`I(X; X' \mid Y) = I(X; (X', Y)) - I(X; Y)` in nats."""
    p = _joint([x, x2, y], [kx, kx2, ky])
    return max(_mi_table(p.reshape(kx, kx2 * ky)) - _mi_table(p.sum(axis=1)), 0.0)


def mi_sensitivity(n: int, *, binary: bool) -> float:
    r"""PrivBayes Lemma 4.1 bound (nats) on the replace-one change of :math:`I(X; \Pi)`."""
    n = check_positive_int(n, "n", minimum=2)
    if binary:
        return float(np.log(n) / n + (n - 1) / n * np.log(n / (n - 1)))
    return float(2 / n * np.log((n + 1) / 2) + (n - 1) / n * np.log((n + 1) / (n - 1)))


def selection_probabilities(
    scores: Sequence[float] | np.ndarray, epsilon: float, sensitivity: float
) -> np.ndarray:
    r"""Exponential-mechanism probabilities :math:`\propto \exp(\varepsilon u / (2\Delta_u))`."""
    u = np.asarray(scores, dtype=float)
    if u.ndim != 1 or u.size == 0 or not np.all(np.isfinite(u)):
        raise ValueError(f"The 'scores' must be a non-empty 1-d array of finite values. Got {u!r}.")
    logits = (
        check_positive(epsilon, "epsilon") * u / (2 * check_positive(sensitivity, "sensitivity"))
    )
    w = np.exp(logits - logits.max())
    return w / w.sum()


def exponential_mechanism(
    scores: Sequence[float] | np.ndarray, epsilon: float, sensitivity: float, seed: SeedLike = None
) -> int:
    """Index drawn by the exponential mechanism (epsilon-DP given the score's sensitivity)."""
    return _draw(scores, epsilon, sensitivity, as_generator(seed))


def _draw(scores, epsilon: float, sensitivity: float, rng: np.random.Generator) -> int:
    """One exponential-mechanism draw from ``rng`` itself (advancing it)."""
    p = selection_probabilities(scores, epsilon, sensitivity)
    return int(rng.choice(p.size, p=p))


def greedy_top_k(
    scores: Sequence[float] | np.ndarray,
    k: int,
    epsilon: float,
    sensitivity: float,
    seed: SeedLike = None,
) -> list[int]:
    r"""Greedy top-k by k exponential-mechanism rounds at :math:`\varepsilon/k` each.

    Section 5.2 (3a). Each round samples one index from the candidates not yet chosen with
    probability :math:`\propto \exp(\varepsilon u_j / (2k\Delta_u))`; the scores are fixed, so
    the k rounds compose to :math:`\varepsilon`-DP (replace-one, given ``sensitivity``).
    """
    u = np.asarray(scores, dtype=float)
    k = check_positive_int(k, "k")
    if k > u.size:
        raise ValueError(
            f"The 'k' parameter must be <= the number of candidates {u.size}. Got {k}."
        )
    rng = as_generator(seed)
    remaining = list(range(u.size))
    chosen: list[int] = []
    for _ in range(k):
        chosen.append(remaining.pop(_draw(u[remaining], epsilon / k, sensitivity, rng)))
    return chosen


def exponential_spanning_tree(
    nodes: Sequence[Hashable],
    scores: Mapping[tuple[Hashable, Hashable], float],
    epsilon_round: float,
    sensitivity: float,
    seed: SeedLike = None,
) -> list[tuple[Hashable, Hashable]]:
    r"""Noisy maximum spanning tree: Kruskal with an exponential-mechanism pick per round.

    The MST-style background selection (McKenna et al. 2021, section 4.3): each of the
    :math:`|nodes| - 1` rounds chooses, among the edges joining two different components, one edge
    with probability :math:`\propto \exp(\varepsilon_{round} u_e / (2\Delta_u))`. Rounds compose:
    :math:`(|nodes|-1)\,\varepsilon_{round}`-DP, or :math:`(|nodes|-1)\varepsilon_{round}^2/8`-zCDP.
    """
    rng = as_generator(seed)
    comp = {v: i for i, v in enumerate(nodes)}
    edges = sorted(scores, key=lambda e: (str(e[0]), str(e[1])))
    tree: list[tuple[Hashable, Hashable]] = []
    for _ in range(len(nodes) - 1):
        cand = [e for e in edges if comp[e[0]] != comp[e[1]]]
        if not cand:
            break
        pick = cand[_draw([scores[e] for e in cand], epsilon_round, sensitivity, rng)]
        tree.append(pick)
        old, new = comp[pick[1]], comp[pick[0]]
        comp = {v: (new if c == old else c) for v, c in comp.items()}
    return tree
