r"""``pseudopost.synthesize``: whole-record synthesis of a mixed-type frame with defaults that work.

One call picks a ready model per column from its dtype and values, chains them into a
:class:`~pseudopost.models.sequential.SequentialModel` (each column conditioned on the columns
before it), runs the risk-weighted pseudo posterior mechanism on it (one weight per record, one
accountant, :class:`~pseudopost.PseudoPosterior`) and returns the synthetic frame(s), the table
of choices and the fitted mechanism.

Automatic choice (:func:`~pseudopost.models.registry.choose_model`), the first rule that applies (detected type -> model):

* ordered pandas ``Categorical`` -> ordinal -> ``ordinal``;
* two levels (bool, two strings, two numbers) -> binary -> ``logistic``;
* strings, unordered ``Categorical``, integers with at most ``max_levels`` (5) distinct values
  -> categorical -> ``categorical`` (``dirichlet_categorical`` when the column has no
  predictors);
* any negative value -> real -> ``normal``;
* zeros and positive amounts (floats, or integers reaching ``amount_threshold`` = 1000, such as
  capital gains) -> zero-inflated amount -> ``hurdle_lognormal``;
* positive amounts with skewness > 0.5 -> positive skewed -> ``lognormal``; other positive
  amounts -> positive -> ``normal``;
* non-negative integers with more than half zeros -> zero-inflated count -> ``hurdle_count``;
* other non-negative integers -> count -> ``negative_binomial``.

Multi-modal continuous columns are not detected: choose ``models={"x": FiniteMixture("x", 3)}``.

A numeric column modelled on the log scale (``lognormal``, ``hurdle_lognormal``) enters later
columns' predictors as ``log1p`` (a fixed, public transform). **Privacy note**: the choices
(model family, category levels, which transform) are read from the confidential data and are
not covered by the accountant, as in synthpop and the papers; state them as public (a codebook)
or fix them with ``models=`` and ``transforms=``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_frame, check_positive_int
from pseudopost.mechanisms.pseudo_posterior import PseudoPosterior, PseudoPosteriorResult
from pseudopost.models.base import SynthModel
from pseudopost.models.columns import encode_column
from pseudopost.models.registry import (
    LOG_SCALE,
    Choice,
    categorical_spec,
    choose_model,
    model_class,
)
from pseudopost.models.sequential import SequentialModel

__all__ = ["Choice", "SynthesisResult", "choose_model", "model_class", "synthesize"]


def _forward(name: str) -> property:
    """The fitted mechanism's ``name`` (``SynthesisResult.result.name``)."""
    return property(lambda self: getattr(self.result, name), doc=f"``result.{name}``.")


@dataclass
class SynthesisResult:
    """What :func:`synthesize` returns.

    Attributes
    ----------
    synthetic : DataFrame or list of DataFrame
        The synthetic data (one frame for ``m == 1``).
    choices : DataFrame
        One row per column: ``column``, ``role`` (synthetic, marginal, kept), ``detected``,
        ``model``, ``reason``, ``as_predictor`` (how later columns see it).
    result : PseudoPosteriorResult
        The fitted mechanism (``epsilon``, ``lipschitz``, ``alpha``, ``datatree``, ...).
    model : SequentialModel
    """

    synthetic: pd.DataFrame | list[pd.DataFrame]
    choices: pd.DataFrame
    result: PseudoPosteriorResult
    model: SequentialModel

    epsilon = _forward("epsilon")
    unweighted_epsilon = _forward("unweighted_epsilon")
    lipschitz = _forward("lipschitz")
    privacy_statement = _forward("privacy_statement")

    @property
    def synthetic_columns(self) -> list[str]:
        return list(self.choices.loc[self.choices.role != "kept", "column"])

    @property
    def kept_columns(self) -> list[str]:
        return list(self.choices.loc[self.choices.role == "kept", "column"])

    def synthesize(self, m: int | None = None, seed: SeedLike = None, *, weighted: bool = True):
        """One more synthetic dataset (a DataFrame) from the weighted posterior, or
        (``weighted=False``) from the unweighted posterior of the risk step: the unweighted
        synthesizer, whose privacy loss is ``unweighted_epsilon``, for comparison. ``m`` is
        deprecated (:meth:`PseudoPosteriorResult.synthesize`); use :meth:`synthesize_datasets`.
        """
        return self.result.synthesize(m, seed, weighted=weighted)

    def synthesize_datasets(
        self, m: int, seed: SeedLike = None, *, weighted: bool = True
    ) -> list[pd.DataFrame]:
        """``m`` more synthetic datasets, each under its own posterior draw (weighted, or the
        unweighted synthesizer with ``weighted=False``); they compose to ``m`` times the
        epsilon of one."""
        return self.result.synthesize_datasets(m, seed, weighted=weighted)


