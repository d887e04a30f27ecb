r"""Private-PGM synthesis backend on ``mbi`` 2.x (McKenna et al. 2019; PRISM section 5.5).

Post-processing only: from the released noisy marginals :math:`\tilde p_C` it fits the
graphical model

.. math:: \hat\mu = \arg\min_{\mu \in \mathcal M}
          \sum_C \frac{1}{2 n^2\sigma_C^2}\,\| \mu_C - n\tilde p_C \|_2^2

by mbi's ``MirrorDescent`` estimator over the marginal polytope (maximum entropy among the
minimisers), in counts (``n`` is public under replace-one), and samples records from it.

Speed (PRISM issue, Adult at eps = 1): on CPU the cost is XLA compilation and per-operation
overhead of the compiled mirror-descent step, not arithmetic. Three changes keep mbi's algorithm
and cut both: the measurements of each maximal clique are folded into one quadratic form
(:class:`_FoldedL2`, identical loss, gradient and iterates); the uniform starting point is
written down instead of compiled (:func:`_estimator`); and mbi's own stopping rule (``tol``)
ends the run once the loss has levelled off.

JAX runs in 64-bit here (float32 stalls on large data, stack notes); it is switched on before
mbi is imported. mbi's own ``synthetic_data`` draws from NumPy's global RNG (and its JAX
message passing compiles per structure), so sampling is re-implemented below in NumPy on mbi's
junction tree with the caller's Generator: same seed, same records.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ..._rng import SeedLike, as_generator
from ..._validation import check_positive_int
from .measure import MarginalMeasurement

__all__ = ["PGMModel", "fit_pgm", "load_mbi"]


def load_mbi() -> Any:
    """Import mbi with JAX in 64-bit mode (set before the import, as mbi asks)."""
    import jax

    jax.config.update("jax_enable_x64", True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="JAX persistent compilation cache")
        import mbi
    return mbi


@dataclass(frozen=True)
class PGMModel:
    """A fitted mbi Markov random field and the column order it samples in."""

    model: Any
    columns: tuple[str, ...]
    iters: int  # mirror-descent iterations run (mbi steps in blocks of 50)

    def marginal(self, clique: Sequence[str]) -> np.ndarray:
        """The model's table over ``clique`` (axes in the clique's order), normalised.

        For a measured clique this is the last mirror-descent iterate's marginal (see
        :func:`_estimator`); otherwise mbi's variable elimination on the potentials.
        """
        f = self.model.project(tuple(clique))
        v = np.asarray(f.datavector(flatten=False), dtype=float)
        return v / v.sum()

    def sample(self, n: int, seed: SeedLike = None) -> dict[str, np.ndarray]:
        """``n`` i.i.d. records by forward sampling on the junction tree (NumPy, module doc)."""
        n = check_positive_int(n, "n")
        rng = as_generator(seed)
        mbi = load_mbi()
        dom = self.model.domain
        jtree, _ = mbi.junction_tree.make_junction_tree(dom, [tuple(c) for c in self.model.cliques])
        sizes = dict(zip(dom.attributes, dom.shape, strict=True))
        pots = {
            tuple(cl): np.asarray(self.model.potentials[cl].datavector(flatten=False), dtype=float)
            for cl in self.model.potentials.cliques
        }
        return _forward_sample(jtree, pots, sizes, self.columns, n, rng)


def _align(attrs: tuple, table: np.ndarray, target: tuple) -> np.ndarray:
    """Transpose/reshape ``table`` over ``attrs`` so it broadcasts over ``target`` axes."""
    order = [a for a in target if a in attrs]
    t = np.transpose(table, [attrs.index(a) for a in order])
    return t.reshape([t.shape[order.index(a)] if a in attrs else 1 for a in target])


def _inverse_cdf(prob: np.ndarray, row: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Column drawn from row ``row[i]`` of the row-stochastic ``prob`` with uniform ``u[i]``.

    Offsetting row g's CDF by g makes the flattened CDF monotone, so one ``searchsorted`` serves
    every row without an (n x cells) array.
    """
    k = prob.shape[1]
    cdf = np.cumsum(prob, axis=1)
    cdf[:, -1] = 1.0
    glob = (cdf + np.arange(prob.shape[0])[:, None]).ravel()
    idx = np.searchsorted(glob, row + u, side="right") - row * k
    return np.clip(idx, 0, k - 1)


