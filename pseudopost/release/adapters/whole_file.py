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
    floor_cost = true                 # also fit without the floor: its cost in epsilon

    [file]
    order = ["age", "sex", ...]       # visit sequence (default: the file's column order)
    keep = []                         # released as given
    drop = []                         # left out
    rules = ["wages is missing when employed == 'no'"]   # or tables {column, value, when}
    structural_zeros = ["marital == 'married' and age < 16"]
    interactions = [["sex", "marital"]]
    sample = 2000                     # optional: synthesize a random sample of the records

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

    [sampling]
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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from pseudopost.release import report
from pseudopost.release.adapters.base import AccountResult, Produced
from pseudopost.release.adapters.pseudo_posterior import (
    PseudoPosteriorAdapter,
    kept_draws,
    load_fit,
)
from pseudopost.release.errors import SpecError
from pseudopost.release.measures import Measures
from pseudopost.release.schema import ReleaseSpec, Schema, fail

__all__ = ["WholeFileAdapter", "WholeFileSettings"]

_COLUMN_KEYS = (
    "model", "codes", "spikes", "transform", "knots", "predictors", "grid", "heaps", "bins",
    "shift_only",
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


def _column_tables(columns: Mapping[str, Any]) -> dict[str, dict]:
    """``[file.columns.X]`` tables -> the declarations' per-column mappings."""
    names = ("models", "missing_codes", "spikes", "transforms", "knots", "pm", "grid", "heaps")
    out: dict[str, Any] = {k: {} for k in (*names, "bins")}
    out["shift_only"] = []
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
        if "shift_only" in table:
            if not isinstance(table["shift_only"], bool):
                raise fail(f"{key}.shift_only", table["shift_only"], "true or false",
                           f"write {key}.shift_only = true.")  # fmt: skip
            if table["shift_only"]:
                out["shift_only"].append(col)
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
            "floor_cost": (False, "bool"),
            "target_epsilon": (False, "posfloat"),
            "rtol": (False, "posfloat"),
            "max_refits": (False, "posint"),
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
        "release.seed": "the seed goes under [sampling]",
    }

    # ------------------------------------------------------------------ spec
    def parse(self, sections: Mapping[str, Mapping[str, Any]]) -> WholeFileSettings:
        from pseudopost.models.file import Declarations

        mech, smp, fil = sections["mechanism"], sections["sampling"], sections.get("file", {})
        options = {
            k: mech[k]
            for k in ("scale", "shift", "normalisation", "weight_floor", "floor_cost",
                      "target_epsilon", "rtol", "max_refits")
            if k in mech
        }  # fmt: skip
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
                predictor_matrix=cols["pm"],
                grid=cols["grid"],
                heaps=cols["heaps"],
                bins=cols["bins"],
                max_levels=fil.get("max_levels", 10),
                shift_only=cols["shift_only"],
            )
        except (TypeError, ValueError) as exc:
            raise SpecError(f"spec section '[file]': {exc} Fix: correct the declaration.") from None
        m = sections["release"].get("m", 1)
        draws, chains = smp.get("draws", 1000), smp.get("chains", 2)
        if m > draws * chains:
            raise fail("release.m", m, f"at most the {draws * chains} posterior draws",
                       "lower release.m or raise sampling.draws.")  # fmt: skip
        bud = sections["budget"]
        if bud["max_epsilon"] * m > bud["total_epsilon"]:
            raise fail(
                "budget.max_epsilon", bud["max_epsilon"],
                f"m x max_epsilon <= budget.total_epsilon = {bud['total_epsilon']} (m = {m})",
                "raise total_epsilon, lower max_epsilon or release fewer datasets.",
            )  # fmt: skip
        target = options.get("target_epsilon")
        if target is not None and target > bud["max_epsilon"]:
            raise fail("mechanism.target_epsilon", target,
                       f"at most budget.max_epsilon = {bud['max_epsilon']}", "")  # fmt: skip
        return WholeFileSettings(
            declarations=_declared(decl),
            options=options,
            sample=fil.get("sample"),
            draws=draws,
            tune=smp.get("tune", draws),
            chains=chains,
            seed=smp["seed"],
            workers=smp.get("workers"),
            max_epsilon=bud["max_epsilon"],
        )

    def describe(self, spec: ReleaseSpec) -> str:
        return f"whole file of {len(spec.columns) or 'all'} columns"

    # ------------------------------------------------------------------ data
    def _declarations(self, spec: ReleaseSpec):
        from pseudopost.models.file import Declarations

        kw = dict(spec.settings.declarations)
        book = _codebook(spec)
        if book is not None:
            kw["codebook"] = book
        return Declarations.from_arguments(**kw)

    def _frame(self, spec: ReleaseSpec, frame: pd.DataFrame) -> pd.DataFrame:
        """The records released: all of them, or a seeded sample (``file.sample``)."""
        k = spec.settings.sample
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
        from pseudopost.models.file import FileModel

        try:
            FileModel(self._declarations(spec)).prepare(self._frame(spec, frame))
        except (TypeError, ValueError) as exc:
            raise SpecError(
                f"data file {str(spec.data_path)!r}: {exc} Fix: correct the data or the [file] "
                "section."
            ) from None

    def build_mechanism(self, spec: ReleaseSpec):
        from pseudopost.mechanisms.pseudo_posterior.core import PseudoPosterior
        from pseudopost.models.file import FileModel

        st = spec.settings
        return PseudoPosterior(
            FileModel(self._declarations(spec)), workers=st.workers, **st.options
        )

    # ------------------------------------------------------------------ produce
    fitting_what = "the whole file part by part"

    def fit_frame(self, spec: ReleaseSpec, data: pd.DataFrame) -> pd.DataFrame:
        return self._frame(spec, data)

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
        from pseudopost.models.file import make_plan

        real = self._frame(spec, data)
        decl = self._declarations(spec)
        plan = make_plan(real, decl)
        codes = {
            p.name: [float(c) for c in p.column.info.codes]
            for p in plan.plans
            if p.column.numeric and p.column.info.codes
        }
        cols = spec.columns
        shares, broken, prop, tabs, disc = [], [], [], [], []
        for j, syn in enumerate(synthetic, start=1):
            shares.append(_status_shares(plan, real, syn, j))
            broken.append(_violations(decl, syn, j))
            pu = propensity_utility(real[cols], syn[cols], method="cart", missing_codes=codes,
                                    nperms=20, seed=spec.seed + j)  # fmt: skip
            prop.append({"dataset": j, "pMSE": pu.pMSE, "S_pMSE": pu.S_pMSE,
                         "S_pMSE (synthpop's null)": pu.S_pMSE_synthpop})  # fmt: skip
            t = utility_tables(real[cols], syn[cols], tables="twoway", missing_codes=codes)
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
        return Measures(utility, pd.DataFrame(disc), notes)

    def privacy_record(self, spec: ReleaseSpec, produced: Produced) -> dict[str, Any]:
        record = super().privacy_record(spec, produced)
        attrs = produced.result.datatree["privacy"].attrs
        record["weight_floor"] = float(attrs.get("weight_floor", 0.0))
        floor = attrs.get("epsilon_without_floor")
        record["epsilon_without_floor"] = None if floor is None else float(floor)
        record["weights_raised_by_floor"] = int(attrs.get("weights_raised_by_floor", 0))
        record["parts"] = produced.result.model.choices(produced.result.prepared).to_dict(
            orient="records"
        )
        return record

    def report_title(self, spec: ReleaseSpec) -> str:
        return f"pseudopost release: {spec.data_path.name} (whole file)"

    def report_parts(self, spec, produced, privacy) -> report.ReportParts:
        parts = super().report_parts(spec, produced, privacy)
        facts = dict(parts.facts)
        facts.pop("sensitive range", None)
        facts["weight floor"] = f"{privacy['weight_floor']:g}"
        facts["weights raised by the floor"] = str(privacy["weights_raised_by_floor"])
        if privacy.get("epsilon_without_floor") is not None:
            facts["epsilon without the floor (its cost)"] = (
                f"{privacy['epsilon_without_floor']:.4g}"
            )
        choices = produced.result.model.choices(produced.result.prepared)
        before = [
            *parts.before,
            "<h2>Columns and their parts</h2>",
            report.note(
                "Each column's model, its parts (status and value, or one categorical over its "
                "levels) and the columns it is conditioned on. The choices are public."
            ),
            report.table(choices),
        ]
        return report.ReportParts(facts, before, parts.after, parts.warnings, parts.warnings_title)

    def write_files(self, stage: Path, spec: ReleaseSpec, produced: Produced) -> list[str]:
        """``fit.nc`` (for ``account``) and, for SPSS/Stata input, each synthetic dataset in the
        input's format with its labels and missing-value definitions."""
        from pseudopost.formats import write_file

        names = super().write_files(stage, spec, produced)
        book = _codebook(spec)
        if book is not None and spec.data_format in ("sav", "dta"):
            for j, frame in enumerate(produced.synthetic, start=1):
                name = f"synthetic-{j}.{spec.data_format}"
                write_file(frame, stage / name, book)
                names.append(name)
        return names

    # ------------------------------------------------------------------ re-account
    def account(self, folder: Path, spec: ReleaseSpec, data: pd.DataFrame) -> AccountResult:
        r"""Recompute :math:`\varepsilon = 2\max_i \alpha_i \max_m |f_{\theta_m}(x_i)|` from the
        saved weighted draws (kept draws) and weights with the per-column accountant on the
        model rebuilt from the spec and the data."""
        from pseudopost.fitting.columns import file_part_data
        from pseudopost.models.file import FileModel
        from pseudopost.privacy.accountant import account
        from pseudopost.privacy.decomposition import Unrestricted
        from pseudopost.privacy.kernels.parts import PartAccountant

        tree = load_fit(folder / "fit.nc")
        model = FileModel(self._declarations(spec))
        prepared = model.prepare(self._frame(spec, data))
        parts, pdata = file_part_data(model, prepared)
        acc = PartAccountant(parts, pdata)
        alpha = tree["weights"]["alpha"].to_numpy()
        res = account(acc, kept_draws(tree, acc.free_names), alpha, Unrestricted())
        return AccountResult(res.epsilon, float(tree["privacy"].attrs["epsilon"]), res.lipschitz)


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
    }


def _codebook(spec: ReleaseSpec):
    """The input's codebook (SPSS/Stata), or None."""
    if spec.data_format not in ("sav", "dta"):
        return None
    from pseudopost.formats import read_file

    return read_file(spec.data_path)[1]


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