def synthesize_unweighted(result: PseudoPosteriorResult, m: int = 1, seed: SeedLike = None):
    """Deprecated: ``result.synthesize_datasets(m, seed, weighted=False)`` (a list) or
    ``result.synthesize(seed=seed, weighted=False)`` (one DataFrame). Returns what it did in
    pseudopost 0.1 (a DataFrame for ``m == 1``, else a list), with a ``DeprecationWarning``."""
    warnings.warn(
        "synthesize_unweighted(result, m, seed) is deprecated and will be removed in "
        "pseudopost 0.3; use result.synthesize_datasets(m, seed=..., weighted=False).",
        DeprecationWarning,
        stacklevel=2,
    )
    with warnings.catch_warnings():  # one warning, this one
        warnings.simplefilter("ignore", DeprecationWarning)
        return result.synthesize(m, seed, weighted=False)


def _model_name(spec) -> str:
    if isinstance(spec, str):
        return spec
    if isinstance(spec, type):
        return spec.__name__
    return repr(spec)


def _check_models(frame: pd.DataFrame, models) -> dict[str, object]:
    if models is None:
        return {}
    if not isinstance(models, Mapping):
        raise TypeError(f"'models' must be a mapping column -> model. Got {type(models).__name__}.")
    unknown = [c for c in models if c not in frame.columns]
    if unknown:
        raise ValueError(
            f"'models' names column(s) {unknown} that are not in 'frame' "
            f"(columns: {list(frame.columns)})."
        )
    out = dict(models)
    for col, spec in out.items():
        if isinstance(spec, str):
            model_class(spec, col)
        elif not (
            isinstance(spec, SynthModel)
            or (isinstance(spec, type) and issubclass(spec, SynthModel))
        ):
            raise TypeError(
                f"The model for column '{col}' must be a model name, a ready-model class or "
                f"instance. Got {spec!r}."
            )
    return out


