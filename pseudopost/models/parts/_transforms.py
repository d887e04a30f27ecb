r"""Compiled transforms of a :class:`~pseudopost.models.parts.layout.Layout`: the constrained
values of an unconstrained vector, and log prior + log-Jacobian with the chain rule, in one
Numba call each.

The same math as :meth:`Param.backward <pseudopost.models.parts.layout.Param.backward>`,
:meth:`Param.log_prior_grad <pseudopost.models.parts.layout.Param.log_prior_grad>` and
:meth:`Param.chain <pseudopost.models.parts.layout.Param.chain>` (the reference, kept in
NumPy and tested against these), for the transforms ``none``, ``log``, ``ordered`` and
``ordered_mid`` and the priors normal, half-normal and gamma. A layout with another transform
or prior (a simplex, a Dirichlet prior) keeps the NumPy path.

Why: a part's gradient is called some 5,000 times per fit from nutpie's threads; in NumPy the
per-parameter loop of small array operations cost about two thirds of a grouped part's
gradient on a file of 800 records (0.2 of 0.3 ms) and held the GIL, so two parts fitted at
once ran one after the other. The kernels release the GIL (``nogil``) and are cached on disk
(``cache=True``), as the likelihood kernels of :mod:`pseudopost.models.parts._fused`.

A layout is encoded as arrays, one row per parameter: transform code (:data:`CODES`), start
and end in the unconstrained vector (equal to the constrained positions: none of these
transforms changes a size), the ``ordered_mid`` anchor, prior code, its normalising constant;
and per element the prior's first and second arguments (normal: mean and sd; half-normal:
scale; gamma: shape and rate).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["CODES", "PRIORS", "backward", "prior_jacobian"]

#: transform codes
CODES = {"none": 0, "log": 1, "ordered": 2, "ordered_mid": 3}
#: prior codes
PRIORS = {"normal": 0, "halfnormal": 1, "gamma": 2}


@njit(cache=True, nogil=True, error_model="numpy")
def backward(x, code, start, end, anchor):  # pragma: no cover - compiled
    """Constrained values (flat, layout order) of the unconstrained ``x``."""
    v = np.empty_like(x)
    for j in range(code.size):
        s, e, c = start[j], end[j], code[j]
        if s == e:  # an empty parameter (no predictors): nothing to write
            continue
        if c == 0:
            for i in range(s, e):
                v[i] = x[i]
        elif c == 1:
            for i in range(s, e):
                v[i] = math.exp(x[i])
        elif c == 2:
            acc = x[s]
            v[s] = acc
            for i in range(s + 1, e):
                acc += math.exp(x[i])
                v[i] = acc
        else:
            a = s + anchor[j]
            v[a] = x[a]
            acc = x[a]
            for i in range(a + 1, e):
                acc += math.exp(x[i])
                v[i] = acc
            acc = x[a]
            for i in range(a - 1, s - 1, -1):
                acc -= math.exp(x[i])
                v[i] = acc
    return v


@njit(cache=True, nogil=True, error_model="numpy")
def prior_jacobian(x, v, g, code, start, end, anchor, prior, const, p1, p2):  # pragma: no cover
    """(log prior + log-Jacobian, gradient on ``x``) given the log-likelihood's gradient ``g``
    on the constrained values ``v`` (flat, layout order)."""
    out = np.empty_like(x)
    total = 0.0
    for j in range(code.size):
        s, e, c, k = start[j], end[j], code[j], prior[j]
        if s == e:  # an empty parameter: no term (its constant is 0)
            continue
        total += const[j]
        # log prior and its gradient on v, added to g in out
        for i in range(s, e):
            if k == 0:
                d = (v[i] - p1[i]) / p2[i]
                total -= 0.5 * d * d
                out[i] = g[i] - d / p2[i]
            elif k == 1:
                total -= 0.5 * v[i] * v[i] / (p1[i] * p1[i])
                out[i] = g[i] - v[i] / (p1[i] * p1[i])
            else:
                total += (p1[i] - 1.0) * math.log(v[i]) - p2[i] * v[i]
                out[i] = g[i] + (p1[i] - 1.0) / v[i] - p2[i]
        # chain rule from v to x, and the log-Jacobian
        if c == 1:
            for i in range(s, e):
                total += x[i]
                out[i] = v[i] * out[i] + 1.0
        elif c == 2:
            tail = 0.0
            for i in range(e - 1, s, -1):
                tail += out[i]
                total += x[i]
                out[i] = math.exp(x[i]) * tail + 1.0
            out[s] += tail
        elif c == 3:
            a = s + anchor[j]
            whole = 0.0
            for i in range(s, e):
                whole += out[i]
            above = 0.0
            for i in range(e - 1, a, -1):
                above += out[i]
                total += x[i]
                out[i] = math.exp(x[i]) * above + 1.0
            below = 0.0
            for i in range(s, a):
                below += out[i]
                total += x[i]
                out[i] = -math.exp(x[i]) * below + 1.0
            out[a] = whole
    return total, out
