r"""A test reference: one PyMC model of a whole file's columns in sequence.

:class:`SequentialModel` declares every column of a file in **one** PyMC model; the part-by-part
fit of the package (:mod:`pseudopost.fitting.columns`, :mod:`pseudopost.models.file`) is checked
against it (``tests/fitting/test_columns.py``), and the model contract suite runs on it. It was
``pseudopost.models.sequential`` until it had no caller left in the package (issue 29, "one
model stack"); it lives here, outside the package, as a reference implementation. Import it from
a test module with a relative import (``from .._reference.sequential import SequentialModel``),
which pytest's ``--import-mode=importlib`` resolves from any folder directly under ``tests/``.

The model. The user lists the columns in a synthesis order :math:`x^{(1)}, \dots, x^{(J)}`
and a ready model for each; column j is modelled conditionally on the columns before it (and
on the columns kept as given), as synthpop does, but Bayesian and in **one** PyMC model:

.. math::
    \log p(x_i \mid \theta) = \sum_{j=1}^{J}
        \log p_j\bigl(x_i^{(j)} \mid x_i^{(1)}, \dots, x_i^{(j-1)}, k_i, \theta_j\bigr),

with :math:`k_i` the kept columns of record i. Each column model is declared with the name
prefix ``"{column}__"`` (its observed variable keeps the column's name), so the record's
log-likelihood is the sum over its columns, the pseudo posterior has **one weight per record**
multiplying that sum (:func:`~pseudopost.models.weighting.weighted_model`) and **one accountant**,
:math:`\Delta_i = \max_m |\alpha_i \log p(x_i\mid\theta_m)|`, covers the whole record
(range-restricted paper eq. 1; guide: *The pseudo posterior mechanism*).

Synthesis (:meth:`SequentialModel.simulate`) draws the columns in order under **one** posterior
draw :math:`\theta_m`, each conditioned on the *synthetic* values of the columns before it:
:math:`x^{*(j)}_i = F^{-1}_{j}(u_{ij} \mid x^{*(1)}_i, \dots, x^{*(j-1)}_i, k_i, \theta_m)` with
record-indexed uniforms ``record_uniforms(seed, synthesis_stream(d, j), ...)`` (dataset d, column
j), so the result does not depend on how records are chunked.

Predictors: a numeric column enters as given (or through a *public* transform: ``"log"``,
``"log1p"`` or fixed ``(centre, scale)`` constants); a categorical, binary or ordinal column is
one-hot encoded against its first level (the reference: first category of a pandas
``Categorical``, else the smallest value), or enters as its integer codes with ``"codes"``.
Transforms estimated from the data (e.g. standardising by the sample sd) would leak outside the
accountant and are not offered. Category levels and the model structure are read from the data,
as synthpop and the papers do: they are treated as public (a codebook).

Columns not in the order are either kept as given (``unmodelled="keep"``: partially synthetic
data; they condition every modelled column, like a ready model's predictors) or synthesized
from their marginal distribution (``unmodelled="marginal"``: fully synthetic; an intercept-only
model per column, drawn first, that conditions the ordered columns); ``keep`` lists columns that
stay as given in either case. The synthetic frames carry ``attrs["synthetic_columns"]`` and
``attrs["kept_columns"]``.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr

from pseudopost._streams import record_uniforms
from pseudopost._validation import check_columns, check_frame
from pseudopost.models.base import Prepared, SynthModel, synthesis_stream
from pseudopost.models.columns import ColumnInfo, decode_column, encode_column
from pseudopost.models.loglik import stack_draws
from pseudopost.models.registry import (
    CLASS_DEFAULTS,
    categorical_spec,
    choose_model,
    model_class,
    takes_predictors,
)

__all__ = ["SequentialModel"]

ModelSpec = "SynthModel | type[SynthModel] | str"
Transform = "str | tuple[float, float]"
_TRANSFORMS = ("log", "log1p", "codes")
PREFIX_SEP = "__"


@dataclass(frozen=True)
class _Column:
    """One modelled column: its model (predictors set to the encoded names) and raw inputs."""

    name: str
    model: SynthModel
    inputs: tuple[str, ...]  # raw columns it is conditioned on

    @property
    def prefix(self) -> str:
        return f"{self.name}{PREFIX_SEP}"


class SequentialModel(SynthModel):
    r"""Sequential (conditional) synthesizer of whole records (see the module docstring).

    Parameters
    ----------
    order
        Modelled columns in synthesis order.
    models
        A model for each column of ``order``: a mapping column -> spec, or a sequence aligned
        with ``order``. A spec is a ready-model class (e.g.
        :class:`~pseudopost.models.LogNormalRegression`), a name understood by
        :func:`pseudopost.models.registry.model_class` (``"lognormal"``, ``"categorical"``, ...), or
        an instance whose ``outcome`` is the column: a class or name conditions the column on
        every earlier and kept column; an instance on exactly its own ``predictors`` (raw column
        names, which must come earlier or be kept; its other settings, e.g. ``prior_scale``,
        are used as given). Columns synthesized from their marginal may also be given here.
    keep
        Columns released as given (and conditioning every modelled column).
    unmodelled
        What happens to the data's other columns: ``"keep"`` (as given: partially synthetic) or
        ``"marginal"`` (an intercept-only model each, drawn first: fully synthetic).
    transforms
        Public transforms of predictor columns: ``"log"``, ``"log1p"``, ``(centre, scale)``
        (numeric) or ``"codes"`` (categorical/ordinal: integer codes instead of one-hot).
    """

    def __init__(
        self,
        order: Sequence[str],
        models: Mapping[str, object] | Sequence[object],
        *,
        keep: Sequence[str] = (),
        unmodelled: Literal["keep", "marginal"] = "keep",
        transforms: Mapping[str, object] | None = None,
    ) -> None:
        order = self._names(order, "order")
        if not order:
            raise ValueError("'order' must list at least one column to synthesize. Got [].")
        keep = self._names(keep, "keep")
        both = sorted(set(order) & set(keep))
        if both:
            raise ValueError(f"Column(s) {both} are in both 'order' and 'keep'.")
        if unmodelled not in ("keep", "marginal"):
            raise ValueError(f"'unmodelled' must be 'keep' or 'marginal'. Got {unmodelled!r}.")
        if isinstance(models, Mapping):
            specs = dict(models)
        elif isinstance(models, Sequence) and not isinstance(models, str):
            if len(models) != len(order):
                raise ValueError(
                    f"'models' as a sequence must give one model per column of 'order' "
                    f"({len(order)}); got {len(models)}."
                )
            specs = dict(zip(order, models, strict=True))
        else:
            raise TypeError(
                f"'models' must be a mapping column -> model or a sequence aligned with "
                f"'order'. Got {type(models).__name__}."
            )
        missing = [c for c in order if c not in specs]
        if missing:
            raise ValueError(f"No model given for column(s) {missing} of 'order'.")
        in_keep = [c for c in specs if c in keep]
        if in_keep:
            raise ValueError(f"Column(s) {in_keep} are kept as given but have a model.")
        for col, spec in specs.items():
            self._check_spec(col, spec)
        self.order = tuple(order)
        self.specs = specs
        self.keep = tuple(keep)
        self.unmodelled = unmodelled
        self.transforms = self._check_transforms(transforms)
        self._structure: tuple = ()
        self._marginal: tuple[str, ...] = ()
        self._columns: tuple[str, ...] = ()

    # ---------------------------------------------------------------- description
    @staticmethod
    def _names(value, name: str) -> list[str]:
        if isinstance(value, str):
            raise TypeError(
                f"'{name}' must be a sequence of column names, not the string {value!r}."
            )
        names = list(value)
        bad = [v for v in names if not isinstance(v, str) or not v]
        if bad:
            raise TypeError(f"'{name}' must hold column names (non-empty str). Got {bad!r}.")
        dup = sorted({v for v in names if names.count(v) > 1})
        if dup:
            raise ValueError(f"'{name}' lists column(s) {dup} more than once.")
        return names

    @staticmethod
    def _check_spec(col: str, spec) -> None:
        if isinstance(spec, SynthModel):
            if getattr(spec, "outcome", col) != col:
                raise ValueError(
                    f"The model given for column '{col}' models outcome "
                    f"'{spec.outcome}'; its outcome must be '{col}'."
                )
            if not hasattr(spec, "predictors"):
                raise TypeError(
                    f"The model for column '{col}' ({type(spec).__name__}) has no 'predictors'; "
                    f"sequential synthesis needs a ready model."
                )
            return
        if isinstance(spec, type) and issubclass(spec, SynthModel):
            return
        if isinstance(spec, str):
            model_class(spec, col)  # raises on an unknown name
            return
        raise TypeError(
            f"The model for column '{col}' must be a ready-model class, instance or name; "
            f"got {spec!r}."
        )

    @staticmethod
    def _check_transforms(transforms) -> dict[str, object]:
        out = dict(transforms or {})
        for col, t in out.items():
            if isinstance(t, str) and t in _TRANSFORMS:
                continue
            if (
                isinstance(t, tuple)
                and len(t) == 2
                and all(isinstance(v, (int, float)) and np.isfinite(v) for v in t)
                and t[1] > 0
            ):
                continue
            raise ValueError(
                f"The transform of column '{col}' must be one of {list(_TRANSFORMS)} or a "
                f"(centre, scale) pair of public constants with scale > 0. Got {t!r}."
            )
        return out

    def __repr__(self) -> str:
        specs = ", ".join(f"{c!r}: {self._spec_text(s)}" for c, s in self.specs.items())
        text = (
            f"SequentialModel(order={list(self.order)!r}, models={{{specs}}}, "
            f"keep={list(self.keep)!r}, unmodelled={self.unmodelled!r}, "
            f"transforms={self.transforms!r}"
        )
        if self._structure:  # the data-dependent structure (levels, marginal models) last seen
            digest = hashlib.sha1(repr(self._structure).encode()).hexdigest()[:12]
            text += f", structure={digest!r}"
        return text + ")"

    @staticmethod
    def _spec_text(spec) -> str:
        if isinstance(spec, type):
            return spec.__name__
        return repr(spec)

    @property
    def observed(self) -> tuple[str, ...]:  # type: ignore[override]
        """Modelled columns (marginal ones first, once data have been prepared)."""
        return (*self._marginal, *self.order)

    @property
    def columns(self) -> list[str]:
        """Data columns (all columns of the data last prepared, once known)."""
        return list(self._columns) or [*self.keep, *self.order]

    def outcome_values(self, prepared: Prepared) -> np.ndarray:
        raise ValueError(
            "Sensitive ranges are not supported for a SequentialModel (a record has several "
            "outcomes); declare the range on the column's own ready model instead."
        )

    # ---------------------------------------------------------------- data
    def prepare(self, data: pd.DataFrame | None) -> Prepared:
        if data is None:
            raise ValueError(f"SequentialModel needs a DataFrame with columns {list(self.order)}.")
        check_frame(data, "data", min_rows=2)
        check_columns(data, [*self.order, *self.keep], "data")
        named = [c for c in self.specs if c not in self.order]
        unknown = [c for c in named if c not in data.columns]
        if unknown:
            raise ValueError(f"'models' names column(s) {unknown} that are not in the data.")
        if self.unmodelled == "keep" and named:
            raise ValueError(
                f"Column(s) {named} have a model but are not in 'order'; add them to 'order' "
                f"or use unmodelled='marginal'."
            )
        bad = [c for c in data.columns if not isinstance(c, str)]
        if bad:
            raise TypeError(f"Column names must be strings; got {bad!r}.")
        self._check_prefixes(list(data.columns))
        arrays, infos, categories = {}, {}, {}
        for col in data.columns:
            role = "kept"
            if col in self.order:
                role = "synthetic"
            elif col not in self.keep and self.unmodelled == "marginal":
                role = "marginal"
            values, info = encode_column(data[col], col)
            if role != "kept":
                single = info.levels if info.categorical else np.unique(values).tolist()
                if len(single) < 2:
                    what = "level" if info.categorical else "value"
                    raise ValueError(
                        f"Column '{col}' has a single {what} {single[0]!r}: there is nothing "
                        f"to synthesize. Keep it as given (keep=[{col!r}]) or drop it."
                    )
                if not info.categorical and categorical_spec(self._spec(col, data[col])):
                    values, info = encode_column(data[col], col, as_categorical=True)
            info = ColumnInfo(info.kind, info.dtype, info.levels, role)
            arrays[col], infos[col] = values, info
            if info.categorical:
                categories[col] = info.levels
        prepared = Prepared(arrays, len(data), data.index.copy(), infos, categories)
        self._check_transform_columns(prepared)
        columns = self._resolve(prepared)
        for column in columns:  # the column models' own support checks, before any sampling
            own = column.model.prepare(self._design_frame(prepared, column, prepared.arrays))
            extra = set(own.categories.get(column.name, ())) - set(infos[column.name].levels)
            if extra and infos[column.name].categorical:
                raise ValueError(
                    f"The model of column '{column.name}' lists level(s) {sorted(extra, key=str)}"
                    f" that the data lack; synthetic data may only hold observed levels."
                )
        self._marginal = tuple(c for c in infos if infos[c].role == "marginal")
        self._columns = tuple(infos)
        self._structure = tuple(
            (c.name, repr(c.model), infos[c.name].levels, c.inputs) for c in columns
        )
        return prepared

    @staticmethod
    def _check_prefixes(cols: list[str]) -> None:
        for a in cols:
            for b in cols:
                if a != b and b.startswith(a + PREFIX_SEP):
                    raise ValueError(
                        f"Column names '{a}' and '{b}' clash: parameters of '{a}' are named "
                        f"'{a}{PREFIX_SEP}...'. Rename one of them."
                    )

    def _check_transform_columns(self, prepared: Prepared) -> None:
        for col, t in self.transforms.items():
            if col not in prepared.dtypes:
                raise ValueError(f"'transforms' names column '{col}', which is not in the data.")
            info, x = prepared.dtypes[col], prepared.arrays[col]
            if t == "codes":
                if not info.categorical:
                    raise ValueError(
                        f"Transform 'codes' needs a categorical column; '{col}' is {info.kind}."
                    )
                continue
            if info.categorical:
                raise ValueError(f"Transform {t!r} needs a numeric column; '{col}' is {info.kind}.")
            low = {"log": 0.0, "log1p": -1.0}.get(t) if isinstance(t, str) else None
            if low is not None and np.any(x <= low):
                i = int(np.flatnonzero(x <= low)[0])
                raise ValueError(
                    f"Transform {t!r} of column '{col}' needs values > {low:g}; row "
                    f"{prepared.index[i]!r} has {x[i]:g}."
                )

    # ---------------------------------------------------------------- structure
    def synthesis_order(self, prepared: Prepared) -> list[str]:
        """Modelled columns in the order they are drawn (marginal ones first)."""
        marginal = [c for c, i in prepared.dtypes.items() if i.role == "marginal"]
        return [*marginal, *self.order]

    def roles(self, prepared: Prepared) -> dict[str, str]:
        """Column -> ``synthetic``, ``marginal`` or ``kept``."""
        return {c: i.role for c, i in prepared.dtypes.items()}

    def _resolve(self, prepared: Prepared) -> list[_Column]:
        """The column models, each with its predictors set to the encoded input names."""
        infos = prepared.dtypes
        kept = [c for c, i in infos.items() if i.role == "kept"]
        marginal = [c for c, i in infos.items() if i.role == "marginal"]
        out, before = [], [*kept, *marginal]
        for col in marginal:
            out.append(self._column(col, (), prepared, marginal=True))
        for col in self.order:
            out.append(self._column(col, tuple(before), prepared, marginal=False))
            before.append(col)
        return out

    def _column(self, col: str, allowed: tuple, prepared: Prepared, *, marginal: bool) -> _Column:
        spec = self._spec(
            col, decode_column(prepared.arrays[col], prepared.dtypes[col], prepared.index)
        )
        if isinstance(spec, SynthModel):
            inputs = tuple(spec.predictors)
            late = [p for p in inputs if p not in allowed]
            if late:
                where = "has no inputs (marginal)" if marginal else f"may use {list(allowed)}"
                raise ValueError(
                    f"The model of column '{col}' conditions on {late}, which are neither kept "
                    f"nor earlier in the order; '{col}' {where}."
                )
            base = spec
        else:
            inputs = allowed
            cls = spec if isinstance(spec, type) else None
            if cls is None:
                cls = model_class(spec, col)
            base = cls(col, **CLASS_DEFAULTS.get(cls.__name__, {}))
            if not takes_predictors(cls):
                inputs = ()  # a model without predictors (Dirichlet-categorical, mixture)
        model = copy.copy(base)
        model.predictors = tuple(self._encoded_names(prepared, inputs))
        return _Column(col, model, inputs)

    def _spec(self, col: str, series: pd.Series):
        """The model spec of a modelled column; a marginal column without one gets the default
        for its values (:func:`pseudopost.models.registry.choose_model`, without predictors)."""
        spec = self.specs.get(col)
        if spec is None:
            spec = choose_model(series, col, conditioned=False).model
        return spec

    def _encoded_names(self, prepared: Prepared, inputs: Sequence[str]) -> list[str]:
        names = []
        for c in inputs:
            info = prepared.dtypes[c]
            if info.categorical and self.transforms.get(c) != "codes":
                names += [f"{c}[{lvl}]" for lvl in info.levels[1:]]
            else:
                names.append(c)
        return names

    def _predictors(
        self, prepared: Prepared, inputs: Sequence[str], values: Mapping[str, np.ndarray]
    ) -> dict[str, np.ndarray]:
        """Encoded predictor arrays of ``inputs`` from (real or synthetic) coded ``values``."""
        out = {}
        for c in inputs:
            info, x, t = (
                prepared.dtypes[c],
                np.asarray(values[c], np.float64),
                self.transforms.get(c),
            )
            if info.categorical and t != "codes":
                for k, lvl in enumerate(info.levels[1:], start=1):
                    out[f"{c}[{lvl}]"] = (x == k).astype(np.float64)
            elif t == "log":
                out[c] = np.log(np.maximum(x, np.finfo(float).tiny))
            elif t == "log1p":
                out[c] = np.log1p(np.maximum(x, 0.0))
            elif isinstance(t, tuple):
                out[c] = (x - t[0]) / t[1]
            else:
                out[c] = x
        return out

    def _design_frame(
        self, prepared: Prepared, column: _Column, values: Mapping[str, np.ndarray]
    ) -> pd.DataFrame:
        """The column model's input: encoded predictors and the outcome in its own dtype."""
        frame = pd.DataFrame(
            self._predictors(prepared, column.inputs, values), index=prepared.index
        )
        info = prepared.dtypes[column.name]
        y = decode_column(values[column.name], info, prepared.index)
        if info.categorical:  # only the observed levels, so none absent can be modelled
            y = pd.Series(
                pd.Categorical(
                    y.to_numpy(dtype=object),
                    categories=list(info.levels),
                    ordered=info.kind == "ordinal",
                ),
                index=prepared.index,
            )
        frame[column.name] = y
        return frame

    def column_prepared(self, prepared: Prepared) -> dict[str, Prepared]:
        """Each column model's own prepared data (its predictors and outcome)."""
        return {
            c.name: c.model.prepare(self._design_frame(prepared, c, prepared.arrays))
            for c in self._resolve(prepared)
        }

    def column_models(self, prepared: Prepared) -> dict[str, SynthModel]:
        """Column -> its model (predictors set to the encoded names), in synthesis order."""
        return {c.name: c.model for c in self._resolve(prepared)}

    # ---------------------------------------------------------------- model
    def build(self, prepared: Prepared) -> pm.Model:
        with pm.Model() as model:
            for column in self._resolve(prepared):
                own = column.model.prepare(self._design_frame(prepared, column, prepared.arrays))
                column.model.declare(own, prefix=column.prefix)
        return model

    # ---------------------------------------------------------------- synthesis
    def simulate(
        self,
        prepared: Prepared,
        base: pm.Model,
        posterior: xr.Dataset,
        chosen: np.ndarray,
        seed: int,
    ) -> list[pd.DataFrame]:
        """Dataset d: the columns drawn in order under flat posterior draw ``chosen[d]``, each
        conditioned on the *synthetic* values of the columns before it (kept columns as given),
        by inversion from ``record_uniforms(seed, synthesis_stream(d, j), 0, n, k)`` where j is
        the column's position in the data."""
        flat = stack_draws(posterior, [rv.name for rv in base.free_RVs])
        columns = self._resolve(prepared)
        position = {c: j for j, c in enumerate(prepared.dtypes)}
        own_levels = {
            c.name: c.model.prepare(
                self._design_frame(prepared, c, prepared.arrays)
            ).categories.get(c.name)
            for c in columns
        }
        frames = []
        for d, m in enumerate(np.asarray(chosen, dtype=np.int64)):
            values = {c: v for c, v in prepared.arrays.items() if prepared.dtypes[c].role == "kept"}
            for column in columns:
                k = int(getattr(column.model, "uniforms_per_record", 1))
                u = record_uniforms(
                    int(seed), synthesis_stream(d, position[column.name]), 0, prepared.n, k
                )
                params = {
                    name[len(column.prefix) :]: v[m]
                    for name, v in flat.items()
                    if name.startswith(column.prefix)
                }
                x = column.model.sample_outcome(
                    params, self._predictors(prepared, column.inputs, values), u
                )
                x = np.asarray(x)
                if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
                    raise ValueError(
                        f"Synthesis of column '{column.name}' under posterior draw {int(m)} gave "
                        f"non-finite values; rescale its predictors (e.g. transforms="
                        f"{{'col': 'log1p'}}) or tighten its priors."
                    )
                values[column.name] = self._recode(
                    x, prepared.dtypes[column.name], own_levels[column.name]
                )
            frames.append(self.to_frame(prepared, values))
        return frames

    @staticmethod
    def _recode(x: np.ndarray, info: ColumnInfo, model_levels: tuple | None) -> np.ndarray:
        """A column model's draw on this model's coding (codes into the observed levels)."""
        x = np.asarray(x)
        if not info.categorical:
            return x.astype(np.float64)
        levels = tuple(model_levels) if model_levels is not None else info.levels
        codes = np.rint(x.astype(np.float64)).astype(np.int64)
        lookup = {lvl: k for k, lvl in enumerate(info.levels)}
        try:
            table = np.array([lookup[lvl] for lvl in levels], dtype=np.int64)
        except KeyError as err:
            raise ValueError(
                f"A column model produced level {err.args[0]!r}, which the data lack."
            ) from None
        return table[codes].astype(np.float64)

    def to_frame(self, prepared: Prepared, predictive: dict[str, np.ndarray]) -> pd.DataFrame:
        """Synthetic values (coded as in :meth:`prepare`) of the modelled columns, kept columns
        as given, in the data's column order, dtypes and categories."""
        cols = {}
        for c, info in prepared.dtypes.items():
            v = predictive[c] if info.role != "kept" else prepared.arrays[c]
            cols[c] = decode_column(v, info, prepared.index.copy())
        frame = pd.DataFrame(cols, index=prepared.index.copy())
        frame.attrs["synthetic_columns"] = [
            c for c, i in prepared.dtypes.items() if i.role != "kept"
        ]
        frame.attrs["kept_columns"] = [c for c, i in prepared.dtypes.items() if i.role == "kept"]
        return frame