def synthesize(
    frame: pd.DataFrame,
    *,
    order: Sequence[str] | None = None,
    models: Mapping[str, object] | None = None,
    keep: Sequence[str] = (),
    unmodelled: Literal["keep", "marginal"] = "keep",
    transforms: Mapping[str, object] | None = None,
    m: int = 1,
    scale: float = 1.0,
    shift: float = 0.0,
    target_epsilon: float | None = None,
    draws: int = 1000,
    tune: int = 1000,
    chains: int = 2,
    sampler: Literal["nutpie", "nutpie-jax", "pymc"] = "nutpie-jax",
    seed: SeedLike = None,
    progress: bool | None = None,
) -> SynthesisResult:
    r"""Synthesize a mixed-type frame record by record with the risk-weighted pseudo posterior.

    Parameters
    ----------
    frame
        The confidential data (not modified). No missing values; at least two rows.
    order
        Columns to synthesize, in synthesis order (default: every column not in ``keep``, in
        the frame's order: fully synthetic). Column j is conditioned on the kept columns and
        on columns 1..j-1.
    models
        Overrides of the automatic choice, column -> name (``"lognormal"``, ``"categorical"``,
        ... see :data:`~pseudopost.models.registry.MODEL_NAMES`), ready-model class or instance (an instance conditions on
        exactly its own ``predictors``).
    keep
        Columns released as given (they condition every synthesized column).
    unmodelled
        Columns neither in ``order`` nor in ``keep``: ``"keep"`` (released as given) or
        ``"marginal"`` (synthesized from their marginal).
    transforms
        Public predictor transforms (see :class:`SequentialModel`); default ``log1p`` for
        columns modelled on the log scale.
    m, scale, shift, target_epsilon, sampler
        Number of synthetic datasets (composing to :math:`m\,\varepsilon`) and the mechanism's
        options (:class:`~pseudopost.PseudoPosterior`). The default sampler is ``"nutpie-jax"``:
        a whole-record model has hundreds of parameters, and numba's one-off compilation of it
        took minutes here (278 s for seven Adult columns) against seconds for JAX (8 s).
    draws, tune, chains, seed, progress
        Sampling; one ``seed`` drives fitting and synthesis.

    Returns
    -------
    SynthesisResult
        ``synthetic``, ``choices`` (the table of column, role, detected type, model, reason),
        ``result`` (epsilon, per-record Lipschitz bounds, weights, diagnostics).

    Notes
    -----
    Privacy: ``result.epsilon`` is the local :math:`\varepsilon_x = 2\max_i\Delta_i` of the
    whole record (add/remove one record; range-restricted paper eq. 1-2), per synthetic
    dataset; the automatic choices are read from the data outside the accountant (see the
    module docstring).
    """
    check_frame(frame, "frame", min_rows=2)
    bad = [c for c in frame.columns if not isinstance(c, str)]
    if bad:
        raise TypeError(f"Column names of 'frame' must be strings; got {bad!r}.")
    keep = list(SequentialModel._names(keep, "keep"))
    missing = [c for c in keep if c not in frame.columns]
    if missing:
        raise ValueError(
            f"'keep' names column(s) {missing} that are not in 'frame' "
            f"(columns: {list(frame.columns)})."
        )
    if order is None:
        order = [c for c in frame.columns if c not in keep]
    order = SequentialModel._names(order, "order")
    missing = [c for c in order if c not in frame.columns]
    if missing:
        raise ValueError(
            f"'order' names column(s) {missing} that are not in 'frame' "
            f"(columns: {list(frame.columns)})."
        )
    if unmodelled not in ("keep", "marginal"):
        raise ValueError(f"'unmodelled' must be 'keep' or 'marginal'. Got {unmodelled!r}.")
    m = check_positive_int(m, "m")
    given = _check_models(frame, models)
    for c in frame.columns:  # missing values and unsupported dtypes, before choosing
        encode_column(frame[c], c)

    rest = [c for c in frame.columns if c not in order and c not in keep]
    marginal = rest if unmodelled == "marginal" else []
    idle = [c for c in given if c not in order and c not in marginal]
    if idle:
        raise ValueError(
            f"'models' gives a model for column(s) {idle}, which are not synthesized; add them "
            f"to 'order' (or use unmodelled='marginal')."
        )
    kept = keep + ([] if unmodelled == "marginal" else rest)
    rows, specs = [], {}
    for col in [*marginal, *order]:
        conditioned = col in order and (bool(kept) or bool(marginal) or order.index(col) > 0)
        auto = choose_model(frame[col], col, conditioned=conditioned)
        if col in given:
            spec, reason = given[col], "given by the user"
        else:
            spec, reason = auto.model, auto.reason
        specs[col] = spec
        role = "marginal" if col in marginal else "synthetic"
        rows.append((col, role, auto.detected, _model_name(spec), reason))
    for col in kept:
        rows.append((col, "kept", choose_model_type(frame[col], col), "-", "released as given"))
    tr = dict(transforms or {})
    for col, spec in specs.items():
        name = spec if isinstance(spec, str) else ""
        if col not in tr and name in LOG_SCALE:
            tr[col] = "log1p"
    choices = pd.DataFrame(rows, columns=["column", "role", "detected", "model", "reason"])
    choices["as_predictor"] = [_as_predictor(frame, c, tr, specs.get(c)) for c in choices.column]
    choices = choices.set_index("column").loc[list(frame.columns)].reset_index()

    model = SequentialModel(
        order,
        {c: specs[c] for c in [*marginal, *order]},
        keep=keep,
        unmodelled=unmodelled,
        transforms=tr,
    )
    rng = as_generator(seed)
    fit_seed, synth_seed = (int(s) for s in rng.integers(0, 2**31 - 1, size=2))
    result = PseudoPosterior(
        model, scale, shift, target_epsilon=target_epsilon, sampler=sampler
    ).fit(frame, draws=draws, tune=tune, chains=chains, seed=fit_seed, progress=progress)
    frames = result.synthesize_datasets(m, seed=synth_seed)
    return SynthesisResult(frames[0] if m == 1 else frames, choices, result, model)


def choose_model_type(series: pd.Series, column: str) -> str:
    """The detected type of a column (as in :func:`choose_model`), for the choices table."""
    return choose_model(series, column).detected


def _as_predictor(frame: pd.DataFrame, col: str, transforms: Mapping, spec) -> str:
    t = transforms.get(col)
    if t == "codes":
        return "integer codes"
    if isinstance(t, tuple):
        return f"(x - {t[0]:g}) / {t[1]:g}"
    if t is not None:
        return f"{t}(x)"
    s = frame[col]
    numeric = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
    if numeric and not (spec is not None and categorical_spec(spec)):
        return "as given"
    _, info = encode_column(s, col, as_categorical=True) if numeric else encode_column(s, col)
    return f"one-hot, reference {info.levels[0]!r}"