def _forward_sample(jtree, pots, sizes, columns, n, rng) -> dict[str, np.ndarray]:
    r"""Exact sampling from :math:`\prod_C \exp\psi_C` on a junction tree.

    Upward pass: each clique's log-belief is its assigned log-potentials plus the messages of its
    children, and sends :math:`\log\sum_{x_{C\setminus S}}` of that to its parent. Downward,
    the root's cells are drawn from its normalised belief and every child's new variables from
    its belief conditioned on the separator values already drawn.
    """
    nodes = [tuple(c) for c in jtree.nodes]
    if not nodes:
        return {c: rng.integers(0, sizes[c], size=n) for c in columns}
    parent: dict[tuple, tuple | None] = {}
    order: list[tuple] = []
    for root in nodes:  # a junction forest: one breadth-first tree per component
        if root in parent:
            continue
        parent[root] = None
        i = len(order)
        order.append(root)
        while i < len(order):
            for nb in jtree.neighbors(order[i]):
                if nb not in parent:
                    parent[nb] = order[i]
                    order.append(nb)
            i += 1
    belief = {c: np.zeros([sizes[a] for a in c]) for c in nodes}
    for cl, table in pots.items():
        home = next(c for c in nodes if set(cl) <= set(c))
        belief[home] = belief[home] + _align(cl, table, home)
    for c in order[::-1]:
        p = parent[c]
        if p is None:
            continue
        axes = tuple(i for i, a in enumerate(c) if a not in p)
        msg = logsumexp(belief[c], axis=axes)
        sep = tuple(a for a in c if a in p)
        belief[p] = belief[p] + _align(sep, msg, p)
    out: dict[str, np.ndarray] = {}
    for c in order:
        given = tuple(a for a in c if a in out)
        new = tuple(a for a in c if a not in out)
        if not new:
            continue
        t = np.transpose(belief[c], [c.index(a) for a in (*given, *new)])
        g_cells = int(np.prod([sizes[a] for a in given])) if given else 1
        t = t.reshape(g_cells, -1)
        prob = np.exp(t - t.max(axis=1, keepdims=True))
        prob /= prob.sum(axis=1, keepdims=True)
        row = (
            np.ravel_multi_index(tuple(out[a] for a in given), [sizes[a] for a in given])
            if given
            else np.zeros(n, dtype=np.int64)
        )
        flat = _inverse_cdf(prob, row, rng.random(n))
        for a, v in zip(new, np.unravel_index(flat, [sizes[a] for a in new]), strict=True):
            out[a] = v.astype(np.int64)
    for c in columns:
        if c not in out:
            out[c] = rng.integers(0, sizes[c], size=n)
    return {c: out[c] for c in columns}


#: largest maximal clique whose measurements are folded into one dense quadratic form
FOLD_MAX_CELLS = 4096


@dataclass(frozen=True)
class _FoldedL2:
    r"""mbi's weighted L2 loss with the measurements of each maximal clique folded together.

    For a maximal clique :math:`D` and the measurements :math:`(C_i \subseteq D, y_i,\sigma_i)`
    routed to it (mbi's own routing), with :math:`P_i` the marginalisation :math:`D \to C_i`,

    .. math:: \sum_i \tfrac12\|(P_i\mu_D - y_i)/\sigma_i\|^2
              = \tfrac12\mu_D^\top A_D\mu_D - b_D^\top\mu_D + c_D,\quad
              A_D = \sum_i \frac{P_i^\top P_i}{\sigma_i^2},\;
              b_D = \sum_i \frac{P_i^\top y_i}{\sigma_i^2},\;
              c_D = \sum_i \frac{\|y_i\|^2}{2\sigma_i^2}.

    The same function, gradient and Lipschitz constant as ``from_linear_measurements``, hence
    the same mirror-descent iterates; but one matrix-vector product per clique instead of a
    projection, subtraction and norm per measurement (and their gradients) in the compiled step,
    whose cost on CPU is set by the number of small operations, not by their size. Cliques above
    ``FOLD_MAX_CELLS`` cells keep mbi's per-measurement terms (``A_D`` is dense).
    """

    folded: tuple[tuple[str, ...], ...]

    def __call__(self, marginals: Any, data: Any) -> Any:
        mbi = load_mbi()
        blocks, plain = data
        loss = mbi.marginal_loss._l2_loss(marginals, plain)
        for clique, (a_mat, b_vec, const) in zip(self.folded, blocks, strict=True):
            mu = marginals.project(clique).datavector()
            loss = loss + 0.5 * mu @ (a_mat @ mu) - b_vec @ mu + const
        return loss


