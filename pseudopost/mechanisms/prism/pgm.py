r"""Private-PGM synthesis backend on ``mbi`` 2.x (McKenna et al. 2019; PRISM section 5.5).

Post-processing only: from the released noisy marginals :math:`\tilde p_C` it fits the
graphical model

.. math:: \hat\mu = \arg\min_{\mu \in \mathcal M}
          \sum_C \frac{1}{2 n^2\sigma_C^2}\,\| \mu_C - n\tilde p_C \|_2^2

by mbi's ``MirrorDescent`` estimator over the marginal polytope (maximum entropy among the
minimisers), in counts (``n`` is public under replace-one), and samples records from it.

Speed (PRISM issue, Adult at eps = 1): on CPU the cost of a fit is XLA compiling the
mirror-descent step (LLVM code generation, roughly per small kernel), not arithmetic. Three
changes keep mbi's algorithm and its iterates and cut it: the model is parameterised on the
junction tree's maximal cliques and the loss is evaluated in measurement space with one gather
and one segment sum (:func:`stacked_loss`: identical loss, gradient in distribution space and
step size, so identical iterates, but a handful of kernels instead of several per measurement);
the uniform starting point is written down instead of compiled (:func:`_estimator`); and mbi's
own stopping rule (``tol``) ends the run once the loss has levelled off.

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

from pseudopost._extras import require
from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_positive_int
from pseudopost.mechanisms.prism.measure import MarginalMeasurement

__all__ = ["PGMModel", "fit_pgm", "load_mbi", "stacked_loss"]


def load_mbi() -> Any:
    """Import mbi with JAX in 64-bit mode (set before the import, as mbi asks)."""
    jax = require("jax", "PRISM's graphical-model synthesis")
    jax.config.update("jax_enable_x64", True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="JAX persistent compilation cache")
        return require("mbi", "PRISM's graphical-model synthesis")


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


@dataclass(frozen=True)
class _StackedL2:
    r"""mbi's weighted L2 loss evaluated in measurement space on junction-tree cliques.

    With :math:`m` the concatenated marginals of the model's cliques (the junction tree's
    maximal cliques :math:`D`) and every measurement :math:`(C_i, y_i, \sigma_i)` routed to the
    smallest :math:`D \supseteq C_i`,

    .. math:: L(\mu) = \tfrac12 \sum_r w_r \big((Mm)_r - y_r\big)^2,\qquad
              (Mm)_r = \sum_{k:\ \mathrm{dst}_k = r} m_{\mathrm{src}_k},

    where row :math:`r` runs over all measured cells, :math:`w_r = 1/\sigma_i^2` for the rows
    of measurement :math:`i`, and (src, dst) lists, for each measurement, every cell of its home
    clique and the measured cell it falls in (so :math:`Mm` stacks the marginalisations
    :math:`P_i\mu_D`). This is ``mbi.marginal_loss._l2_loss`` term by term; one gather and one
    segment sum replace a projection, subtraction and norm per measurement.
    """

    cliques: tuple[tuple[str, ...], ...]
    n_rows: int

    def __call__(self, marginals: Any, data: Any) -> Any:
        import jax
        import jax.numpy as jnp

        src, dst, y, w = data
        parts = []
        for c in self.cliques:
            f = marginals.project(c)
            order = [f.domain.attributes.index(a) for a in c]
            parts.append(jnp.transpose(f.values, order).reshape(-1))
        r = jax.ops.segment_sum(jnp.concatenate(parts)[src], dst, num_segments=self.n_rows) - y
        return 0.5 * jnp.sum(w * r * r)


def model_cliques(cliques: Sequence[Sequence[str]], domain: Any) -> tuple[tuple[str, ...], ...]:
    """The maximal cliques of mbi's junction tree on ``cliques`` (the model's cliques)."""
    mbi = load_mbi()
    jtree, _ = mbi.junction_tree.make_junction_tree(domain, [tuple(c) for c in cliques])
    return tuple(tuple(c) for c in mbi.junction_tree.maximal_cliques(jtree))


def stacked_loss(lms: Sequence[Any], domain: Any) -> Any:
    r"""A ``MarginalLossFn`` on the junction tree's cliques equal to mbi's L2 loss on ``lms``.

    Same value as ``from_linear_measurements(lms, domain)`` for consistent marginals, and the
    same Lipschitz constant (mbi's, from the maximal measured cliques), hence the same step
    size. Mirror descent on the junction-tree cliques takes the same steps in distribution
    space: the gradient with respect to :math:`\mu_D` is the lift of the gradient with respect
    to each measured :math:`\mu_{C}` (:math:`P^\top g`), and the potentials only ever move by
    such lifts, so :math:`\sum_D \theta_D` equals mbi's :math:`\sum_C \theta_C` at every
    iterate; the Armijo test's inner product :math:`\langle \nabla L, \mu-\mu'\rangle` is
    unchanged as well (:math:`\langle P^\top g, \mu_D-\mu'_D\rangle =
    \langle g, \mu_C-\mu'_C\rangle`). No measurements, or any with a non-identity query, fall
    back to mbi's own loss.
    """
    import jax.numpy as jnp

    mbi = load_mbi()
    base = mbi.marginal_loss.from_linear_measurements(list(lms), domain)
    if not lms or any(type(m.query).__name__ != "DatavectorQuery" for m in lms):
        return base
    nodes = model_cliques(base.cliques, domain)
    offset = np.cumsum([0] + [domain.size(c) for c in nodes])
    src, dst, ys, ws = [], [], [], []
    rows = 0
    for m in lms:
        k = min(
            (i for i, c in enumerate(nodes) if set(m.clique) <= set(c)),
            key=lambda i: domain.size(nodes[i]),
        )
        home = nodes[k]
        grid = np.indices(domain.project(home).shape).reshape(len(home), -1)
        cells = np.ravel_multi_index(
            tuple(grid[home.index(a)] for a in m.clique), domain.project(m.clique).shape
        )
        y = np.asarray(m.noisy_measurement, dtype=float).ravel()
        src.append(offset[k] + np.arange(grid.shape[1]))
        dst.append(rows + cells)
        ys.append(y)
        ws.append(np.full(y.size, 1.0 / max(float(m.stddev), 1e-12) ** 2))
        rows += y.size
    data = (
        jnp.asarray(np.concatenate(src)),
        jnp.asarray(np.concatenate(dst)),
        jnp.asarray(np.concatenate(ys)),
        jnp.asarray(np.concatenate(ws)),
    )
    return mbi.marginal_loss.MarginalLossFn(
        nodes, _StackedL2(nodes, int(rows)), data, base.lipschitz
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
        stacked_loss(lms, dom),
        known_total=float(n),
        iters=iters,
        tol=tol,
        callback_fn=lambda _: blocks.append(None),
    )
    done = min(int(iters), len(blocks) * mbi.estimation.CALLBACK_EVERY)
    return PGMModel(model=model, columns=tuple(cols), iters=done)
