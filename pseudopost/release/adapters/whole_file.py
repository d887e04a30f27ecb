r"""A whole file released from a spec: the pseudo posterior on every column, codes, rules and all.

The same all-or-nothing folder, manifest, ledger and report as every release; the mechanism is
the risk-weighted pseudo posterior on a whole-file model
(:class:`~pseudopost.models.file.FileModel`, what :func:`pseudopost.synthesize` runs). Spec
layout (``examples/slid_file.toml``, ``examples/adult_file.toml``)::

    [data]
    path = "../data/slid.csv"         # CSV, Parquet, SPSS .sav or Stata .dta

    [mechanism]
    name = "whole_file"
    scale = 1.0                       # c in alpha = clip(c (1 - r) + g, 0, 1)
    shift = 0.0                       # g
    weight_floor = 0.5                # every level keeps >= this share of its weighted share
                                      # (default 0.5, as pseudopost.synthesize)
    floor_cost = true                 # also fit without the floor: its cost in epsilon
    rake_min_weight = 2000            # rake weights down to the data's level shares, keeping
                                      # a total weight of at least this (default: no raking,
                                      # as pseudopost.synthesize; above the record count: none)
    part_rake = true                  # each categorical part's weights lowered inside it to
                                      # keep its level shares (default true, as synthesize)
    # censor_epsilon = 4.0            # global DP: each part censored, sum of B_k = 2
                                      # (pseudopost.synthesize's censor_epsilon)

    [file]
    order = ["age", "sex", ...]       # visit sequence (default: the file's column order)
    keep = []                         # released as given
    drop = []                         # left out
    rules = ["wages is missing when employed == 'no'"]   # or tables {column, value, when}
    structural_zeros = ["marital == 'married' and age < 16"]
    interactions = [["sex", "marital"]]
    sample = 2000                     # optional: synthesize a random sample of the records
    structure_epsilon = 1.0           # the structure stage's budget (default 1; "none": read
                                      # bounds, bins and spikes from the data, not covered)

    [file.columns.age]
    bounds = [16, 99]                 # a codebook's valid range: kept, no budget spent on it
                                      # ([16, inf]: "16 and over", the upper end DP)

    [file.columns.sex]
    levels = ["female", "male"]       # a codebook's answer categories: no budget spent on them
                                      # (else the structure stage selects the levels, DP)

    [file.columns.wages]              # one table per column that needs one
    model = "lognormal"               # a registry name, or "auto"
    codes = [-8, -9]                  # missing codes, kept apart from values
    spikes = [0]                      # point masses
    transform = "log"                 # how later columns see it: log | log1p | [centre, scale]
    knots = [10, 20, 40]              # public spline knots (original scale)
    predictors = ["age", "sex"]       # its row of the predictor matrix
    grid = {step = 0.01, digits = 2}  # public recording precision (synthetic values snapped)
    # grid = {step = 1, bounds = [0, 99]}  # with a public range: modelled over its points
    # grid = {values = [114, 401, 594]}  # the listed amounts it takes: modelled over them
    heaps = [100, 50]                 # multiples of the grid step where answers heap
    # bins = [0, 10, 100, 1000]       # public bin edges: a histogram density (binned)
    # shift_only = true               # grid/bins: predictors shift only (default: location-scale)
    # uniform_in_bins = true          # bins: uniform inside each (default: the grid points' shares)

    [file.columns.expersq]
    derived = "exper ** 2"            # a codebook's definition: computed, not modelled

    [file.columns.occ10]
    parent = "occrecode"              # classified within (or assigned from) that column

    [sampling]                        # default: pseudopost.synthesize's (2 x 250 after 100)
    draws = 500
    tune = 500
    chains = 2
    seed = 2026

    [budget]
    total_epsilon = 200.0
    max_epsilon = 60.0                # most one synthetic dataset may cost

An SPSS or Stata file's codebook supplies its missing codes (under ``codes``) and its labels;
each synthetic dataset is also written back in the input's format with the same labels and
missing-value definitions (``synthetic-j.sav``). The guarantee is the pseudo posterior's (the
local :math:`\varepsilon_x = 2\max_i\Delta_i` of the whole record, per synthetic dataset; m
datasets cost :math:`m\varepsilon`), and the report adds, per column, the real and synthetic
shares of each missing code and spike, the number of synthetic records breaking a rule or a
structural zero (zero by construction), and the measures agencies use with synthpop's
definitions (S_pMSE, table utility, repU and DiSCO; :mod:`pseudopost.evaluate`).

**The structure stage** (:mod:`pseudopost.mechanisms.structure`, as in
:func:`pseudopost.synthesize`) runs once per release, before the model is built, on the records
the mechanism fits (after ``file.sample``), seeded by ``np.random.default_rng([seed, 7])`` (the
same spec and data give the same structure in ``validate``, the release and ``account``):
every synthesized numeric column with no declared model, grid or bins gets its
integer-ness, its support (unless ``bounds`` declares a codebook range), a zero spike and its
bins from pure epsilon-DP releases of the budget ``file.structure_epsilon``; the structure's
declarations go under the spec's own, and a value beyond a DP bound enters the later
columns' designs as the bound and is censored into its own column's outermost inner bin or
left out of its model (the file model's ``truncate``). The release's statement carries ``structure_epsilon`` (charged once: ``m * epsilon +
structure_epsilon``), and ``privacy.json`` and the report record the stage column by column.
``structure_epsilon = "none"`` (or ``false``) reads these choices from the data instead, which
the statement flags as not covered.

**Read once, planned once**: the adapter's plan (:meth:`WholeFileAdapter.plan`) runs the
structure stage and builds the file model's plan of the coded records once, from the input as
read with its codebook; the release's spec carries it (``spec.loaded``) to the fit (which
prepares those very records: the plan is reused), the measures, the written SPSS/Stata files
and ``account``. A spec without it (a direct call with a frame) has it built there.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from pseudopost.mechanisms.structure import STRUCTURE_EPSILON, StructureWarning
from pseudopost.models.file import FileModel
from pseudopost.models.file.categories import check_levels, with_levels
from pseudopost.models.rules import named_levels
from pseudopost.release import report
from pseudopost.release.adapters.base import AccountResult, Produced
from pseudopost.release.adapters.pseudo_posterior import (
    PseudoPosteriorAdapter,
    kept_draws,
    load_fit,
)
from pseudopost.release.errors import SpecError
from pseudopost.release.files import say
from pseudopost.release.measures import Measures
from pseudopost.release.schema import ReleaseInput, ReleaseSpec, Schema, fail
from pseudopost.release.verdicts import verdicts

__all__ = ["WholeFileAdapter", "WholeFileSettings"]

_COLUMN_KEYS = (
    "model", "codes", "spikes", "transform", "knots", "predictors", "grid", "heaps", "bins",
    "derived", "shift_only", "bounds", "uniform_in_bins", "parent", "levels",
)  # fmt: skip
_RULE_TEXT = "a list of rules: strings, or tables {column = ..., value = ..., when = ...}"


def _list(key: str, value: Any) -> list:
    if not isinstance(value, list):
        raise fail(key, value, "a list", f"write {key} = [...].")
    return value


_list.expected = "a list"  # type: ignore[attr-defined]


def _table(key: str, value: Any) -> dict:
    if not isinstance(value, dict):
        raise fail(key, value, "a table", f"write [{key}] or {key} = {{...}}.")
    return value


_table.expected = "a table"  # type: ignore[attr-defined]

_STRUCTURE_TEXT = 'a number > 0, or "none" (or false) to read the structure from the data'


def _structure_epsilon(key: str, value: Any) -> float | None:
    """``file.structure_epsilon``: a finite number > 0, or ``"none"``/``false`` (no stage)."""
    if value is False or (isinstance(value, str) and value.strip().lower() == "none"):
        return None
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not (ok and np.isfinite(value) and value > 0):
        raise fail(key, value, _STRUCTURE_TEXT, f"e.g. {key} = 1.0.")
    return float(value)


_structure_epsilon.expected = _STRUCTURE_TEXT  # type: ignore[attr-defined]

#: what the statement says when the structure stage is off (``structure_epsilon = "none"``)
_NOT_COVERED = (
    "the file's structure (bounds, bins, spikes, levels, families) was read from the data "
    'outside the budget (file.structure_epsilon = "none"): not covered'
)


@dataclass(frozen=True)
class WholeFileSettings:
    """The ``[mechanism]``, ``[file]`` and ``[sampling]`` sections, checked."""

    declarations: dict[str, Any]
    options: dict[str, Any]
    sample: int | None
    draws: int
    tune: int
    chains: int
    seed: int
    workers: int | None
    max_epsilon: float
    #: the structure stage's budget (None: the choices are read from the data, not covered)
    structure_epsilon: float | None = STRUCTURE_EPSILON
    #: codebook valid ranges ``{column: (low, high)}`` (``[file.columns.X] bounds``)
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: codebook answer categories ``{column: levels}`` (``[file.columns.X] levels``): the
    #: column becomes a categorical of these levels, which the structure stage then does not
    #: select (no budget)
    levels: dict[str, tuple] = field(default_factory=dict)


@dataclass
class WholeFileProduced(Produced):
    """A whole-file release's :class:`Produced` with its structure stage: ``structure`` (None
    when ``structure_epsilon = "none"``); the statement carries the stage's epsilon."""

    structure: Any = None
    #: the real file's (min, max) per numeric column, kept for the report's flags (never
    #: released: a flag names the column and the side only)
    real_ranges: dict = field(default_factory=dict)

    @property
    def statement(self):
        statement = self.result.privacy_statement
        if self.structure is None:
            return replace(statement, assumptions=(*statement.assumptions, _NOT_COVERED))
        return replace(
            statement,
            structure_epsilon=self.structure.epsilon,
            structure_delta=self.structure.spent_delta,
        )