def folded_loss(lms: Sequence[Any], domain: Any) -> Any:
    """A ``MarginalLossFn`` equal to mbi's L2 loss on ``lms`` (same cliques, routing, Lipschitz).

    Measurements with a non-identity query, or routed to a clique above ``FOLD_MAX_CELLS``,
    keep mbi's own per-measurement terms.
    """
    mbi = load_mbi()
    base = mbi.marginal_loss.from_linear_measurements(list(lms), domain)
    cliques = list(base.cliques)
    routing = mbi.clique_utils.clique_mapping(cliques, [m.clique for m in lms], domain)
    groups: dict[tuple, list] = {}
    plain = []
    for m in lms:
        home = routing[m.clique]
        if domain.size(home) <= FOLD_MAX_CELLS and type(m.query).__name__ == "DatavectorQuery":
            groups.setdefault(home, []).append(m)
        else:
            plain.append(m)
    blocks = []
    for home, ms in groups.items():
        shape = domain.project(home).shape
        grid = np.indices(shape).reshape(len(home), -1)
        a_mat = np.zeros((grid.shape[1], grid.shape[1]))
        b_vec = np.zeros(grid.shape[1])
        const = 0.0
        for m in ms:
            cells = np.ravel_multi_index(
                tuple(grid[home.index(a)] for a in m.clique), domain.project(m.clique).shape
            )
            w = 1.0 / max(float(m.stddev), 1e-12) ** 2
            y = np.asarray(m.noisy_measurement, dtype=float)
            a_mat += w * (cells[:, None] == cells[None, :])
            b_vec += w * y[cells]
            const += 0.5 * w * float(y @ y)
        blocks.append((a_mat, b_vec, np.float64(const)))
    return mbi.marginal_loss.MarginalLossFn(
        tuple(cliques),
        _FoldedL2(tuple(groups)),
        (tuple(blocks), tuple(plain)),
        base.lipschitz,
    )


@functools.cache
def _estimator() -> type:
    """mbi's ``MirrorDescent`` with a closed-form initialisation and a cheap finalisation.

    mbi's ``_init`` runs the marginal oracle on zero potentials, a separately compiled program
    as large as one step; for zero potentials the model is uniform, so every clique marginal is
    ``known_total / |cells|`` and needs no compilation. The initial loss is only stored, never
    read (``_step`` recomputes it; the stopping rule starts from infinity), so it is left at
    infinity. ``_finalize`` keeps the last iterate's marginals rather than recomputing them
    (sampling uses the potentials only). The optimisation itself is mbi's, unchanged.
    """
    mbi = load_mbi()
    import jax.numpy as jnp

    base = mbi.estimation.MirrorDescent

    @dataclasses.dataclass(frozen=True)
    class UniformInitMirrorDescent(base):
        def _init(self, domain, loss_fn, known_total, *, warm_start=None, constraints=()):
            if warm_start is not None or constraints or self.stepsize is not None:
                return base._init(
                    self,
                    domain,
                    loss_fn,
                    known_total,
                    warm_start=warm_start,
                    constraints=constraints,
                )
            cliques = loss_fn.cliques

            def table(cl, value):
                dom = domain.project(cl)
                return mbi.Factor(dom, jnp.asarray(np.full(dom.shape, value, dtype=float)))

            potentials = mbi.CliqueVector(domain, cliques, {c: table(c, 0.0) for c in cliques})
            mu = mbi.CliqueVector(
                domain,
                cliques,
                {c: table(c, float(known_total) / domain.size(c)) for c in cliques},
            )
            alpha = jnp.asarray(np.float64(2.0 / (float(loss_fn.lipschitz) * float(known_total))))
            return mbi.estimation.MirrorDescentState(
                mu, potentials, alpha, jnp.asarray(np.float64(np.inf))
            )

        def _finalize(self, state, known_total, constraints=()):
            return mbi.MarkovRandomField(
                potentials=state.potentials,
                marginals=state.mu,
                total=known_total,
                constraints=constraints,
            )

    return UniformInitMirrorDescent


def fit_pgm(
    measurements: Sequence[MarginalMeasurement],
    sizes: Mapping[str, int],
    n: int,
    *,
    iters: int = 1000,
    tol: float | None = None,
) -> PGMModel:
    """Fit mbi's ``MirrorDescent`` to the noisy marginals (counts scale, known total ``n``).

    ``tol``: stop once the loss falls by at most ``tol`` times its value over each of two
    consecutive blocks of 50 iterations (mbi's rule); ``None`` runs all ``iters``.
    """
    mbi = load_mbi()
    cols = list(sizes)
    dom = mbi.Domain(cols, [int(sizes[c]) for c in cols])
    lms = [
        mbi.LinearMeasurement(n * np.asarray(m.noisy), m.clique, stddev=n * m.sigma)
        for m in measurements
    ]
    blocks: list[None] = []
    model = _estimator()().estimate(
        dom,
        folded_loss(lms, dom),
        known_total=float(n),
        iters=iters,
        tol=tol,
        callback_fn=lambda _: blocks.append(None),
    )
    done = min(int(iters), len(blocks) * mbi.estimation.CALLBACK_EVERY)
    return PGMModel(model=model, columns=tuple(cols), iters=done)
