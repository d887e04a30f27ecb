r"""The fused per-column accountant: a whole file's record log-likelihood summed over its parts.

A record's log-likelihood under the paired draw m (guide: *Whole files*) is the sum
over the file's column parts q of the part's term, zero where the part is not active:

.. math::
    f_m(x_i) = \sum_q a_{iq}\, f_q(x_i; \theta_{q,m}).

The accountant (Savitsky, Williams & Hu 2022, Thm 3; range-restricted paper eq. 7 with the
record as the unit) needs, without ever holding the n x M matrix,

.. math::
    \text{per\_record}_i = \max_m |f_m(x_i)|, \qquad
    \text{per\_draw}_m = \max_i |c_i f_m(x_i)|, \qquad
    \text{sum}_m = \sum_i c_i f_m(x_i)

(:class:`~pseudopost.privacy.lipschitz.AbsReduction`; the sum for calibration). A NaN log
density counts as unbounded (:math:`|f| = \infty`) and a NaN in ``per_draw`` propagates, as in
:mod:`pseudopost.privacy.fused`. The privacy meaning is unchanged: add/remove one record,
local epsilon :math:`2\max_i \alpha_i \max_m |f_m(x_i)|`, every part of the record under its one
weight; or, where the parts' weights are :math:`\alpha_i r_{iq}`
(:meth:`PartAccountant.with_factors`, :func:`~pseudopost.risk.weights.part_rake`), of
:math:`\tilde f_m(x_i) = \sum_q r_{iq} a_{iq} f_q(x_i; \theta_{q,m})`: the bound
:math:`\Delta_i = \alpha_i \max_m |\tilde f_m(x_i)|` is then the largest absolute term of
record i in the log pseudo likelihood :math:`\sum_i \sum_q \alpha_i r_{iq} f_q`, which is what
Theorem 3's proof bounds (the record's term, whatever its internal form).

How. Each part's active records are grouped once (:meth:`Part.encode
<pseudopost.models.parts.base.Part.encode>`): a *lookup* part (discrete outcome) by (design
row, outcome) key, a *gauss* part (normal, log-normal) by design row. For a block of draws
the parts fill per-key tables in NumPy (:meth:`Part.table
<pseudopost.models.parts.base.Part.table>`: log-likelihood per key and draw, or the linear
predictor per row and draw), stored key-major so that one key's draws are contiguous; then one
loop over records sums, for every draw of the block, the record's table entries
(:math:`k_m + J_i - \tfrac12((y_i - \eta)/\sigma_m)^2` for gauss parts) and folds the sum into
the reductions. Above :data:`~pseudopost.privacy.fused.DENSE_MAX` record-draws the loop is a
Numba kernel over fixed record chunks (``prange``; the chunking depends on n only, so sums are
reproducible); below it the same sums run in NumPy on (records x draws) blocks (nothing to
compile). Memory: the tables of one draw block, at most ``max_bytes`` (and the per-record and
per-draw results).

Blocks combine exactly: a part's table entry for a key does not depend on the other keys or
draws in the block (linear predictors are accumulated without BLAS), so accountants over record
blocks give the same per-record values; concatenate ``per_record`` and take the elementwise max
of ``per_draw`` (sums add, up to rounding). Draw blocks never change any result.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit, prange
from threadpoolctl import threadpool_limits

from pseudopost.models.parts import SEP, GroupedData, Part, PartData, row_keys
from pseudopost.models.parts.grouped import encode_records
from pseudopost.privacy.decomposition import Decomposition, PartsCensored, Unrestricted
from pseudopost.privacy.fused import DENSE_MAX
from pseudopost.privacy.kernels.glm import chunks
from pseudopost.privacy.lipschitz import DEFAULT_MAX_BYTES, AbsReduction

__all__ = [
    "RECORD_STEP",
    "TABLE_BYTES",
    "CensoredPartAccountant",
    "PartAccountant",
    "reduce_kernel",
]

RECORD_STEP = 1024  # records per NumPy block (at most RECORD_STEP x 512 draws of values)
TABLE_BYTES = 2**23  # target size of one draw block's tables on the Numba path (cache-sized)
_MAX_DRAW_BLOCK = 512
_LOCK = threading.Lock()


@njit(parallel=True, cache=True, fastmath=False)
def reduce_kernel(LT, lidx, lfac, ET, gidx, gy, gaux, gfac, ginv, gconst, coef, n_chunks,
                  want_sum):
    """(per_record, per_draw[n_chunks, B]) for one block of B draws.

    ``LT`` (keys + 1, B): lookup tables of all lookup parts, key-major, last row zeros (the
    row of inactive records); ``lidx`` (n, L): each record's row in ``LT`` per lookup part,
    ``lfac`` (n, L) the factor of its term (:class:`PartAccountant`'s ``factors``; ones for
    the plain sum), ``gfac`` (n, G) the same for the gauss parts.
    ``ET`` (rows, B): linear predictors of all gauss parts; ``gidx`` (n, G) each record's row
    in ``ET`` per gauss part (-1: not active); ``gy``, ``gaux`` (n, G) its outcome and constant;
    ``ginv``, ``gconst`` (G, B) per-draw 1/sigma and -log sigma - log(2 pi)/2. Without
    ``want_sum``: per_record[i] = max_m |f|, per_draw[t, m] = max over chunk t of |c_i f| (an
    integer max on the IEEE bit patterns of non-negative doubles: vectorised, NaN above inf).
    With ``want_sum``: per_draw[t, m] = sum over chunk t of c_i f.
    """
    n = lidx.shape[0]
    n_look = lidx.shape[1]
    n_gauss = gidx.shape[1]
    b = ET.shape[1] if n_look == 0 else LT.shape[1]
    per_record = np.zeros(n)
    rec_bits = per_record.view(np.int64)
    per_draw = np.zeros((n_chunks, b))
    bits = per_draw.view(np.int64)
    size = (n + n_chunks - 1) // n_chunks
    for t in prange(n_chunks):
        start = t * size
        stop = min(n, start + size)
        acc = np.empty(b)
        va = np.empty(b)
        vc = np.empty(b)
        ia = va.view(np.int64)
        ic = vc.view(np.int64)
        for i in range(start, stop):
            if n_look > 0:
                r = lidx[i, 0]
                f = lfac[i, 0]
                if f == 1.0:
                    for m in range(b):
                        acc[m] = LT[r, m]
                else:
                    for m in range(b):
                        acc[m] = f * LT[r, m]
                for j in range(1, n_look):
                    r = lidx[i, j]
                    f = lfac[i, j]
                    if f == 1.0:
                        for m in range(b):
                            acc[m] += LT[r, m]
                    else:
                        for m in range(b):
                            acc[m] += f * LT[r, m]
            else:
                for m in range(b):
                    acc[m] = 0.0
            for c in range(n_gauss):
                k = gidx[i, c]
                if k >= 0:
                    yi = gy[i, c]
                    ai = gaux[i, c]
                    f = gfac[i, c]
                    for m in range(b):
                        z = (yi - ET[k, m]) * ginv[c, m]
                        acc[m] += f * (gconst[c, m] + ai - 0.5 * z * z)
            ci = coef[i]
            if want_sum:
                for m in range(b):
                    per_draw[t, m] += ci * acc[m]
                continue
            for m in range(b):
                a = abs(acc[m])
                a = np.inf if a != a else a  # an undefined log density is unbounded risk
                va[m] = a
                vc[m] = abs(ci * a)  # 0 * inf is NaN: it propagates, as numpy's max
            mx = rec_bits[i]
            for m in range(b):
                v = ia[m]
                mx = v if v > mx else mx
            rec_bits[i] = mx
            for m in range(b):
                v = ic[m]
                w = bits[t, m]
                bits[t, m] = v if v > w else w
    return per_record, per_draw


#: a part's records encoded for evaluation (grouped data mapped back to the records)
_encode = encode_records


class PartAccountant:
    """The fused per-record log-likelihood of a whole file's parts (module docstring).

    Satisfies :class:`~pseudopost.privacy.lipschitz.PerRecordFunction` with ``fused = True``,
    like :class:`~pseudopost.privacy.fused.FusedFunction`: :func:`~pseudopost.privacy.lipschitz.
    reduce_abs` and ``reduce_sum`` call its own reductions.

    Parameters
    ----------
    parts
        The file's parts (unique names).
    data
        One :class:`~pseudopost.models.parts.PartData` per part (same records, same order), or
        its :class:`~pseudopost.models.parts.GroupedData` (records mapped to their groups: the
        tables are computed per group, the sums per record, with the same values).
    max_bytes
        Memory for one draw block's tables (and, on the NumPy path, its (records x draws)
        block).
    dense
        NumPy (True) or Numba (False); None (default): NumPy up to
        :data:`~pseudopost.privacy.fused.DENSE_MAX` record-draws of the call. A chunked caller
        sets it from the whole problem.

    ``draws`` map ``"{part.name}::{param}"`` to arrays with a leading draw axis; draw m of
    every part forms the paired joint draw m.
    """

    fused = True
    record_chunking = True

    def __init__(
        self,
        parts: Sequence[Part],
        data: Sequence[PartData],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        dense: bool | None = None,
    ) -> None:
        parts, data = list(parts), list(data)
        if not parts:
            raise ValueError("'parts' is empty: the accountant needs at least one part.")
        bad = [type(p).__name__ for p in parts if not isinstance(p, Part)]
        if bad:
            raise TypeError(f"'parts' must hold Part objects; got {bad}.")
        bad = [type(d).__name__ for d in data if not isinstance(d, (PartData, GroupedData))]
        if bad:
            raise TypeError(f"'data' must hold PartData or GroupedData objects; got {bad}.")
        names = [p.name for p in parts]
        if len(set(names)) != len(names):
            raise ValueError(f"Part names must be unique; got {names}.")
        if len(data) != len(parts):
            raise ValueError(
                f"'data' must hold one PartData per part ({len(parts)}); got {len(data)}."
            )
        ns = {p.name: d.n for p, d in zip(parts, data, strict=True)}
        if len(set(ns.values())) != 1:
            raise ValueError(f"Every part's data must have the same records; got n = {ns}.")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 8:
            raise ValueError(f"'max_bytes' must be an integer >= 8. Got {max_bytes!r}.")
        self.parts = parts
        self.max_bytes = max_bytes
        self.dense = dense
        self.n = next(iter(ns.values()))
        self.observed = names
        self.free_names = [f"{p.name}{SEP}{q}" for p in parts for q in p.layout.names]
        self.extra_names: list[str] = []
        self.encoded = [_encode(p, d) for p, d in zip(parts, data, strict=True)]
        self._index()

    def with_decomposition(self, decomposition: Decomposition) -> PartAccountant:
        """The sensitive function g of ``decomposition``: the record log-likelihood itself for
        the plain weighted pseudo posterior (:class:`~pseudopost.privacy.decomposition.
        Unrestricted`). Range restrictions and censoring are not defined for a whole file (a
        record has several outcomes; censoring clips the record's sum, which breaks the
        factorisation over parts): a ``ValueError`` says so."""
        if isinstance(decomposition, Unrestricted):
            return self
        if isinstance(decomposition, PartsCensored):
            return CensoredPartAccountant.of(self, decomposition.part_bounds)
        raise ValueError(
            f"The per-column accountant accounts the plain weighted pseudo posterior and the "
            f"per-part censoring only; the '{decomposition.name}' decomposition (sensitive ranges, "
            f"or censoring of the record's sum) needs a single-outcome model."
        )

    def _index(self) -> None:
        """Per-record rows into the concatenated tables (built once)."""
        look = [j for j, p in enumerate(self.parts) if p.kind == "lookup"]
        gauss = [j for j, p in enumerate(self.parts) if p.kind == "gauss"]
        self._look, self._gauss = look, gauss
        offsets, total = [], 0
        for j in look:
            offsets.append(total)
            total += self.encoded[j].n_keys
        self._look_offsets, self._n_keys = offsets, total
        lidx = np.empty((self.n, len(look)), dtype=np.int64)
        for c, (j, off) in enumerate(zip(look, offsets, strict=True)):
            idx = self.encoded[j].index
            lidx[:, c] = np.where(idx >= 0, idx + off, total)  # row `total`: zeros
        g_off, rows = [], 0
        for j in gauss:
            g_off.append(rows)
            rows += self.encoded[j].rows.shape[0]
        self._gauss_offsets, self._n_rows = g_off, rows
        gidx = np.empty((self.n, len(gauss)), dtype=np.int64)
        gy = np.zeros((self.n, len(gauss)))
        gaux = np.zeros((self.n, len(gauss)))
        for c, (j, off) in enumerate(zip(gauss, g_off, strict=True)):
            e = self.encoded[j]
            gidx[:, c] = np.where(e.index >= 0, e.index + off, -1)
            gy[:, c], gaux[:, c] = e.y, e.aux
        # records sorted by their table rows (first part first): consecutive records share
        # rows, which then stay in cache; results are mapped back to the records' order
        order = np.argsort(
            row_keys(np.column_stack([lidx, gidx]).astype(np.float64)), kind="stable"
        )
        self._order = order.astype(np.int64)
        self._rank = np.empty(self.n, dtype=np.int64)
        self._rank[order] = np.arange(self.n)
        self._lidx, self._gidx = (
            np.ascontiguousarray(lidx[order]),
            np.ascontiguousarray(gidx[order]),
        )
        self._gy, self._gaux = np.ascontiguousarray(gy[order]), np.ascontiguousarray(gaux[order])
        self._lfac, self._gfac = np.ones(lidx.shape), np.ones(gidx.shape)
        self.factors: dict[str, np.ndarray] = {}

    def with_factors(self, factors: Mapping[str, np.ndarray] | None) -> PartAccountant:
        r"""The same accountant for the record function :math:`\tilde f_m(x_i) = \sum_q r_{iq}
        a_{iq} f_q(x_i; \theta_{q,m})`: part q's term of record i multiplied by its factor
        :math:`r_{iq} \ge 0` (``factors``: part name -> (n,) array; a part not named keeps 1).
        With the record coefficient :math:`c_i = \alpha_i`, :math:`c_i \max_m |\tilde f_m(x_i)|`
        bounds record i's term :math:`\sum_q \alpha_i r_{iq} f_q` of the log pseudo likelihood
        whose part q is weighted by :math:`\alpha_i r_{iq}`
        (:func:`~pseudopost.risk.weights.part_rake`). A new object; this one is unchanged.
        Ones give the plain sum bit for bit."""
        factors = {} if factors is None else dict(factors)
        known = {p.name for p in self.parts}
        unknown = sorted(set(factors) - known)
        if unknown:
            raise ValueError(f"'factors' names parts the accountant does not have: {unknown}.")
        lfac, gfac = np.ones(self._lidx.shape), np.ones(self._gidx.shape)
        for name, values in factors.items():
            r = np.asarray(values, dtype=np.float64)
            if r.shape != (self.n,) or not np.all(np.isfinite(r)) or np.any(r < 0):
                raise ValueError(
                    f"The factors of part '{name}' must be {self.n} finite values >= 0; got "
                    f"shape {r.shape}."
                )
            j = next(k for k, p in enumerate(self.parts) if p.name == name)
            if j in self._look:
                lfac[:, self._look.index(j)] = r[self._order]
            else:
                gfac[:, self._gauss.index(j)] = r[self._order]
        out = copy.copy(self)
        out._lfac, out._gfac = lfac, gfac
        out.factors = {k: np.asarray(v, dtype=np.float64).copy() for k, v in factors.items()}
        return out

    # -- draws and tables ------------------------------------------------------------------
    def split_draws(self, draws: Mapping[str, np.ndarray]) -> tuple[list[dict], int]:
        """Per part, its draws by parameter name (checked); and the number of draws."""
        if not isinstance(draws, Mapping):
            raise TypeError(f"'draws' must be a mapping of arrays; got {type(draws).__name__}.")
        out = [p.layout.check_draws(draws, f"{p.name}{SEP}") for p in self.parts]
        counts = {
            p.name: next(iter(d.values())).shape[0]
            for p, d in zip(self.parts, out, strict=True)
            if d
        }
        if len(set(counts.values())) > 1:
            raise ValueError(f"Every part needs the same number of (paired) draws; got {counts}.")
        if not counts:
            raise ValueError("No part has parameters: no draws to account.")
        return out, next(iter(counts.values()))

    def tables(self, per_part: list[dict], sl: slice) -> tuple[np.ndarray, ...]:
        """(LT, ET, ginv, gconst) for the draws ``sl`` (key-major, contiguous per key).

        The parts' tables are computed in parallel threads (their Numba kernels release the
        GIL), each with BLAS on one thread, so that a table's rounding never depends on the
        schedule; each part writes its own rows."""
        b = len(range(*sl.indices(next(iter(per_part[0].values())).shape[0])))
        LT = np.zeros((self._n_keys + 1, b))
        ET = np.zeros((self._n_rows, b))
        ginv = np.zeros((len(self._gauss), b))
        gconst = np.zeros((len(self._gauss), b))

        def table(j: int):
            return self.parts[j].table({k: v[sl] for k, v in per_part[j].items()},
                                       self.encoded[j])  # fmt: skip

        jobs = [*self._look, *self._gauss]
        workers = min(len(jobs), os.cpu_count() or 1)
        with threadpool_limits(1, user_api="blas"):
            if workers > 1:
                with ThreadPoolExecutor(workers) as pool:
                    out = dict(zip(jobs, pool.map(table, jobs), strict=True))
            else:
                out = {j: table(j) for j in jobs}
        for j, off in zip(self._look, self._look_offsets, strict=True):
            LT[off : off + self.encoded[j].n_keys] = out[j].T
        for c, (j, off) in enumerate(zip(self._gauss, self._gauss_offsets, strict=True)):
            eta, ginv[c], gconst[c] = out[j]
            ET[off : off + self.encoded[j].rows.shape[0]] = eta.T
        return LT, ET, ginv, gconst

    def _values(self, tabs, records) -> np.ndarray:
        """The (records, B) block of f from the tables (NumPy; the kernel's order of sums)."""
        LT, ET, ginv, gconst = tabs
        lidx, lfac = self._lidx[records], self._lfac[records]
        if lidx.shape[1]:
            acc = lfac[:, 0, None] * LT[lidx[:, 0]]
            for j in range(1, lidx.shape[1]):
                acc += lfac[:, j, None] * LT[lidx[:, j]]
        else:
            acc = np.zeros((lidx.shape[0], LT.shape[1]))
        gidx, gy, gaux = self._gidx[records], self._gy[records], self._gaux[records]
        gfac = self._gfac[records]
        for c in range(gidx.shape[1]):
            on = gidx[:, c] >= 0
            if on.any():
                z = (gy[on, c, None] - ET[gidx[on, c]]) * ginv[c]
                acc[on] += gfac[on, c, None] * (gconst[c] + gaux[on, c, None] - 0.5 * z * z)
        return acc

    def _draw_block(self, n_draws: int, dense: bool) -> int:
        rows = self._n_keys + 1 + self._n_rows + 2 * len(self._gauss)
        b = max(1, min(self.max_bytes, TABLE_BYTES) // (8 * rows))
        return min(b, _MAX_DRAW_BLOCK, n_draws)

    def use_dense(self, n_draws: int) -> bool:
        return self.n * n_draws <= DENSE_MAX if self.dense is None else bool(self.dense)

    # -- the PerRecordFunction contract ----------------------------------------------------
    def _run(self, draws, coefficient, extras, want_sum):
        if extras:
            raise ValueError(
                f"The per-column accountant takes no per-record extras (it accounts the "
                f"log-likelihood itself); got {sorted(extras)}."
            )
        per_part, n_draws = self.split_draws(draws)
        c = np.ascontiguousarray(coefficient, dtype=np.float64)
        if c.shape != (self.n,) or (not want_sum and np.any(c < 0)):
            kind = "" if want_sum else "non-negative "
            raise ValueError(f"'coefficient' must be {self.n} {kind}values; got shape {c.shape}.")
        c = np.ascontiguousarray(c[self._order])  # the kernels see records in sorted order
        dense = self.use_dense(n_draws)
        step = self._draw_block(n_draws, dense)
        per_record = np.zeros(self.n)
        per_draw = np.zeros(n_draws)
        n_chunks = chunks(self.n)
        for m0 in range(0, n_draws, step):
            sl = slice(m0, min(n_draws, m0 + step))
            tabs = self.tables(per_part, sl)
            if dense:
                rec, drw = self._dense(tabs, c, want_sum)
            else:
                rec, drw = self._kernel(tabs, c, n_chunks, want_sum)
            if want_sum:
                per_draw[sl] = drw
            else:
                np.maximum(per_record, rec, out=per_record)
                per_draw[sl] = drw
        out = np.empty(self.n)
        out[self._order] = per_record
        return out, per_draw

    def _kernel(self, tabs, c, n_chunks, want_sum):
        LT, ET, ginv, gconst = tabs
        with _LOCK:  # one kernel at a time: each already uses every core
            rec, drw = reduce_kernel(
                LT, self._lidx, self._lfac, ET, self._gidx, self._gy, self._gaux, self._gfac,
                ginv, gconst, c, n_chunks, want_sum,
            )  # fmt: skip
        return rec, (drw.sum(axis=0) if want_sum else drw.max(axis=0))

    def _dense(self, tabs, c, want_sum):
        b = tabs[0].shape[1]
        per_record = np.zeros(self.n)
        per_draw = np.zeros(b)
        for i0 in range(0, self.n, RECORD_STEP):  # a fixed step: sums do not depend on b
            rec = slice(i0, min(self.n, i0 + RECORD_STEP))
            g = self._values(tabs, rec)
            if want_sum:
                per_draw += (c[rec, None] * g).sum(axis=0)  # in record order, draw by draw
                continue
            a = np.abs(g)
            a[np.isnan(a)] = np.inf  # an undefined log density is unbounded risk
            per_record[rec] = a.max(axis=1)
            with np.errstate(invalid="ignore"):  # 0 * inf is NaN: it propagates
                per_draw = np.maximum(per_draw, np.abs(c[rec, None] * a).max(axis=0))
        return per_record, per_draw

    def reduce_abs(self, draws, coefficient, **extras) -> AbsReduction:
        """``per_record[i] = max_m |f_m(x_i)|``, ``per_draw[m] = max_i |c_i f_m(x_i)|``."""
        per_record, per_draw = self._run(draws, coefficient, extras, False)
        return AbsReduction(per_record, per_draw)

    def reduce_sum(self, draws, coefficient, **extras) -> np.ndarray:
        """Per draw, :math:`\\sum_i c_i f_m(x_i)`."""
        return self._run(draws, coefficient, extras, True)[1]

    def __call__(self, draws, records: slice | np.ndarray = slice(None), **extras) -> np.ndarray:
        """The (draws, records) matrix of f (small blocks, checks, the risk step)."""
        if extras:
            raise ValueError(f"The per-column accountant takes no extras; got {sorted(extras)}.")
        per_part, n_draws = self.split_draws(draws)
        rec = self._rank[np.arange(self.n)[records]]  # positions in the sorted order
        return self._values(self.tables(per_part, slice(0, n_draws)), rec).T.copy()


class CensoredPartAccountant(PartAccountant):
    r"""The record function of the per-part censoring
    (:class:`~pseudopost.privacy.decomposition.PartsCensored`): :math:`g_m(x_i) = \sum_k
    \mathrm{clip}(\alpha_i r_{ik} a_{ik} f_k(x_i; \theta_{k,m}), -B_k, B_k)`, the record's
    term of the censored log pseudo likelihood, so :math:`|g| \le \sum_k B_k = B` on every
    draw. ``alpha`` is the per-record extra (the decomposition's coefficient is 1); the factors
    :math:`r_{ik}` are :meth:`~PartAccountant.with_factors`'. NumPy only (the small files
    censoring is for); a NaN term counts as unbounded and is clipped to :math:`B_k`."""

    @classmethod
    def of(cls, base: PartAccountant, part_bounds) -> CensoredPartAccountant:
        names = [p.name for p in base.parts]
        missing = sorted(set(names) - set(part_bounds))
        if missing or sorted(set(part_bounds) - set(names)):
            raise ValueError(
                f"'part_bounds' must name every part of the file once: {names}; got "
                f"{sorted(part_bounds)}."
            )
        bounds = np.array([float(part_bounds[k]) for k in names])
        if not np.all(np.isfinite(bounds) & (bounds > 0)):
            raise ValueError(f"Every part's bound must be finite and > 0; got {bounds}.")
        out = copy.copy(base)
        out.__class__ = cls
        out.bounds = bounds
        out.extra_names = ["alpha"]
        return out

    def _censored_values(self, tabs, records, alpha) -> np.ndarray:
        LT, ET, ginv, gconst = tabs
        a = alpha[records, None]
        acc = np.zeros((a.shape[0], LT.shape[1] if self._look else ET.shape[1]))

        def add(v, b):
            v = np.where(np.isnan(v), b, v)  # undefined: unbounded, clipped
            acc[...] += np.clip(v, -b, b)

        lidx, lfac = self._lidx[records], self._lfac[records]
        with np.errstate(all="ignore"):
            for c, j in enumerate(self._look):
                add(a * lfac[:, c, None] * LT[lidx[:, c]], self.bounds[j])
            gidx, gy, gaux = self._gidx[records], self._gy[records], self._gaux[records]
            gfac = self._gfac[records]
            for c, j in enumerate(self._gauss):
                on = gidx[:, c] >= 0
                z = (gy[:, c, None] - ET[np.where(on, gidx[:, c], 0)]) * ginv[c]
                f = gconst[c] + gaux[:, c, None] - 0.5 * z * z
                add(np.where(on[:, None], a * gfac[:, c, None] * f, 0.0), self.bounds[j])
        return acc

    def _alpha(self, extras) -> np.ndarray:
        if set(extras) != {"alpha"}:
            raise ValueError(
                f"The censored per-part accountant takes the extra 'alpha' (the record weights) "
                f"only; got {sorted(extras)}."
            )
        alpha = np.asarray(extras["alpha"], dtype=np.float64)
        if alpha.shape != (self.n,) or np.any(~np.isfinite(alpha)) or np.any(alpha < 0):
            raise ValueError(f"'alpha' must be {self.n} finite values >= 0; got {alpha.shape}.")
        return np.ascontiguousarray(alpha[self._order])

    def _run(self, draws, coefficient, extras, want_sum):
        alpha = self._alpha(extras)
        per_part, n_draws = self.split_draws(draws)
        c = np.ascontiguousarray(coefficient, dtype=np.float64)
        if c.shape != (self.n,) or (not want_sum and np.any(c < 0)):
            raise ValueError(f"'coefficient' must be {self.n} values; got shape {c.shape}.")
        c = c[self._order]
        step = self._draw_block(n_draws, True)
        per_record, per_draw = np.zeros(self.n), np.zeros(n_draws)
        for m0 in range(0, n_draws, step):
            sl = slice(m0, min(n_draws, m0 + step))
            tabs = self.tables(per_part, sl)
            drw = np.zeros(sl.stop - sl.start)
            for i0 in range(0, self.n, RECORD_STEP):
                rec = slice(i0, min(self.n, i0 + RECORD_STEP))
                g = self._censored_values(tabs, rec, alpha)
                if want_sum:
                    drw += (c[rec, None] * g).sum(axis=0)
                    continue
                a = np.abs(g)
                per_record[rec] = np.maximum(per_record[rec], a.max(axis=1))
                drw = np.maximum(drw, (c[rec, None] * a).max(axis=0))
            per_draw[sl] = drw
        out = np.empty(self.n)
        out[self._order] = per_record
        return out, per_draw

    def __call__(self, draws, records: slice | np.ndarray = slice(None), **extras) -> np.ndarray:
        """The (draws, records) matrix of g (small blocks, checks); ``alpha`` as an extra."""
        alpha = self._alpha(extras)
        per_part, n_draws = self.split_draws(draws)
        rec = self._rank[np.arange(self.n)[records]]
        return self._censored_values(self.tables(per_part, slice(0, n_draws)), rec, alpha).T.copy()
