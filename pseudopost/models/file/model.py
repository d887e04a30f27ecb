r"""The whole-file model: a sequential synthesizer of a file with missing cells, codes, spikes,
rules and structural zeros, as a product of column parts fitted one by one.

For columns :math:`k = 1..K` in the visit order, each conditioned on the kept columns and on the
earlier columns its predictor-matrix row names, a record's log-likelihood is a sum over the
columns' parts (guide: *Whole files*; synthpop's ``cont.na`` and ``semicont`` made Bayesian):

.. math::
    f(x_i) = \sum_k a_{ik}\Bigl[\log p(S_{ik} \mid z_{ik}, \theta^S_k)
             + 1[S_{ik} = \text{observed}] \log p(x_{ik} \mid z_{ik}, \theta^V_k)\Bigr],

with :math:`S_{ik}` the status (observed, missing, each code, each spike; a categorical column
folds status and value into one variable over its levels), :math:`z_{ik}` the public features of
the earlier columns (:mod:`pseudopost.models.file.design`), and :math:`a_{ik} = 0` where a
declared rule fixes column k (a deterministic rule carries no information). Parameters of
different parts are disjoint with independent priors, so for fixed weights the pseudo posterior
factorises part by part,

.. math::
    \prod_i e^{\alpha_i f(x_i)} \prod_q \pi(\theta_q)
    = \prod_q \Bigl[\prod_i e^{\alpha_i a_{iq} f_q(x_i; \theta_q)} \pi(\theta_q)\Bigr],

and each part is fitted alone from its grouped statistics
(:mod:`pseudopost.fitting.columns`); the risk step and the accountant sum the parts of paired
draws (:class:`~pseudopost.privacy.kernels.parts.PartAccountant`), one weight per record.

Synthesis (:meth:`FileModel.simulate`): for dataset d under one posterior draw, the columns in
visit order, each by inversion from the record-indexed uniforms
``record_uniforms(seed, synthesis_stream(d, j), 0, n, 3)`` (j the column's position in the
frame; the first uniform draws the status or level, the second the value, the third a heap
label), conditioned on the
*synthetic* earlier columns; structural zeros mask the levels a record may take, then the
column's rules are imposed. Codes come out as the codes and spikes as the spike values, never as
drawn values (a drawn value that would equal a code or spike moves to the nearest other
integer, or the next float; with a declared grid, to the nearest grid point that is neither,
inside the family's support: :mod:`pseudopost.models.file.grid`); kept columns are as given,
dropped columns absent, and dtypes, categories and column order are the input's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
import xarray as xr

from pseudopost._streams import record_uniforms
from pseudopost._validation import check_frame
from pseudopost.models.base import Prepared, SynthModel, synthesis_stream
from pseudopost.models.file.constraints import fixed_records, impose_rules, zero_mask
from pseudopost.models.file.declarations import Declarations
from pseudopost.models.file.derived import derive, derive_column
from pseudopost.models.file.heaps import position_features
from pseudopost.models.file.plan import (
    ColumnPlan,
    FilePlan,
    PartPlan,
    heap_mask,
    heap_position,
    make_plan,
    value_support,
)
from pseudopost.models.loglik import stack_draws
from pseudopost.models.parts import SEP, Part, PartData, dim_name

__all__ = ["FileModel", "FilePrepared"]


class FilePrepared(Prepared):
    """:class:`~pseudopost.models.base.Prepared` data of a whole file and its :attr:`plan`."""

    def __init__(self, plan: FilePlan, arrays: dict[str, np.ndarray]) -> None:
        super().__init__(arrays, plan.n, plan.index)
        object.__setattr__(self, "plan", plan)


_COUNT = ("poisson", "negative_binomial", "zero_truncated_negative_binomial")


class FileModel(SynthModel):
    r"""A whole file's sequential model (module docstring), from public declarations.

    Parameters
    ----------
    declarations
        A :class:`~pseudopost.models.file.declarations.Declarations`; or give its arguments as
        keywords (``order``, ``predictor_matrix``, ``models``, ``keep``, ``drop``,
        ``missing_codes``, ``spikes``, ``transforms``, ``knots``, ``interactions``, ``rules``,
        ``structural_zeros``, ``codebook``, ``grid``, ``heaps``, ``bins``, ``max_levels``,
        ``shift_only``, ``hierarchy``).

    Notes
    -----
    Its capabilities are ``"parts"`` (:class:`~pseudopost.models.base.PartsModel`: fitted part
    by part, with no joint PyMC model) and ``"levels"``
    (:class:`~pseudopost.models.base.LevelsModel`); not ``"pymc"``, so it has no ``build`` and
    no sensitive ranges.
    """

    uniforms_per_record = 3

    def __init__(self, declarations: Declarations | None = None, **arguments) -> None:
        if declarations is not None and arguments:
            raise TypeError("Give either 'declarations' or their arguments, not both.")
        if declarations is None:
            declarations = Declarations.from_arguments(**arguments)
        if not isinstance(declarations, Declarations):
            raise TypeError(
                f"'declarations' must be a Declarations. Got {type(declarations).__name__}."
            )
        self.declarations = declarations

    def __repr__(self) -> str:
        return f"FileModel({self.declarations!r})"

    @property
    def observed(self) -> tuple[str, ...]:  # type: ignore[override]
        """The declared visit order (empty when none is declared). A prepared frame's own
        visit order and columns are its plan's, ``prepared.plan.order`` and ``.columns``:
        :meth:`prepare` never changes the model, so one model serves any number of frames."""
        return tuple(self.declarations.order or ())

    @property
    def columns(self) -> list[str]:
        """The declared columns (the visit order and the kept columns); a prepared frame's
        are ``prepared.plan.columns``."""
        return list(dict.fromkeys([*self.observed, *self.declarations.keep]))

    # ------------------------------------------------------------------ data
    def prepare(self, data: pd.DataFrame | None) -> FilePrepared:
        """Check the frame against the declarations and plan every column (nothing fitted; the
        model itself is not changed)."""
        if data is None:
            raise ValueError("A whole-file model needs the frame to synthesize.")
        check_frame(data, "data", min_rows=2)
        plan = make_plan(data, self.declarations)
        arrays = {}
        for p in plan.plans:
            c = p.column
            if c.categorical and not c.ordered:
                arrays[c.name] = c.level_codes(c.status, c.values).astype(np.float64)
            else:
                arrays[f"{c.name}.status"] = c.status.astype(np.float64)
                if c.ordered:
                    arrays[c.name] = np.where(
                        c.status == 0, c.level_codes(c.status, c.values), np.nan
                    ).astype(np.float64)
                else:
                    arrays[c.name] = np.asarray(c.values, dtype=np.float64)
        return FilePrepared(plan, arrays)

    @staticmethod
    def _plan(prepared: Prepared) -> FilePlan:
        plan = getattr(prepared, "plan", None)
        if not isinstance(plan, FilePlan):
            raise TypeError("Expected the FilePrepared data of FileModel.prepare.")
        return plan

    def parts(self, prepared: Prepared) -> list[Part]:
        """The file's parts in visit order (a column's status part before its value part)."""
        return self._plan(prepared).parts

    def part_data(self, prepared: Prepared) -> list[PartData]:
        """Each part's data (outcome, design, active records), in :meth:`parts` order."""
        plan = self._plan(prepared)
        states = real_states(plan)
        out = []
        for p in plan.plans:
            if p.parts:
                out += column_data(p, p.design.matrix(states, plan.n))
        return out

    def iter_part_data(self, prepared: Prepared):
        """(part, data) one column at a time (one design matrix alive at once)."""
        plan = self._plan(prepared)
        states = real_states(plan)
        for p in plan.plans:
            if p.parts:
                X = p.design.matrix(states, plan.n)
                for pp, d in zip(p.parts, column_data(p, X), strict=True):
                    yield pp.part, d

    def level_groups(
        self, prepared: Prepared, *, values: int = 0, runs: int = 0
    ) -> dict[str, np.ndarray]:
        r"""Per level, status or heap part, each record's level (-1 where the part is not
        active): the groups whose shares a weight floor keeps
        (:func:`pseudopost.risk.weights.level_floor`). With ``values`` > 0 also every value
        part over at most ``values`` points or bins (a 0/1 or 0-7 answer modelled over its
        grid; not a normal part), each record's point or bin; with ``runs`` > 0 also every
        value part over more points or bins, each record's run of consecutive points: the K
        points cut into ``runs`` runs of nearly equal length (at most K), point k in run
        :math:`\lfloor k \cdot runs / K \rfloor` (public: the grid's positions, not the
        data's). Both are what :func:`pseudopost.risk.weights.part_rake` rakes."""
        plan = self._plan(prepared)
        out = {}
        for p in plan.plans:
            for pp in p.parts:
                k = getattr(pp.part, "n_levels", 0) if pp.part.kind == "lookup" else 0
                value = pp.role == "value" and k > 0
                small = value and values > 0 and k <= values
                wide = value and runs > 0 and k > values
                if pp.role in ("levels", "status", "heap") or small or wide:
                    y = _part_outcome(p, pp)
                    y = np.where(np.isnan(y), -1, y).astype(np.int64)
                    if wide:
                        y = np.where(y >= 0, (y * min(runs, k)) // k, -1)
                    out[pp.part.name] = y
        return out

    def choices(self, prepared: Prepared) -> pd.DataFrame:
        return self._plan(prepared).choices()

    def coordinate_labels(self, prepared: Prepared) -> dict[str, list[str]]:
        """Per part dimension of levels or cutpoints (``"sex_level"``,
        ``"age_value_cutpoint"``: :func:`~pseudopost.models.parts.dim_name`), its coordinates' labels in place of the levels' positions
        (``'0'``, ``'1|2'``): the column's level labels (``'Male'``), status labels
        (``'observed'``, ``'missing'``, a code), an ordinal's levels, a cumulative part's grid
        points (``'16|17'``), so that ``az.summary`` and plots name what a parameter is about.
        Parts whose levels have no labels (heaps, bins) keep their positions."""
        out = {}
        for p in self._plan(prepared).plans:
            for pp in p.parts:
                labels = _level_labels(p, pp)
                if labels is None or len(set(labels)) != len(labels):
                    continue
                for dim, values in pp.part.coords().items():
                    if dim == "level":
                        new = [labels[int(v)] for v in values]
                    elif dim == "cutpoint":
                        new = ["|".join(labels[int(j)] for j in v.split("|")) for v in values]
                    else:
                        continue
                    out[dim_name(pp.part.name, dim)] = new
        return out

    # ------------------------------------------------------------------ synthesis
    def to_frame(self, prepared: Prepared, predictive: Mapping[str, pd.Series]) -> pd.DataFrame:
        """The synthetic frame: the input's columns (dropped ones left out) in its order, kept
        columns as given, synthesized ones from ``predictive`` (column -> Series)."""
        plan = self._plan(prepared)
        cols = {}
        for c in plan.columns:
            if c in plan.derived:
                continue
            s = plan.kept_series[c] if c in plan.kept else predictive[c]
            cols[c] = s.copy()
        frame = pd.DataFrame(cols, index=plan.index.copy())
        if plan.derived:  # computed from the synthetic columns by their definitions
            frame = derive(frame, plan.derived, plan.derived_dtypes)[list(plan.columns)]
        frame.attrs["synthetic_columns"] = list(plan.order)
        frame.attrs["kept_columns"] = list(plan.kept)
        return frame

    def simulate(
        self,
        prepared: Prepared,
        base: object,
        posterior: xr.Dataset,
        chosen: np.ndarray,
        seed: int,
    ) -> list[pd.DataFrame]:
        """One synthetic frame per chosen flat posterior draw (module docstring); ``base`` is
        not used (there is no PyMC model)."""
        plan = self._plan(prepared)
        names = [f"{q.name}{SEP}{n}" for q in plan.parts for n in q.layout.names]
        flat = stack_draws(posterior, names)
        frames = []
        for d, m in enumerate(np.asarray(chosen, dtype=np.int64)):
            params = {k: v[m] for k, v in flat.items()}
            frames.append(self.to_frame(prepared, synthesize_columns(plan, params, d, int(seed))))
        return frames


# ---------------------------------------------------------------------- helpers (no state)
def _level_labels(p: ColumnPlan, pp: PartPlan) -> list[str] | None:
    """The labels of a part's levels, in the part's order, or None (no labels)."""
    col, part = p.column, pp.part
    if pp.role == "levels" or (pp.role == "value" and part.family == "ordinal"):
        labels = [col.levels[int(k)].label for k in pp.codes]
    elif pp.role == "status":
        labels = [col.status_label(int(k)) for k in pp.codes]
    elif pp.role == "value" and part.family == "cumulative" and p.points is not None:
        labels = [f"{float(x):g}" for x in p.points]
    else:
        return None
    return labels if len(labels) == getattr(part, "n_levels", len(labels)) else None


def real_states(plan: FilePlan) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Every encoded column's (status, values) on the real records."""
    out = {c: (e.status, e.values) for c, e in plan.kept.items()}
    out.update({p.name: (p.column.status, p.column.values) for p in plan.plans})
    out.update({d: (e.status, e.values) for d, e in plan.derived_predictors.items()})
    return out


def _part_outcome(p: ColumnPlan, pp: PartPlan) -> np.ndarray:
    """The part's outcome on the real records, NaN where it is not active."""
    c = p.column
    active = ~p.fixed
    if pp.role == "levels":
        key = c.level_codes(c.status, c.values)
    elif pp.role == "status":
        key = c.status
    elif pp.role == "heap":
        active = active & c.valued
        key = np.zeros(c.n, dtype=np.int64)
        key[active] = p.heaps.labels(np.asarray(c.values, dtype=np.float64)[active])
    elif pp.role == "nested":  # the (parent level, level) pair (nesting module)
        return p.nesting.real.copy()
    elif pp.role == "points":  # the grid point inside the value's bin (bin_points module)
        active = active & c.valued
        y = np.full(c.n, np.nan)
        y[active] = p.bin_points.levels(np.asarray(c.values, dtype=np.float64)[active])
        return y
    elif c.ordered:
        key = c.level_codes(c.status, c.values)
        active = active & c.valued
    elif p.bins is not None:  # binned part: the bin of each value
        valued = active & c.valued
        y = np.full(c.n, np.nan)
        y[valued] = p.bins.index(np.asarray(c.values, dtype=np.float64)[valued])
        if c.beyond is not None:  # censored into the outermost bin of positive width
            rows = active & c.beyond
            step = p.grid.step if p.grid is not None else None
            y[rows] = p.bins.inner_index(np.asarray(c.values, dtype=np.float64)[rows], step)
        return y
    elif p.points is not None:  # cumulative part: the index of the nearest grid point
        active = active & c.valued
        y = np.full(c.n, np.nan)
        y[active] = p.grid.nearest(p.points, np.asarray(c.values, dtype=np.float64)[active])
        return y
    else:
        active = active & c.valued
        return np.where(active, np.asarray(c.values, dtype=np.float64), np.nan)
    y = np.full(c.n, np.nan)
    idx = np.searchsorted(pp.codes, key[active])
    y[active] = idx
    return y


def column_data(p: ColumnPlan, X: np.ndarray) -> list[PartData]:
    """The data of a column's parts given its design matrix on the real records."""
    out = []
    for pp in p.parts:
        y = _part_outcome(p, pp)
        if pp.role == "nested":  # the tilt inputs' codes (nesting module)
            Xp = p.nesting.tilt_real
        elif pp.role == "heap" and p.bins is not None:  # the value's position too
            Xp = pp.design(np.concatenate([X, heap_position(p.column, p.bins)[0]], axis=1))
        else:
            Xp = pp.design(X)
        if pp.masked and pp.role == "heap":  # the labels of the value's bin (heaps module)
            x = np.nan_to_num(np.asarray(p.column.values, dtype=np.float64),
                              nan=p.bins.edges[0])  # fmt: skip
            mask = heap_mask(p.heaps, p.bins, pp.codes, p.bins.index(x), p.heaps.labels(x))
            mask[np.isnan(y)] = True
            Xp = np.concatenate([Xp, mask.astype(np.float64)], axis=1)
        elif pp.masked:
            Xp = np.concatenate([Xp, p.mask.astype(np.float64)], axis=1)
        out.append(PartData(y, Xp, ~np.isnan(y)))
    return out


def _params(part: Part, params: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {n: params[f"{part.name}{SEP}{n}"] for n in part.layout.names}


def _separate(values: np.ndarray, forbidden: tuple, discrete: bool) -> np.ndarray:
    """Drawn values moved off the codes and spikes (module docstring)."""
    if discrete:
        values = np.rint(values)
    if not forbidden:
        return values
    bad = np.isin(values, np.asarray(forbidden, dtype=np.float64))
    if not bad.any():
        return values
    out = values.copy()
    taken = {float(f) for f in forbidden}
    for i in np.flatnonzero(bad):
        v = out[i]
        if not discrete:
            out[i] = np.nextafter(v, np.inf)
            continue
        step = 1.0
        while True:
            for cand in (v + step, v - step):
                if cand not in taken:
                    out[i] = cand
                    break
            else:
                step += 1.0
                continue
            break
    return out


def _draw_column(p: ColumnPlan, params, X, u, frame_so_far) -> tuple[np.ndarray, np.ndarray]:
    """(status, values) of one column for every record (rules imposed afterwards)."""
    c, n = p.column, X.shape[0]
    if p.nesting is not None:  # given the parent's drawn level alone (nesting module)
        parent = p.nesting.parent
        groups = p.nesting.groups(*parent.split(frame_so_far[parent.name]))
        nested = p.parts[0].part
        return p.nesting.draw(nested, _params(nested, params), groups, u, frame_so_far)
    # an ordinal column is encoded with its levels too (``categorical``), but drawn as a status
    # part and an ordered value part below: its first part is the status part when it has one
    if c.categorical and not c.ordered:
        if p.parts:
            pp = p.parts[0]
            Xp = pp.design(X)
            if pp.masked:
                mask = zero_mask(p.zeros, frame_so_far, c.name,
                                 [c.levels[k].cell for k in pp.codes])  # fmt: skip
                mask[_fixed(p, frame_so_far)] = True  # drawn, then replaced by the rule
                if not mask.any(axis=1).all():
                    i = int(np.flatnonzero(~mask.any(axis=1))[0])
                    raise ValueError(
                        f"Synthetic record {i} has no allowed level of column {c.name!r}: the "
                        f"structural zeros {[z.text for z in p.zeros]} forbid every level given "
                        f"its earlier columns. Declare the zero on the earlier columns too."
                    )
                Xp = np.concatenate([Xp, mask.astype(np.float64)], axis=1)
            idx = pp.part.sample(_params(pp.part, params), Xp, u[:, 0]).astype(np.int64)
            codes = pp.codes[idx]
        else:
            _check_free(p, frame_so_far)
            codes = np.full(n, 0 if p.constant is None else p.constant, dtype=np.int64)
        return c.from_level_codes(codes)
    status_pp, value_pp = p.part("status"), p.part("value")
    if status_pp is not None:
        idx = status_pp.part.sample(
            _params(status_pp.part, params), status_pp.design(X), u[:, 0]
        ).astype(np.int64)
        status = status_pp.codes[idx]
    else:
        if p.constant is None:
            _check_free(p, frame_so_far)
        status = np.full(n, c.statuses[0] if p.constant is None else p.constant, dtype=np.int64)
    obs = status == 0
    if c.ordered:
        levels = np.full(n, 0, dtype=np.int64)
        if value_pp is not None and obs.any():
            k = value_pp.part.sample(
                _params(value_pp.part, params), value_pp.design(X[obs]), u[obs, 1]
            )
            levels[obs] = value_pp.codes[k.astype(np.int64)]
        elif p.value_constant is not None:
            levels[obs] = p.value_constant
        _, values = c.from_level_codes(levels)
        values = np.where(obs, values, np.nan) if c.numeric else _blank(values, obs)
        return status, values
    values = np.full(n, np.nan)
    if value_pp is not None and obs.any():
        v = value_pp.part.sample(_params(value_pp.part, params), value_pp.design(X[obs]), u[obs, 1])
        if not np.all(np.isfinite(v)):
            raise ValueError(
                f"Synthesis of column {c.name!r} gave non-finite values; rescale its predictors "
                f"(transforms=) or declare its model."
            )
        forbidden = (*c.info.codes, *c.info.spikes)
        low, low_open = value_support(p.choice.family)
        Xh = X[obs]
        if p.bin_points is not None:  # the drawn bin, then a grid point of it (bin_points)
            j = v.astype(np.int64)
            points_pp = p.part("points")
            level = points_pp.part.sample_in_bins(_params(points_pp.part, params), j, u[obs, 2])
            values[obs] = p.bin_points.values(level, u[obs, 3])
            return status, values
        if p.bins is not None:  # the drawn bin, then a uniform position in it (bins module)
            j = v.astype(np.int64)
            if p.heaps is not None:  # the heap label given the bin (heaps module)
                F = position_features(c.name, p.bins.n_bins, j)[0]
                Xh = np.concatenate([Xh, F], axis=1)
            v = p.bins.draw(j, u[obs, 2])
        if p.points is not None:  # the drawn level is a point of the bounded grid
            values[obs] = p.points[v.astype(np.int64)]
        elif p.heaps is not None:  # the heap label, then the value snapped to it (heaps module)
            heap_pp = p.part("heap")
            if heap_pp is not None:
                Xk = heap_pp.design(Xh)
                if heap_pp.masked:  # the labels of the drawn bin (heaps module)
                    mask = heap_mask(p.heaps, p.bins, heap_pp.codes, j)
                    Xk = np.concatenate([Xk, mask.astype(np.float64)], axis=1)
                k = heap_pp.part.sample(
                    _params(heap_pp.part, params), Xk, u[obs, 3 if p.bins is not None else 2]
                ).astype(np.int64)
                labels = heap_pp.codes[k]
            else:
                labels = np.full(int(obs.sum()), p.heap_constant, dtype=np.int64)
            high = math.inf
            if p.bins is not None:  # inside the bins' range (the column's support)
                if p.bins.edges[0] > low:
                    low, low_open = float(p.bins.edges[0]), False
                high = float(p.bins.edges[-1])
            values[obs] = p.heaps.snap(
                v, labels, low, high, low_open=low_open, forbidden=forbidden,
                bins=None if p.bins is None else (np.asarray(p.bins.edges), j),
            )  # fmt: skip
        elif p.grid is not None:  # public recording precision: post-processing (grid module)
            values[obs] = p.grid.snap(v, low, low_open=low_open, forbidden=forbidden)
        else:
            discrete = c.info.kind == "integer" or p.choice.family in _COUNT
            values[obs] = _separate(v, forbidden, discrete)
    elif obs.any():
        _check_free(p, frame_so_far, obs)
        values[obs] = 0.0  # placeholders of records every one of which a rule fixes
    return status, values


def _fixed(p: ColumnPlan, frame_so_far: pd.DataFrame) -> np.ndarray:
    """Records of the synthetic frame so far that ``p``'s rules fix (their conditions read
    earlier columns only; the column itself stands in as empty cells)."""
    if not p.rules:
        return np.zeros(len(frame_so_far), dtype=bool)
    c = p.column
    n = len(frame_so_far)
    blank = c.decode(np.full(n, 1), np.full(n, np.nan), frame_so_far.index)
    return fixed_records(p.rules, frame_so_far.assign(**{c.name: blank}))


def _check_free(p: ColumnPlan, frame_so_far: pd.DataFrame, which: np.ndarray | None = None):
    """A column whose real records are all fixed by rules has no model: every synthetic record
    must be fixed too."""
    free = ~_fixed(p, frame_so_far)
    if which is not None:
        free &= which
    if p.fixed.all() and free.any():
        raise ValueError(
            f"Every real record of column {p.name!r} is fixed by its rules, so it has no model, "
            f"but synthetic record {int(np.flatnonzero(free)[0])} is fixed by none of "
            f"{[r.text for r in p.rules]}."
        )
    if which is not None and free.any():  # pragma: no cover  (observed drawn without a value)
        raise ValueError(f"Column {p.name!r}: an observed status was drawn with no value model.")


def _blank(values: np.ndarray, obs: np.ndarray) -> np.ndarray:
    out = values.copy()
    out[~obs] = np.nan
    return out


def synthesize_columns(
    plan: FilePlan, params: Mapping[str, np.ndarray], dataset: int, seed: int
) -> dict[str, pd.Series]:
    """The synthesized columns of dataset ``dataset`` under one posterior draw (module
    docstring): column -> Series in the input's dtype."""
    n, index = plan.n, plan.index
    states = {c: (e.status, e.values) for c, e in plan.kept.items()}
    frame = pd.DataFrame({c: s for c, s in plan.kept_series.items()}, index=index)
    out = {}
    for p in plan.plans:
        c = p.column
        # four uniforms per record: status or level, value, heap label or position in a bin,
        # a binned column's heap label (the same for any k <= 4: record_uniforms draws them in
        # blocks of four)
        u = record_uniforms(seed, synthesis_stream(dataset, c.position), 0, n, 4)
        for d in p.design.columns:  # a derived predictor, from the synthetic inputs
            if d in plan.derived_predictors and d not in states:
                s = derive_column(frame, d, plan.derived[d], plan.derived_dtypes[d])
                states[d] = plan.derived_predictors[d].split(s)
        X = p.design.matrix(states, n)
        status, values = _draw_column(p, params, X, u, frame)
        series = c.decode(status, values, index)
        if p.rules:
            series = impose_rules(series, frame, p.rules)
            status, values = c.split(series)
        states[c.name] = (status, values)
        frame[c.name] = series
        out[c.name] = series
    for p in plan.plans:
        for r in p.rules:
            bad = r.violations(frame)
            if bad.any():  # pragma: no cover  (imposed above; rules that contradict each other)
                raise ValueError(
                    f"Synthetic record {int(np.flatnonzero(bad)[0])} breaks {r.text!r}."
                )
    for z in plan.declarations.structural_zeros:
        bad = z.violations(frame)
        if bad.any():
            raise ValueError(
                f"Synthetic record {int(np.flatnonzero(bad)[0])} falls in the structural zero "
                f"{z.text!r}: a rule imposed a value the zero forbids; the declarations "
                f"contradict each other."
            )
    return out