@dataclass(frozen=True)
class _Structured:
    """The structure stage of one release: the :class:`~pseudopost.mechanisms.structure.
    Structure` (None when off), the records the mechanism fits (coded into the support) and
    the declarations with the structure's merged under the spec's own."""

    structure: Any
    frame: pd.DataFrame
    declarations: dict[str, Any]
    #: the stage's warnings (a support that is a guess), said with the fit's and in the report
    warnings: tuple[str, ...] = ()


class _PlannedFileModel(FileModel):
    """A :class:`~pseudopost.models.file.FileModel` that plans the release's coded records once:
    preparing that very frame again (the mechanism's fit prepares its data) returns that plan."""

    def __init__(self, declarations, frame: pd.DataFrame) -> None:
        super().__init__(declarations)
        self._planned_frame = frame
        self._planned = super().prepare(frame)

    def prepare(self, data):
        if data is self._planned_frame:
            return self._planned
        return super().prepare(data)


@dataclass(frozen=True)
class _Planned:
    """What a whole-file release builds once (:meth:`WholeFileAdapter.plan`): the structure
    stage (``structured``) and the file model with its plan of the coded records."""

    structured: _Structured
    model: _PlannedFileModel

    @property
    def prepared(self):
        """The model's prepared records (``FilePrepared``, with its ``plan``)."""
        return self.model._planned


def _bounds(key: str, value: Any) -> tuple[float, float]:
    """``[low, high]``, low < high; one end may be open (TOML's ``inf``: ``[16, inf]`` for "16
    and over"), the other then estimated by the structure stage."""
    ok = (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
        and not any(np.isnan(v) for v in value)
        and (np.isfinite(value[0]) or np.isfinite(value[1]))
        and value[0] < value[1]
    )
    if not ok:
        raise fail(key, value, "a list [low, high] of two numbers, low < high (one end may be "
                   "inf or -inf, not both)",
                   f"write {key} = [16, 99] (the codebook's valid range), or [16, inf] for "
                   "'16 and over'.")  # fmt: skip
    return float(value[0]), float(value[1])


def _levels(key: str, value: Any) -> tuple:
    """A column's declared answer categories (:func:`~pseudopost.models.file.categories.
    check_levels`), refused as a spec error naming ``key``. Not booleans: a data file's
    true/false column is read as booleans, whose levels its dtype declares."""
    try:
        if isinstance(value, list) and any(isinstance(v, bool) for v in value):
            raise ValueError(value)
        return check_levels({key: value})[key]
    except ValueError:
        raise fail(key, value, "a non-empty list of distinct strings or numbers",
                   f'write {key} = ["Private", "Self-emp-inc", ...] (the codebook\'s answer '
                   "categories).") from None  # fmt: skip


