r"""A part's whitened log density and its gradient as one Numba C callback.

For the grouped GLM parts (:class:`~pseudopost.models.parts.categorical.CategoricalPart`,
:class:`~pseudopost.models.parts.bernoulli.BernoulliPart`,
:class:`~pseudopost.models.parts.cumulative.CumulativePart` and its
:class:`~pseudopost.models.parts.cumulative.BinnedPart`) on a layout with compiled transforms,
one compiled function computes, in the variables :math:`z` of a Laplace whitening
(:math:`x = x_0 + L z`, :mod:`pseudopost.fitting.laplace`),

.. math::
    \log p(z) = \ell(v(x)) + \log\pi(v(x)) + \log|J(x)|, \qquad
    \nabla_z \log p = L^\top \nabla_x \log p,

the same sum as :meth:`Part.logp_grad <pseudopost.models.parts.base.Part.logp_grad>` (the
likelihood kernels of :mod:`pseudopost.models.parts._fused`, the transforms of
:mod:`pseudopost.models.parts._transforms`), with the signature nutpie calls its compiled
models by, ``int64(uint64 dim, double* z, double* grad, double* logp, void* user_data)``.

Why: through ``nutpie.from_pyfunc`` each gradient is a Python call that holds the GIL for most
of its time: on the German credit file's savings part (798 keys, 76 parameters) 340 us a call
from nutpie's threads, of which the likelihood kernel is 88 us, and the two chains and two
parts fitted at once wait on one another. Called from nutpie's Rust threads, the callback
runs without the interpreter.

``user_data`` points to a table of (address, size) pairs, one per array in the order of
:data:`SLOTS`; :func:`callback_arrays` builds the arrays from the part's statistics and the
whitening, and the caller keeps them alive while the callback can run. The functions are
compiled once per process (``cache=True``: later processes load them from disk).
"""

from __future__ import annotations

from functools import cache

import numpy as np
from numba import carray, cfunc, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from pseudopost.models.parts._fused import (
    _bernoulli_kernel,
    _categorical_kernel,
    _cumulative_kernel,
    sparse_rows,
)
from pseudopost.models.parts._transforms import backward, prior_jacobian
from pseudopost.models.parts.base import Part
from pseudopost.models.parts.bernoulli import BernoulliPart
from pseudopost.models.parts.categorical import CategoricalPart
from pseudopost.models.parts.cumulative import BinnedPart, CumulativePart

__all__ = ["SLOTS", "callback_arrays", "expand_callback", "has_callback", "logp_callback", "table",
           "whitened_logp"]

#: the arrays the callback reads, in table order: the whitening (x0, L), the part's shape
#: (``meta``: family code, dimension, offsets and sizes), the layout's compiled transforms,
#: the design's non-zeros, the family's statistics (``a``, ``b``) and the log-spread design's
#: centre (a location-scale cumulative part's :attr:`~pseudopost.models.parts.cumulative.
#: CumulativePart.scale_centre`; one unused entry otherwise)
SLOTS = ("x0", "L", "meta", "code", "start", "end", "anchor", "prior", "const", "p1", "p2",
         "ptr", "col", "val", "a", "b", "centre")  # fmt: skip
#: family codes of ``meta[0]``
_CATEGORICAL, _BERNOULLI, _CUMULATIVE = 0, 1, 2
_FAMILIES = {CategoricalPart: _CATEGORICAL, BernoulliPart: _BERNOULLI,
             CumulativePart: _CUMULATIVE, BinnedPart: _CUMULATIVE}  # fmt: skip
_INTS = ("code", "start", "end", "anchor", "prior")
#: entries of the (address, size) table
_TABLE = 2 * len(SLOTS)


def has_callback(part: Part) -> bool:
    """Whether the part's density has the compiled callback: one of the four families exactly
    (a subclass may change the likelihood) on a layout whose transforms and priors compile."""
    return type(part) in _FAMILIES and part.layout.encoded is not None


def _offset(part: Part, name: str) -> tuple[int, int]:
    sl = part.layout.slices.get(name)
    return (0, 0) if sl is None else (sl.start, sl.stop - sl.start)