def _column_tables(columns: Mapping[str, Any]) -> dict[str, dict]:
    """``[file.columns.X]`` tables -> the declarations' per-column mappings."""
    names = ("models", "missing_codes", "spikes", "transforms", "knots", "pm", "grid", "heaps")
    out: dict[str, Any] = {k: {} for k in (*names, "bins")}
    out["shift_only"] = []
    out["uniform_in_bins"] = []
    out["bounds"] = {}
    out["levels"] = {}
    out["derived"] = {}
    out["hierarchy"] = {}
    for col, table in columns.items():
        key = f"file.columns.{col}"
        if not isinstance(table, dict):
            raise fail(key, table, "a table of column settings", f"write [{key}].")
        unknown = sorted(set(table) - set(_COLUMN_KEYS))
        if unknown:
            raise fail(
                f"{key}.{unknown[0]}", table[unknown[0]], f"one of the keys {list(_COLUMN_KEYS)}",
                f"remove or rename '{unknown[0]}'.",
            )  # fmt: skip
        if "model" in table:
            if not isinstance(table["model"], str):
                raise fail(f"{key}.model", table["model"], "a model name", 'e.g. "lognormal".')
            out["models"][col] = table["model"]
        for name, target in (("codes", "missing_codes"), ("spikes", "spikes"),
                             ("heaps", "heaps"), ("bins", "bins")):  # fmt: skip
            if name in table:
                out[target][col] = _list(f"{key}.{name}", table[name])
        if "knots" in table:  # a list, or {at = [...], columns = [...]}
            k = table["knots"]
            if not isinstance(k, (list, dict)):
                raise fail(f"{key}.knots", k, "a list, or a table {at = [...], columns = [...]}",
                           f"write {key}.knots = [...].")  # fmt: skip
            out["knots"][col] = k
        if "transform" in table:
            t = table["transform"]
            out["transforms"][col] = tuple(t) if isinstance(t, list) else t
        if "predictors" in table:
            preds = _list(f"{key}.predictors", table["predictors"])
            if not all(isinstance(p, str) and p for p in preds):
                raise fail(f"{key}.predictors", preds, "a list of column names", "")
            out["pm"][col] = preds
        if "grid" in table:
            out["grid"][col] = _table(f"{key}.grid", table["grid"])
        for flag in ("shift_only", "uniform_in_bins"):
            if flag in table:
                if not isinstance(table[flag], bool):
                    raise fail(f"{key}.{flag}", table[flag], "true or false",
                               f"write {key}.{flag} = true.")  # fmt: skip
                if table[flag]:
                    out[flag].append(col)
        if "parent" in table:
            if not isinstance(table["parent"], str) or not table["parent"]:
                raise fail(f"{key}.parent", table["parent"], "a column name",
                           'e.g. parent = "occrecode" (the group it is classified within).')  # fmt: skip
            out["hierarchy"][col] = table["parent"]
        if "derived" in table:
            if not isinstance(table["derived"], str) or not table["derived"].strip():
                raise fail(f"{key}.derived", table["derived"], "an expression over the other "
                           "columns", 'e.g. derived = "exper ** 2".')  # fmt: skip
            out["derived"][col] = table["derived"]
        if "levels" in table:
            out["levels"][col] = _levels(f"{key}.levels", table["levels"])
        if "bounds" in table:
            out["bounds"][col] = _bounds(f"{key}.bounds", table["bounds"])
            declared = [k for k in ("model", "grid", "bins") if k in table]
            if declared:
                raise fail(
                    f"{key}.bounds", table["bounds"],
                    f"the valid range of a column the structure stage models (this one declares "
                    f"'{declared[0]}')",
                    "a declared grid takes its range as grid = {step = ..., bounds = [...]}; "
                    "bins are their own range; or remove the model.",
                )  # fmt: skip
    return out