def callback_arrays(
    part: Part, arrays: dict[str, np.ndarray], x0: np.ndarray, L: np.ndarray
) -> dict[str, np.ndarray]:
    """The callback's arrays (:data:`SLOTS`, contiguous) for the part's statistics ``arrays``
    (:meth:`Part.log_density <pseudopost.models.parts.base.Part.log_density>`'s) and the
    whitening ``x0``, ``L``."""
    if not has_callback(part):
        raise ValueError(f"Part '{part.name}' ({type(part).__name__}) has no compiled callback.")
    family = _FAMILIES[type(part)]
    d = part.layout.size
    if np.shape(x0) != (d,) or np.shape(L) != (d, d):
        raise ValueError(f"Part '{part.name}': x0 and L must be ({d},) and ({d}, {d}).")
    rows = np.asarray(arrays["rows"], dtype=np.float64)
    p = part.p
    sparse = {k: arrays[k] for k in ("rows_ptr", "rows_col", "rows_val") if k in arrays}
    if len(sparse) < 3:
        sparse = sparse_rows(rows[:, :p])
    centre = np.zeros(1)  # read by the location-scale cumulative family only
    if family == _CATEGORICAL:
        counts = np.asarray(arrays["counts"], dtype=np.float64)
        a, b = counts, np.zeros(1)
        first, second, third = _offset(part, "intercept"), _offset(part, "beta"), (0, 0)
        shape = (counts.shape[0], counts.shape[1])
    elif family == _BERNOULLI:
        a, b = arrays["w"], arrays["wy"]
        first, second, third = _offset(part, "intercept"), _offset(part, "beta"), (0, 0)
        shape = (np.size(a), 1)
    else:
        a, b = rows[:, p], arrays["w"]
        first, second = _offset(part, "cutpoints"), _offset(part, "beta")
        third = _offset(part, "gamma")
        shape = (np.size(b), part.n_levels)
        if part.has_scale:
            centre = part.centre
    meta = np.array([family, d, *first, *second, *third, *shape, p], dtype=np.float64)
    encoded = dict(zip(SLOTS[3:11], part.layout.encoded, strict=True))
    out = {"x0": x0, "L": L, "meta": meta, **encoded, "ptr": sparse["rows_ptr"],
           "col": sparse["rows_col"], "val": sparse["rows_val"], "a": a, "b": b,
           "centre": centre}  # fmt: skip
    return {
        k: np.ascontiguousarray(out[k], dtype=np.int64 if k in _INTS else np.float64)
        for k in SLOTS
    }


def table(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """The (address, size) table of the callback's arrays (uint64, :data:`SLOTS` order): what
    ``user_data`` points to. The arrays must outlive every call."""
    out = np.zeros(2 * len(SLOTS), dtype=np.uint64)
    for i, k in enumerate(SLOTS):
        out[2 * i], out[2 * i + 1] = arrays[k].ctypes.data, arrays[k].size
    return out


@intrinsic
def _void_pointer(typingctx, address):
    """A void pointer from an integer address."""

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)

    return types.voidptr(address), codegen


@njit(inline="always")
def _slot(tab, i, dtype):  # pragma: no cover - compiled
    return carray(_void_pointer(tab[2 * i]), (int(tab[2 * i + 1]),), dtype)