class WholeFileAdapter(PseudoPosteriorAdapter):
    """The pseudo posterior on a whole file (module docstring)."""

    name = "whole_file"
    missing_cells = True
    sections: ClassVar[Mapping[str, Schema]] = {
        "mechanism": {
            "name": (True, "str"),
            "scale": (False, "nonnegfloat"),
            "shift": (False, "float"),
            "normalisation": (False, "str"),
            "weight_floor": (False, "nonnegfloat"),
            "rake_min_weight": (False, "nonnegfloat"),
            "part_rake": (False, "bool"),
            "floor_cost": (False, "bool"),
            "target_epsilon": (False, "posfloat"),
            "censor_epsilon": (False, "posfloat"),
            "rtol": (False, "posfloat"),
            "max_refits": (False, "posint"),
            "risk_fit": (False, "str"),
            "weighted_fit": (False, "str"),
        },
        "file": {
            "order": (False, "list[str]"),
            "keep": (False, "list[str]"),
            "drop": (False, "list[str]"),
            "rules": (False, _list),
            "structural_zeros": (False, _list),
            "interactions": (False, _list),
            "max_levels": (False, "posint"),
            "sample": (False, "posint"),
            "structure_epsilon": (False, _structure_epsilon),
            "columns": (False, _table),
        },
        "sampling": {
            "draws": (False, "posint"),
            "tune": (False, "nonnegint"),
            "chains": (False, "posint"),
            "seed": (True, "nonnegint"),
            "workers": (False, "posint"),
        },
    }
    required = ("mechanism", "sampling")
    hints: ClassVar[Mapping[str, str]] = {
        "model": "a whole file declares its columns under [file.columns.NAME]",
        "frontier": "[frontier] chooses the weights of a single-outcome pseudo posterior release; "
        "a whole-file release cannot honour it (pp.evaluate.frontier refuses whole-file fits): "
        "set mechanism.scale or target_epsilon instead",
        "release.seed": "the seed goes under [sampling]",
    }

    # ------------------------------------------------------------------ spec
    def parse(self, sections: Mapping[str, Mapping[str, Any]]) -> WholeFileSettings:
        from pseudopost.models.file import Declarations

        mech, smp, fil = sections["mechanism"], sections["sampling"], sections.get("file", {})
        options = {
            k: mech[k]
            for k in ("scale", "shift", "normalisation", "weight_floor", "floor_cost",
                      "target_epsilon", "rtol", "max_refits", "risk_fit", "rake_min_weight",
                      "weighted_fit", "part_rake", "censor_epsilon")
            if k in mech
        }  # fmt: skip
        from pseudopost.mechanisms.pseudo_posterior.core import (
            FILE_CHAINS,
            FILE_DRAWS,
            FILE_PART_RAKE,
            FILE_RAKE_MIN_WEIGHT,
            FILE_RISK_FIT,
            FILE_TUNE,
            FILE_WEIGHT_FLOOR,
            FILE_WEIGHTED_FIT,
            RISK_FITS,
            WEIGHTED_FITS,
        )

        # the risk step, weight floor and sampling as pseudopost.synthesize's defaults
        options.setdefault("risk_fit", FILE_RISK_FIT)
        options.setdefault("weighted_fit", FILE_WEIGHTED_FIT)
        options.setdefault("weight_floor", FILE_WEIGHT_FLOOR)
        options.setdefault("rake_min_weight", FILE_RAKE_MIN_WEIGHT)
        options.setdefault("part_rake", FILE_PART_RAKE)
        if options["risk_fit"] not in RISK_FITS:
            raise fail("mechanism.risk_fit", options["risk_fit"], f"one of {RISK_FITS}",
                       "'laplace' (default) or 'nuts'.")  # fmt: skip
        if options["weighted_fit"] not in WEIGHTED_FITS:
            raise fail("mechanism.weighted_fit", options["weighted_fit"],
                       f"one of {WEIGHTED_FITS}", "'imh' (default) or 'nuts'.")  # fmt: skip
        if "weight_floor" in options and options["weight_floor"] > 1:
            raise fail("mechanism.weight_floor", options["weight_floor"], "a number in [0, 1]",
                       "e.g. 0.5.")  # fmt: skip
        cols = _column_tables(fil.get("columns", {}))
        try:
            decl = Declarations.from_arguments(
                order=fil.get("order"),
                keep=fil.get("keep", ()),
                drop=fil.get("drop", ()),
                rules=fil.get("rules", ()),
                structural_zeros=fil.get("structural_zeros", ()),
                interactions=[
                    tuple(p) if isinstance(p, list) else p for p in fil.get("interactions", ())
                ],
                models=cols["models"],
                missing_codes=cols["missing_codes"],
                spikes=cols["spikes"],
                transforms=cols["transforms"],
                knots=cols["knots"],
                derived=cols["derived"],
                hierarchy=cols["hierarchy"],
                predictor_matrix=cols["pm"],
                grid=cols["grid"],
                heaps=cols["heaps"],
                bins=cols["bins"],
                max_levels=fil.get("max_levels", 10),
                shift_only=cols["shift_only"],
                uniform_in_bins=cols["uniform_in_bins"],
            )
        except (TypeError, ValueError) as exc:
            raise SpecError(f"spec section '[file]': {exc} Fix: correct the declaration.") from None
        structure_eps = fil.get("structure_epsilon", STRUCTURE_EPSILON)
        if structure_eps is None and cols["bounds"]:
            col = next(iter(cols["bounds"]))
            raise fail(
                f"file.columns.{col}.bounds", list(cols["bounds"][col]),
                "bounds kept by the structure stage, which file.structure_epsilon = \"none\" "
                "turns off",
                "give file.structure_epsilon a number (the default is 1) or remove the bounds.",
            )  # fmt: skip
        m = sections["release"].get("m", 1)
        draws, chains = smp.get("draws", FILE_DRAWS), smp.get("chains", FILE_CHAINS)
        if m > draws * chains:
            raise fail("release.m", m, f"at most the {draws * chains} posterior draws",
                       "lower release.m or raise sampling.draws.")  # fmt: skip
        bud = sections["budget"]
        if bud["max_epsilon"] * m + (structure_eps or 0.0) > bud["total_epsilon"]:
            raise fail(
                "budget.max_epsilon", bud["max_epsilon"],
                f"m x max_epsilon + file.structure_epsilon <= budget.total_epsilon = "
                f"{bud['total_epsilon']} (m = {m}, structure_epsilon = {structure_eps or 0:g})",
                "raise total_epsilon, lower max_epsilon or release fewer datasets.",
            )  # fmt: skip
        target = options.get("target_epsilon")
        if target is not None and target > bud["max_epsilon"]:
            raise fail("mechanism.target_epsilon", target,
                       f"at most budget.max_epsilon = {bud['max_epsilon']}", "")  # fmt: skip
        censor = options.get("censor_epsilon")
        if censor is not None and (target is not None or structure_eps is None
                                   or censor > bud["max_epsilon"]):  # fmt: skip
            raise fail(
                "mechanism.censor_epsilon", censor,
                f"at most budget.max_epsilon = {bud['max_epsilon']}, without "
                "mechanism.target_epsilon and with a structure stage",
                "censoring sets a global epsilon per part (guide: Whole files), which needs "
                "the file's structure covered (file.structure_epsilon a number).",
            )  # fmt: skip
        return WholeFileSettings(
            declarations=_declared(decl),
            options=options,
            sample=fil.get("sample"),
            draws=draws,
            tune=smp.get("tune", FILE_TUNE),
            chains=chains,
            seed=smp["seed"],
            workers=smp.get("workers"),
            max_epsilon=bud["max_epsilon"],
            structure_epsilon=structure_eps,
            bounds=cols["bounds"],
            levels=cols["levels"],
        )

    def cap(self, spec: ReleaseSpec) -> tuple[float, float]:
        """``m * max_epsilon`` plus the structure stage's budget (paid once); the stage's delta
        (partition selection of text columns' levels) once the data have been planned
        (:meth:`plan` runs the stage), else none."""
        eps = spec.m * spec.settings.max_epsilon + (spec.settings.structure_epsilon or 0.0)
        planned = _carried(spec)
        if planned is not None:
            structured = planned.structured
        else:
            structured = self.__dict__.get("_structures", {}).get(_spec_key(spec))
        structure = None if structured is None else structured.structure
        return eps, 0.0 if structure is None else float(structure.delta)

    def describe(self, spec: ReleaseSpec) -> str:
        return f"whole file of {len(spec.columns) or 'all'} columns"

    # ------------------------------------------------------------------ data
    def _declarations(self, spec: ReleaseSpec, structured: _Structured | None, book):
        """The file model's declarations: the spec's, with the structure stage's merged under
        them (``structured``, as :func:`pseudopost.synthesize` merges them), and the input's
        codebook ``book`` (None: none)."""
        from pseudopost.models.file import Declarations

        kw = dict(spec.settings.declarations if structured is None else structured.declarations)
        if book is not None:
            kw["codebook"] = book
        return Declarations.from_arguments(**kw)

    def structure_for(self, spec: ReleaseSpec, data: pd.DataFrame) -> _Structured:
        """The structure stage on the records the mechanism fits (``_frame``), the same for the
        same spec and data (seeded by ``default_rng([seed, 7])``; module docstring): the
        free columns are those synthesized with no declared model, grid or bins, exactly as in
        :func:`pseudopost.synthesize`. The one the spec carries for ``data`` if any, else run
        now and remembered per spec for :meth:`build_mechanism`."""
        planned = _carried(spec, data)
        if planned is not None:
            return planned.structured
        return self._structure(spec, data, _book(spec, data))

    def _structure(self, spec: ReleaseSpec, data: pd.DataFrame, book) -> _Structured:
        """:meth:`structure_for` run now, with the input's codebook ``book`` (None: none)."""
        from pseudopost.mechanisms.structure import (
            bounds_not_numeric,
            estimate_structure,
            parent_candidates,
        )
        from pseudopost.models.file.derived import check_derived, derive

        st = spec.settings
        frame = self._frame(spec, data)
        kw = dict(st.declarations)
        derived = kw.get("derived", {})
        if derived:  # the definitions hold on the real records, before any work
            named = {*kw.get("drop", ()), *derived}
            check_derived(frame, derived, [c for c in frame.columns if c not in named])
        if st.structure_epsilon is None:
            out = _Structured(None, frame, kw)
        else:
            found = bounds_not_numeric(frame, st.bounds)
            if found is not None:  # before any work, as pseudopost.synthesize refuses them
                col, what = found
                raise fail(
                    f"file.columns.{col}.bounds", list(st.bounds[col]),
                    f"the valid range of a numeric column (integer or float values), but "
                    f"column '{col}' is {what}",
                    f"remove bounds from [file.columns.{col}] (a text column's levels are "
                    f"declared by levels = [...]).",
                )  # fmt: skip
            ranges = dict(book.valid_ranges) if book is not None else {}
            ranges.update(st.bounds)
            named = set(kw.get("keep", ())) | set(kw.get("drop", ())) | set(derived)
            order = kw.get("order")
            columns = (
                list(order) if order is not None else [c for c in frame.columns if c not in named]
            )
            declared = {c for c, v in kw.get("models", {}).items() if str(v).lower() != "auto"}
            declared |= set(kw.get("grid", {})) | set(kw.get("bins", {}))
            free = [c for c in columns if c in frame.columns and c not in declared]
            codes = _codes(book, kw.get("missing_codes", {}))
            parents = parent_candidates(
                frame, [c for c in columns if c in frame.columns], list(kw.get("keep", ())),
                declared=list(declared), hierarchy=kw.get("hierarchy"),
                rules=kw.get("rules", ()), structural_zeros=kw.get("structural_zeros", ()),
                predictor_matrix=kw.get("predictor_matrix"),
                interactions=kw.get("interactions", ()), order_declared=order is not None,
            )  # fmt: skip
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", StructureWarning)
                structure = estimate_structure(
                    frame, free, missing_codes=codes, spikes=kw.get("spikes", {}),
                    bounds=ranges, structure_epsilon=st.structure_epsilon,
                    named_levels=named_levels(kw.get("rules", ()),
                                              kw.get("structural_zeros", ())),
                    rng=np.random.default_rng([spec.seed, 7]),
                    declared_knots=tuple(kw.get("knots", {})),
                    uniform_in_bins=tuple(kw.get("uniform_in_bins", ())), parents=parents,
                )  # fmt: skip
            said = tuple(str(w.message) for w in caught
                         if issubclass(w.category, StructureWarning))  # fmt: skip
            for w in caught:  # others pass through as they were
                if not issubclass(w.category, StructureWarning):
                    warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
            found = structure.declarations()
            kw["hierarchy"] = {**found["hierarchy"], **kw.get("hierarchy", {})}
            kw["grid"] = {**found["grid"], **kw.get("grid", {})}
            kw["bins"] = {**found["bins"], **kw.get("bins", {})}
            kw["knots"] = {**found["knots"], **kw.get("knots", {})}
            kw["heaps"] = {**found["heaps"], **kw.get("heaps", {})}
            kw["value_counts"] = found["value_counts"]
            spikes = {c: list(v) for c, v in kw.get("spikes", {}).items()}
            for c, v in found["spikes"].items():
                spikes[c] = [*spikes.get(c, ()), *v]
            kw["spikes"] = spikes
            coded = structure.apply(frame, structure.untouched(codes, spikes), numeric=False)
            kw["truncate"] = structure.supports()
            if derived:  # recomputed from their inputs as the structure stage coded them
                coded = derive(coded, derived, {c: frame[c].dtype for c in derived})
            out = _Structured(structure, coded, kw, said)
        cache = self.__dict__.setdefault("_structures", {})
        if len(cache) > 16:
            cache.clear()
        cache[_spec_key(spec)] = out
        return out

    def _frame(self, spec: ReleaseSpec, frame: pd.DataFrame) -> pd.DataFrame:
        """The records released: all of them, or a seeded sample (``file.sample``), with the
        declared levels' columns as categoricals (:func:`~pseudopost.models.file.categories.with_levels`)."""
        st = spec.settings
        if st.levels:
            frame = with_levels(frame, st.levels, st.declarations.get("missing_codes", {}))
        k = st.sample
        if k is None or k >= len(frame):
            return frame
        rng = np.random.default_rng(np.random.SeedSequence(spec.seed).spawn(3)[2])
        idx = np.sort(rng.choice(len(frame), size=k, replace=False))
        return frame.iloc[idx].reset_index(drop=True)

    def check_data(self, spec: ReleaseSpec, frame: pd.DataFrame) -> None:
        return None  # checked with the whole plan in check_build

    def resolve(self, spec: ReleaseSpec, frame: pd.DataFrame) -> ReleaseSpec:
        """The released columns (the file's less dropped ones); disclosure keys default to the
        first two released columns and the sensitive column to the last."""
        drop = set(spec.settings.declarations.get("drop", ()))
        cols = tuple(c for c in frame.columns if c not in drop)
        return replace(
            spec,
            released=cols,
            disclosure_keys=spec.disclosure_keys or cols[:2],
            disclosure_sensitive=spec.disclosure_sensitive or cols[-1],
        )

    def check_build(self, spec: ReleaseSpec, frame: pd.DataFrame) -> None:
        self.plan(spec, ReleaseInput(frame, _book(spec, frame)))

    def plan(self, spec: ReleaseSpec, data: ReleaseInput) -> _Planned:
        """The structure stage, then the file model and its plan of the coded records, built
        once from the input and its codebook (module docstring); a refusal is a
        :class:`SpecError`."""
        book = data.codebook if data.codebook is not None else _codebook(spec)
        try:
            structured = self._structure(spec, data.frame, book)
            decl = self._declarations(spec, structured, book)
            return _Planned(structured, _PlannedFileModel(decl, structured.frame))
        except SpecError:  # already names its spec key
            raise
        except (TypeError, ValueError) as exc:
            raise SpecError(
                f"data file {str(spec.data_path)!r}: {exc} Fix: correct the data or the [file] "
                "section."
            ) from None

    def _loaded(self, spec: ReleaseSpec, data: pd.DataFrame) -> ReleaseSpec:
        """``spec`` carrying ``data`` with their plan: as given when it does (a release), else
        with the codebook read and the plan built now."""
        if _carried(spec, data) is not None:
            return spec
        given = ReleaseInput(data, _book(spec, data))
        return replace(spec, loaded=replace(given, plan=self.plan(spec, given)))

    def _planned(self, spec: ReleaseSpec, data: pd.DataFrame) -> _Planned:
        """The plan the spec carries for ``data``, else built now."""
        return _carried(self._loaded(spec, data))

    def build_mechanism(self, spec: ReleaseSpec, structured: _Structured | None = None):
        """The mechanism on the file model with the structure stage's declarations
        (``structured``, else the planned model the spec carries, else the structure
        :meth:`structure_for` last gave for this spec)."""
        from pseudopost.mechanisms.pseudo_posterior.core import PseudoPosterior

        planned = _carried(spec) if structured is None else None
        if planned is not None:
            model = planned.model
        else:
            if structured is None:
                structured = self.__dict__.get("_structures", {}).get(_spec_key(spec))
                if structured is None:
                    raise RuntimeError(
                        "the whole-file mechanism needs its structure stage: call "
                        "structure_for(spec, data) (or fit_frame) first."
                    )
            model = FileModel(self._declarations(spec, structured, _book(spec)))
        st = spec.settings
        return PseudoPosterior(model, workers=st.workers, **st.options)

    # ------------------------------------------------------------------ produce
    fitting_what = "the whole file part by part"

    def fit(self, spec: ReleaseSpec, data: pd.DataFrame, progress: bool | None = None):
        """The fit on the structure stage's coded records (:meth:`fit_frame`) with the planned
        model (:meth:`plan`); the produced statement carries the stage's epsilon
        (:class:`WholeFileProduced`)."""
        spec = self._loaded(spec, data)
        structured = _carried(spec).structured
        for w in structured.warnings:
            say(f"warning: {w}")
        produced = super().fit(spec, data, progress=progress)
        produced.warnings = [*structured.warnings, *produced.warnings]
        ranges = _real_ranges(self._frame(spec, data))
        return WholeFileProduced(**vars(produced), structure=structured.structure,
                                 real_ranges=ranges)  # fmt: skip

    def synthesize(self, spec: ReleaseSpec, produced: Produced) -> list[pd.DataFrame]:
        """The m synthetic files; the report then flags every numeric column whose synthetic
        values leave the real range (:func:`_beyond_real_range`)."""
        out = super().synthesize(spec, produced)
        if isinstance(produced, WholeFileProduced):
            produced.warnings = [*produced.warnings, *_beyond_ranges(produced.real_ranges, out)]
        return out

    def fit_frame(self, spec: ReleaseSpec, data: pd.DataFrame) -> pd.DataFrame:
        """The released records (``_frame``) coded into the structure stage's support."""
        return self._planned(spec, data).structured.frame

    def mechanism_for(self, spec: ReleaseSpec):
        return self.build_mechanism(spec)

    def over_cap(self, spec, statement):
        err = super().over_cap(spec, statement)
        return type(err)(str(err).replace("mechanism.scale/shift", "mechanism.scale/weight_floor"))

    # ------------------------------------------------------------------ describe
    def measures(
        self, spec: ReleaseSpec, data: pd.DataFrame, synthetic: list[pd.DataFrame]
    ) -> Measures:
        """Status shares, rule and zero violations, S_pMSE (CART), table utility and
        repU/DiSCO, per synthetic dataset."""
        from pseudopost.evaluate import disclosure_measures, propensity_utility, utility_tables

        planned = self._planned(spec, data)
        real, coded = self._frame(spec, data), planned.structured.frame
        decl, plan = planned.model.declarations, planned.prepared.plan
        codes = {
            p.name: [float(c) for c in p.column.info.codes]
            for p in plan.plans
            if p.column.numeric and p.column.info.codes
        }
        cols = spec.columns
        shares, broken, prop, tabs, disc = [], [], [], [], []
        first: dict[str, pd.DataFrame] = {}
        for j, syn in enumerate(synthetic, start=1):
            shares.append(_status_shares(plan, coded, syn, j))
            broken.append(_violations(decl, syn, j))
            pu = propensity_utility(real[cols], syn[cols], method="cart", missing_codes=codes,
                                    nperms=20, seed=spec.seed + j)  # fmt: skip
            prop.append({"dataset": j, "pMSE": pu.pMSE, "S_pMSE": pu.S_pMSE,
                         "S_pMSE (synthpop's null)": pu.S_pMSE_synthpop})  # fmt: skip
            t = utility_tables(real[cols], syn[cols], tables="twoway", missing_codes=codes)
            if j == 1:
                first["twoway"] = t
                first["oneway"] = utility_tables(real[cols], syn[cols], tables="oneway",
                                                 missing_codes=codes)  # fmt: skip
            tabs.append({
                "dataset": j, "tables": len(t),
                "median S_pMSE": float(t["S_pMSE"].median()), "max S_pMSE": float(t["S_pMSE"].max()),
                "median pMSE": float(t["pMSE"].median()),
            })  # fmt: skip
            keys, target = list(spec.disclosure_keys), spec.disclosure_sensitive
            if keys and target:
                d = disclosure_measures(real[cols], syn[cols], keys, target, missing_codes=codes)
                disc.append({"dataset": j, "keys": ", ".join(keys), "target": target,
                             "repU": d.repU, "DiSCO": d.DiSCO, "UiO": d.UiO, "Dorig": d.Dorig,
                             "TCAP": d.TCAP})  # fmt: skip
        utility = {
            "missing codes and spikes: real and synthetic shares": pd.concat(shares),
            "rules and structural zeros: synthetic records breaking them": pd.DataFrame(
                [r for b in broken for r in b], columns=["dataset", "declaration", "violations"]
            ),
            "propensity score (S_pMSE, CART)": pd.DataFrame(prop),
            "two-way table utility": pd.DataFrame(tabs),
        }
        notes = {
            "missing codes and spikes: real and synthetic shares": (
                "Share of records of each column in each non-observed status (missing cell, "
                "declared code, spike), real against synthetic; for a column with declared "
                "heaps, also the share of records observed on each heap."
            ),
            "rules and structural zeros: synthetic records breaking them": (
                "Declared rules are imposed and structural zeros get no mass: every count must "
                "be 0."
            ),
            "propensity score (S_pMSE, CART)": (
                "synthpop's utility.gen: pMSE of a CART propensity model telling synthetic from "
                "real records, standardised by its permutation null (about 1: as close as a "
                "fresh sample); synthpop's printed null is half of it."
            ),
            "two-way table utility": (
                "synthpop's utility.tables: S_pMSE of every two-way table (numbers in 5 groups, "
                "missing cells and codes as levels of their own)."
            ),
            "disclosure": (
                "synthpop's disclosure(): repU (replicated uniques) and DiSCO (disclosive in "
                "synthetic, correct in original), in % of the real records, for the keys and "
                "target of [disclosure]."
            ),
        }
        beyond = [c for c, _ in _beyond_columns(_real_ranges(real[cols]), synthetic)]
        table = verdicts(
            [p["S_pMSE (synthpop's null)"] for p in prop], first.get("oneway"),
            first.get("twoway"), beyond, sum(int(r[2]) for b in broken for r in b),
            pd.DataFrame(disc) if disc else None,
        )  # fmt: skip
        return Measures(utility, pd.DataFrame(disc), notes, verdicts=table)

    def privacy_record(self, spec: ReleaseSpec, produced: Produced) -> dict[str, Any]:
        record = super().privacy_record(spec, produced)
        attrs = produced.result.datatree["privacy"].attrs
        record["weight_floor"] = float(attrs.get("weight_floor", 0.0))
        record["risk_fit"] = str(attrs.get("risk_fit", "nuts"))
        record["weighted_fit"] = str(attrs.get("weighted_fit", "nuts"))
        floor = attrs.get("epsilon_without_floor")
        record["epsilon_without_floor"] = None if floor is None else float(floor)
        record["weights_raised_by_floor"] = int(attrs.get("weights_raised_by_floor", 0))
        rake = float(attrs.get("rake_min_weight", -1.0))
        record["rake_min_weight"] = None if rake < 0 else rake
        record["weight_total_before_rake"] = float(attrs.get("weight_total_before_rake", 0.0))
        record["weight_total"] = float(attrs.get("weight_total", 0.0))
        record["raked_parts"] = int(attrs.get("raked_parts", 0))
        structure = getattr(produced, "structure", None)
        record["parts"] = _choices(produced, structure).to_dict(orient="records")
        se = produced.statement.structure_epsilon
        record["structure_epsilon"] = se
        record["structure_delta"] = produced.statement.structure_delta
        record["composition"] = (
            "basic: m synthetic datasets from m posterior draws cost m x epsilon, plus the "
            "structure stage's epsilon once (sequential composition)"
        )
        if structure is None:
            record["structure"] = {
                "budget": None, "epsilon": 0.0, "covered": False,
                "note": "file.structure_epsilon = \"none\": bounds, bins, spikes and families "
                        "were read from the data outside the budget (not covered)",
            }  # fmt: skip
            stage = {"stage": "structure read from the data", "epsilon": 0.0,
                     "note": "not covered (file.structure_epsilon = \"none\")"}  # fmt: skip
        else:
            record["structure"] = {**structure.to_dict(), "covered": True}
            record["structure_table"] = structure.table().to_dict(orient="records")
            stage = {
                "stage": "structure stage (integer-ness, bounds, zero spike, bins)",
                "epsilon": se,
                "note": "pure epsilon-DP, add/remove, once per release; real values beyond a "
                "DP bound enter later columns as the bound; their own column's model "
                "censors them into its outermost inner bin or leaves them out",
            }
        record["stages"] = [stage, *record.get("stages", [])]
        record["budget"] = {
            **record["budget"],
            "structure_epsilon": spec.settings.structure_epsilon,
        }
        return record

    def report_title(self, spec: ReleaseSpec) -> str:
        return f"pseudopost release: {spec.data_path.name} (whole file)"

    def report_parts(self, spec, produced, privacy) -> report.ReportParts:
        parts = super().report_parts(spec, produced, privacy)
        facts = dict(parts.facts)
        facts.pop("sensitive range", None)
        se = float(privacy.get("structure_epsilon") or 0.0)
        charged = facts.pop("epsilon charged (m x epsilon, basic composition)", None)
        if charged is not None:
            facts["epsilon charged (m x epsilon + structure epsilon)"] = charged
        structure = getattr(produced, "structure", None)
        facts["structure stage epsilon (once per release)"] = (
            f"{se:.4g}"
            if structure is not None
            else "none: structure read from the data (not covered)"
        )
        facts["weight floor"] = f"{privacy['weight_floor']:g}"
        facts["weights raised by the floor"] = str(privacy["weights_raised_by_floor"])
        if privacy.get("raked_parts"):
            facts["parts raked to the data's level shares (their own weights)"] = str(
                privacy["raked_parts"]
            )
        if privacy.get("rake_min_weight") is not None:
            facts["total weight (effective records), before and after raking"] = (
                f"{privacy['weight_total_before_rake']:,.0f} -> {privacy['weight_total']:,.0f} "
                f"(raked to the data's level shares, at least {privacy['rake_min_weight']:,.0f})"
            )
        facts["risk step's unweighted posterior"] = (
            "each part's Laplace approximation, importance-resampled where its Pareto k-hat "
            "allows, else its split-normal form (NUTS where the mode was not reached); sets "
            "the weights only"
            if privacy.get("risk_fit") == "laplace"
            else "NUTS"
        )
        facts["weighted (pseudo) posterior"] = (
            "independence Metropolis-Hastings from each part's Laplace approximation where it "
            "accepts enough proposals (NUTS elsewhere): exact MCMC"
            if privacy.get("weighted_fit") == "imh"
            else "NUTS"
        )
        if privacy.get("epsilon_without_floor") is not None:
            facts["epsilon without the floor (its cost)"] = (
                f"{privacy['epsilon_without_floor']:.4g}"
            )
        choices = _choices(produced, structure)
        before = [
            *parts.before,
            "<h2>Columns and their parts</h2>",
            report.note(
                "Each column's model, its parts (status and value, or one categorical over its "
                "levels) and the columns it is conditioned on. The choices are public."
            ),
            report.table(choices),
            "<h2>Structure stage</h2>",
        ]
        warnings = list(parts.warnings)
        if structure is None:
            before.append(report.note(
                "No structure stage (file.structure_epsilon = \"none\"): each numeric column's "
                "bounds, bins, spikes and family were read from the data outside the budget; "
                "the guarantee does not cover them."
            ))  # fmt: skip
            warnings.append("structure read from the data outside the budget: not covered")
        else:
            before += [
                report.note(
                    f"Before the mechanism, a structure stage of global {se:.4g}-DP (pure "
                    "epsilon, add/remove, charged once per release) chose each free numeric "
                    "column's integer-ness, support (bounds), zero spike and bins, and each free "
                    "text column's levels (partition selection, its delta "
                    f"{float(privacy.get('structure_delta') or 0.0):.3g}); a declared "
                    "(codebook) range costs nothing. A real value beyond a DP bound enters "
                    "the later columns as the bound and is censored into its own column's "
                    "outermost bin or left out of its model (truncated), so no synthetic value "
                    "piles on the bound, and every synthetic value lies in the support."
                ),
                report.table(structure.table()),
            ]
        return report.ReportParts(facts, before, parts.after, warnings, parts.warnings_title)

    def write_files(self, stage: Path, spec: ReleaseSpec, produced: Produced) -> list[str]:
        """``fit.nc`` (for ``account``) and, for SPSS/Stata input, each synthetic dataset in the
        input's format with its labels and missing-value definitions."""
        from pseudopost.formats import write_file

        names = super().write_files(stage, spec, produced)
        book = _book(spec)
        if book is not None and spec.data_format in ("sav", "dta"):
            for j, frame in enumerate(produced.synthetic, start=1):
                name = f"synthetic-{j}.{spec.data_format}"
                write_file(frame, stage / name, book)
                names.append(name)
        return names

    # ------------------------------------------------------------------ re-account
    def account(self, folder: Path, spec: ReleaseSpec, data: pd.DataFrame) -> AccountResult:
        r"""Recompute :math:`\varepsilon = 2\max_i \alpha_i \max_m |\sum_q r_{iq} f_q(x_i;
        \theta_{q,m})|` from the saved weighted draws (kept draws), weights and raked parts'
        factors :math:`r_{iq}` (``weights/part_factor``; 1 elsewhere) with the per-column
        accountant on the model planned from the spec and the data (:meth:`plan`)."""
        from pseudopost.fitting.columns import file_part_data
        from pseudopost.privacy.accountant import account
        from pseudopost.privacy.decomposition import Unrestricted
        from pseudopost.privacy.kernels.parts import PartAccountant

        tree = load_fit(folder / "fit.nc")
        planned = self._planned(spec, data)
        parts, pdata = file_part_data(planned.model, planned.prepared)
        acc = PartAccountant(parts, pdata)
        weights = tree["weights"]
        if "part_factor" in weights:
            factor = weights["part_factor"]
            acc = acc.with_factors({
                str(k): factor.sel(raked_part=k).to_numpy() for k in factor["raked_part"].values
            })  # fmt: skip
        alpha = weights["alpha"].to_numpy()
        res = account(acc, kept_draws(tree, acc.free_names), alpha, Unrestricted())
        return AccountResult(res.epsilon, float(tree["privacy"].attrs["epsilon"]), res.lipschitz)


def _real_ranges(real: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """(min, max) of every numeric column of the real file."""
    out = {}
    for c in real.columns:
        if pd.api.types.is_numeric_dtype(real[c]) and not pd.api.types.is_bool_dtype(real[c]):
            r = pd.to_numeric(real[c], errors="coerce")
            out[c] = (float(r.min()), float(r.max()))
    return out


def _beyond_real_range(real: pd.DataFrame, synthetic: list[pd.DataFrame]) -> list[str]:
    """A warning per numeric column whose synthetic values go below the real minimum or above
    the real maximum (inside the DP or declared support, but beyond the data): the column and
    the side only, for the data holder to declare its codebook range."""
    return _beyond_ranges(_real_ranges(real), synthetic)


def _beyond_ranges(ranges: Mapping, synthetic: list[pd.DataFrame]) -> list[str]:
    return [
        f"column {c!r}: synthetic values {' and '.join(sides)} (inside its support); declare "
        "the codebook's range (bounds) if they are implausible"
        for c, sides in _beyond_columns(ranges, synthetic)
    ]


def _beyond_columns(ranges: Mapping, synthetic: list[pd.DataFrame]) -> list[tuple[str, list]]:
    """Each column whose synthetic values leave its range, with the sides they leave by."""
    out = []
    for c, (lo, hi) in ranges.items():
        sides = set()
        for syn in synthetic:
            if c not in syn.columns:
                continue
            v = pd.to_numeric(syn[c], errors="coerce")
            if (v < lo).any():
                sides.add("below the real minimum")
            if (v > hi).any():
                sides.add("above the real maximum")
        if sides:
            out.append((c, sorted(sides)))
    return out


def _declared(decl) -> dict[str, Any]:
    """A Declarations' arguments (rules and zeros as their texts) for the settings."""
    return {
        "order": decl.order,
        "predictor_matrix": dict(decl.predictor_matrix),
        "models": dict(decl.models),
        "keep": decl.keep,
        "drop": decl.drop,
        "missing_codes": dict(decl.missing_codes),
        "spikes": dict(decl.spikes),
        "transforms": dict(decl.transforms),
        "knots": {
            c: {"at": list(k), "columns": list(decl.knot_columns[c])}
            if c in decl.knot_columns
            else list(k)
            for c, k in decl.knots.items()
        },
        "interactions": decl.interactions,
        "rules": tuple(r.text for r in decl.rules),
        "structural_zeros": tuple(z.text for z in decl.structural_zeros),
        "grid": {c: g.to_dict() for c, g in decl.grid.items()},
        "heaps": {c: list(h) for c, h in decl.heaps.items()},
        "bins": {c: list(b.edges) for c, b in decl.bins.items()},
        "max_levels": decl.max_levels,
        "shift_only": decl.shift_only,
        "uniform_in_bins": decl.uniform_in_bins,
        "derived": dict(decl.derived),
        "hierarchy": dict(decl.hierarchy),
    }


def _spec_key(spec: ReleaseSpec) -> tuple:
    return (spec.sha256, str(spec.data_path), spec.seed)


def _codes(book, missing_codes: Mapping[str, Any]) -> dict[str, list]:
    """The codebook's missing codes with the declared ones over them."""
    out = {c: list(v) for c, v in book.missing_codes.items()} if book is not None else {}
    out.update({c: list(v) if isinstance(v, (list, tuple)) else [v]
                for c, v in (missing_codes or {}).items()})  # fmt: skip
    return out


def _codebook(spec: ReleaseSpec):
    """The input's codebook (SPSS/Stata) read from the file, or None."""
    if spec.data_format not in ("sav", "dta"):
        return None
    from pseudopost.formats import read_file

    return read_file(spec.data_path)[1]


def _book(spec: ReleaseSpec, data: pd.DataFrame | None = None):
    """The input's codebook: the one read with the data the spec carries (when ``data`` is
    theirs, if given), else read from the file (:func:`_codebook`)."""
    loaded = spec.loaded
    if loaded is not None and loaded.codebook is not None:
        if data is None or loaded.frame is data:
            return loaded.codebook
    return _codebook(spec)


def _carried(spec: ReleaseSpec, data: pd.DataFrame | None = None) -> _Planned | None:
    """The plan the spec carries (for ``data`` when given: planned from that very frame)."""
    loaded = spec.loaded
    if loaded is None or not isinstance(loaded.plan, _Planned):
        return None
    if data is not None and loaded.frame is not data:
        return None
    return loaded.plan


def _status_shares(plan, real: pd.DataFrame, syn: pd.DataFrame, j: int) -> pd.DataFrame:
    from pseudopost.models.status import split_status

    rows = []
    for p in plan.plans:
        info = p.column.info
        rs, _, _ = split_status(real[p.name], info.codes, info.spikes)
        ss, _, _ = split_status(syn[p.name], info.codes, info.spikes)
        for s in range(1, len(info.levels)):
            r, y = float(np.mean(rs == s)), float(np.mean(ss == s))
            if r > 0 or y > 0:
                rows.append((j, p.name, info.levels[s], r, y))
        if p.heaps is not None:  # observed values on each declared heap
            _, rv, _ = split_status(real[p.name], info.codes, info.spikes)
            _, sv, _ = split_status(syn[p.name], info.codes, info.spikes)
            rl = np.where(rs == 0, p.heaps.labels(np.nan_to_num(rv)), -1)
            sl = np.where(ss == 0, p.heaps.labels(np.nan_to_num(sv)), -1)
            for h, name in enumerate(p.heaps.names):
                rows.append((j, p.name, name, float(np.mean(rl == h)), float(np.mean(sl == h))))
    return pd.DataFrame(rows, columns=["dataset", "column", "status", "real", "synthetic"])


def _violations(decl, syn: pd.DataFrame, j: int) -> list[tuple]:
    out = [(j, f"rule: {r.text}", int(r.violations(syn).sum())) for r in decl.rules]
    out += [(j, f"zero: {z.text}", int(z.violations(syn).sum())) for z in decl.structural_zeros]
    return out


def _choices(produced: Produced, structure) -> pd.DataFrame:
    """The file model's choices, their reasons annotated by the structure stage when there is
    one (as in ``pp.synthesize``'s ``choices``; the stage's own table is reported apart)."""
    result = produced.result
    choices = result.model.choices(result.prepared)
    if structure is None:
        return choices
    return structure.annotate(choices, result.prepared.plan)[list(choices.columns)]