@njit(cache=True, nogil=True, error_model="numpy")
def _whitened(z, tab):  # pragma: no cover - compiled
    """(log density, gradient on z) from the table's arrays."""
    f = np.float64
    x0, L, meta = _slot(tab, 0, f), _slot(tab, 1, f), _slot(tab, 2, f)
    code, start, end = _slot(tab, 3, np.int64), _slot(tab, 4, np.int64), _slot(tab, 5, np.int64)
    anchor, prior = _slot(tab, 6, np.int64), _slot(tab, 7, np.int64)
    const, p1, p2 = _slot(tab, 8, f), _slot(tab, 9, f), _slot(tab, 10, f)
    ptr, col, val = _slot(tab, 11, f), _slot(tab, 12, f), _slot(tab, 13, f)
    a, b, centre = _slot(tab, 14, f), _slot(tab, 15, f), _slot(tab, 16, f)
    d = z.shape[0]
    Lm = L.reshape((d, d))
    x = x0 + Lm @ z
    v = backward(x, code, start, end, anchor)
    g = np.zeros(d)
    family = int(meta[0])
    o1, n1, o2, n2, o3, n3 = (int(meta[2]), int(meta[3]), int(meta[4]), int(meta[5]),
                              int(meta[6]), int(meta[7]))  # fmt: skip
    u, k, p = int(meta[8]), int(meta[9]), int(meta[10])
    if family == 0:
        m = k - 1
        beta = v[o2 : o2 + n2].copy().reshape((p, m)) if n2 > 0 else np.zeros((p, m))
        ll, gi, gb = _categorical_kernel(ptr, col, val, a.reshape((u, k)),
                                         v[o1 : o1 + n1].copy(), beta)  # fmt: skip
        g[o1 : o1 + n1] = gi
        if n2 > 0:
            g[o2 : o2 + n2] = gb.ravel()
    elif family == 1:
        beta = v[o2 : o2 + n2].copy() if n2 > 0 else np.zeros(p)
        ll, gi, gb = _bernoulli_kernel(ptr, col, val, a, b, v[o1], beta)
        g[o1] = gi
        if n2 > 0:
            g[o2 : o2 + n2] = gb
    else:
        beta = v[o2 : o2 + n2].copy() if n2 > 0 else np.zeros(p)
        gamma = v[o3 : o3 + n3].copy()
        ll, gc, gb, gg = _cumulative_kernel(ptr, col, val, a, b, v[o1 : o1 + n1].copy(), beta,
                                            gamma, centre[:n3])  # fmt: skip
        g[o1 : o1 + n1] = gc
        if n2 > 0:
            g[o2 : o2 + n2] = gb
        if n3 > 0:
            g[o3 : o3 + n3] = gg
    lp, gx = prior_jacobian(x, v, g, code, start, end, anchor, prior, const, p1, p2)
    return ll + lp, Lm.T @ gx


@njit(cache=True, nogil=True, error_model="numpy")
def _expanded(z, tab):  # pragma: no cover - compiled
    """The constrained values (layout order) of z."""
    x0, L = _slot(tab, 0, np.float64), _slot(tab, 1, np.float64)
    code, start, end = _slot(tab, 3, np.int64), _slot(tab, 4, np.int64), _slot(tab, 5, np.int64)
    anchor = _slot(tab, 6, np.int64)
    d = z.shape[0]
    return backward(x0 + L.reshape((d, d)) @ z, code, start, end, anchor)


def whitened_logp(z: np.ndarray, tab: np.ndarray) -> tuple[float, np.ndarray]:
    """(log density, gradient on z) of the callback, called from Python (for checks)."""
    return _whitened(np.ascontiguousarray(z, dtype=np.float64), tab)


_LOGP_SIG = types.int64(types.uint64, types.CPointer(types.double),
                        types.CPointer(types.double), types.CPointer(types.double),
                        types.voidptr)  # fmt: skip
_EXPAND_SIG = types.int64(types.uint64, types.uint64, types.CPointer(types.double),
                          types.CPointer(types.double), types.voidptr)  # fmt: skip


@cache
def logp_callback():
    """The compiled C callback of the whitened log density (nutpie's logp signature): 0 on
    success, 3 for a non-finite gradient, 4 for a non-finite log density (as nutpie's own)."""

    def logp(dim, z_, out_, logp_, user_data):  # pragma: no cover - compiled
        z = carray(z_, (dim,))
        out = carray(out_, (dim,))
        lp = carray(logp_, (1,))
        tab = carray(user_data, (_TABLE,), np.uint64)
        value, grad = _whitened(z, tab)
        lp[0] = value
        out[:] = grad
        if not np.all(np.isfinite(grad)):
            return 3
        if not np.isfinite(value):
            return 4
        return 0

    return cfunc(_LOGP_SIG, cache=True, nopython=True)(logp)


@cache
def expand_callback():
    """The compiled C callback of the constrained values (nutpie's expand signature)."""

    def expand(dim, n_out, z_, out_, user_data):  # pragma: no cover - compiled
        if n_out != dim:
            return -1
        z = carray(z_, (dim,))
        out = carray(out_, (dim,))
        tab = carray(user_data, (_TABLE,), np.uint64)
        out[:] = _expanded(z, tab)
        return 0

    return cfunc(_EXPAND_SIG, cache=True, nopython=True)(expand)
