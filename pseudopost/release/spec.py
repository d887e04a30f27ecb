"""The release spec: a TOML file that describes one release, checked whole before any work.

A spec names the input data, the model, the mechanism and its knobs, the sampler settings, the
number m of synthetic datasets, the output folder and the budget. Every problem is reported as a
:class:`SpecError` naming the key (``section.key``), the value found, what was expected and the
fix, and is raised before any output folder or ledger entry is created. Example
(``examples/fatigue.toml``)::

    [data]
    path = "../data/fatigue.csv"      # CSV or Parquet; relative to the spec file

    [model]
    family = "lognormal"              # normal | lognormal | poisson | negative_binomial
    outcome = "cycle"
    predictors = ["stress"]

    [mechanism]
    name = "pseudo_posterior"
    scale = 1.0
    shift = 0.0

    [sampling]
    draws = 500
    tune = 500
    chains = 2
    seed = 2026

    [release]
    m = 2
    out = "fatigue-release"

    [budget]
    total_epsilon = 200.0             # the dataset's lifetime budget (kept in the ledger)
    max_epsilon = 60.0                # most this release may spend per synthetic dataset

Only the ``pseudo_posterior`` mechanism is supported. Its range-restriction, calibration and
censoring options are passed to :class:`~pseudopost.PseudoPosterior`:
``sensitive_range = [a, b]`` (a :class:`~pseudopost.risk.MultiplicativeRange`, the range
:math:`[a x_i, b x_i]` around each outcome value), ``range_method = "truncated" | "averaged"``
and ``lambda_draws``; ``target_epsilon`` (calibrate the weights to this local epsilon) with
``rtol`` and ``max_refits``; and ``censor_epsilon`` (global DP by censoring; not combinable with
the range or the target). A key the installed PseudoPosterior does
not accept is refused with a message saying so.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

__all__ = ["FAMILIES", "ReleaseSpec", "SpecError", "load_data", "load_spec", "validate"]


class SpecError(ValueError):
    """A spec or its data is invalid; the message names the key, the value and the fix."""


FAMILIES = {
    "normal": "NormalRegression",
    "lognormal": "LogNormalRegression",
    "poisson": "PoissonRegression",
    "negative_binomial": "NegativeBinomialRegression",
}
MECHANISMS = ("pseudo_posterior",)
#: keyword arguments of PseudoPosterior passed through only when the installed version has them
OPTIONAL_MECHANISM_KEYS = (
    "sensitive_range",
    "range_method",
    "lambda_draws",
    "target_epsilon",
    "rtol",
    "max_refits",
    "censor_epsilon",
)

_SECTIONS: dict[str, dict[str, tuple[bool, str]]] = {
    # key: (required, kind)
    "data": {"path": (True, "str"), "format": (False, "str")},
    "model": {
        "family": (True, "str"),
        "outcome": (True, "str"),
        "predictors": (False, "list[str]"),
        "prior_scale": (False, "posfloat"),
    },
    "mechanism": {
        "name": (True, "str"),
        "scale": (False, "nonnegfloat"),
        "shift": (False, "float"),
        "normalisation": (False, "str"),
        "reweight": (False, "bool"),
        "exclude_quantile": (False, "float"),
        "sensitive_range": (False, "range"),
        "range_method": (False, "str"),
        "lambda_draws": (False, "posint"),
        "target_epsilon": (False, "posfloat"),
        "rtol": (False, "posfloat"),
        "max_refits": (False, "posint"),
        "censor_epsilon": (False, "posfloat"),
    },
    "sampling": {
        "draws": (False, "posint"),
        "tune": (False, "nonnegint"),
        "chains": (False, "posint"),
        "seed": (True, "nonnegint"),
        "sampler": (False, "str"),
    },
    "release": {"m": (False, "posint"), "out": (False, "str"), "report": (False, "bool")},
    "budget": {
        "total_epsilon": (True, "posfloat"),
        "max_epsilon": (True, "posfloat"),
        "ledger": (False, "str"),
    },
    "disclosure": {
        "keys": (False, "list[str]"),
        "radius": (False, "posfloat"),
        "sensitive": (False, "str"),
    },
}
_REQUIRED_SECTIONS = ("data", "model", "mechanism", "sampling", "budget")

_EXPECTED = {
    "str": "a string",
    "list[str]": "a list of strings",
    "posfloat": "a number > 0",
    "nonnegfloat": "a number >= 0",
    "float": "a number",
    "bool": "true or false",
    "posint": "an integer >= 1",
    "nonnegint": "an integer >= 0",
    "range": "a list [a, b] of two numbers with 0 <= a <= 1 <= b, a < b (range [a*x, b*x])",
}


@dataclass(frozen=True)
class ReleaseSpec:
    """A validated spec: every key resolved, paths absolute, defaults filled in."""

    path: Path
    text: str
    data_path: Path
    data_format: str
    family: str
    outcome: str
    predictors: tuple[str, ...]
    prior_scale: float | None
    mechanism: str
    mechanism_options: dict[str, Any]
    draws: int
    tune: int
    chains: int
    seed: int
    sampler: str
    m: int
    out: Path
    report: bool
    total_epsilon: float
    max_epsilon: float
    ledger_path: Path
    disclosure_keys: tuple[str, ...]
    disclosure_radius: float
    disclosure_sensitive: str
    raw: dict[str, Any] = field(repr=False, default_factory=dict)

    @property
    def sha256(self) -> str:
        """SHA-256 of the spec file's text."""
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def columns(self) -> list[str]:
        return [*self.predictors, self.outcome]

    def build_model(self):
        """The ready model named by ``model.family``."""
        from .. import models

        cls = getattr(models, FAMILIES[self.family])
        kwargs = {} if self.prior_scale is None else {"prior_scale": self.prior_scale}
        return cls(self.outcome, list(self.predictors), **kwargs)

    def build_mechanism(self):
        """The :class:`~pseudopost.PseudoPosterior` described by ``[mechanism]``."""
        from ..mechanism import PseudoPosterior

        options = dict(self.mechanism_options)
        if "sensitive_range" in options:
            from ..risk.ranges import MultiplicativeRange

            options["sensitive_range"] = MultiplicativeRange(*options["sensitive_range"])
        return PseudoPosterior(self.build_model(), sampler=self.sampler, **options)


def _fail(key: str, value: Any, expected: str, fix: str = "") -> SpecError:
    tail = f" Fix: {fix}" if fix else ""
    return SpecError(f"spec key '{key}': expected {expected}, got {value!r}.{tail}")


def _check_kind(key: str, value: Any, kind: str) -> Any:
    ok: bool
    if kind == "str":
        ok = isinstance(value, str) and value != ""
    elif kind == "list[str]":
        ok = isinstance(value, list) and all(isinstance(v, str) and v for v in value)
    elif kind == "bool":
        ok = isinstance(value, bool)
    elif kind in ("posint", "nonnegint"):
        ok = isinstance(value, int) and not isinstance(value, bool)
        ok = ok and (value >= 1 if kind == "posint" else value >= 0)
    elif kind in ("posfloat", "nonnegfloat", "float"):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        ok = ok and math.isfinite(value)
        if ok and kind == "posfloat":
            ok = value > 0
        if ok and kind == "nonnegfloat":
            ok = value >= 0
        if ok:
            value = float(value)
    elif kind == "range":
        ok = (
            isinstance(value, list)
            and len(value) == 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
            and 0 <= value[0] <= 1 <= value[1]
            and value[0] < value[1]
            and math.isfinite(value[1])
        )
        if ok:
            value = (float(value[0]), float(value[1]))
    else:  # pragma: no cover - programming error
        raise AssertionError(kind)
    if not ok:
        raise _fail(key, value, _EXPECTED[kind], f"set '{key}' to {_EXPECTED[kind]}.")
    return value


def _read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    if not path.is_file():
        raise SpecError(
            f"spec file {str(path)!r} not found. Fix: give the path of an existing .toml file."
        )
    try:
        text = path.read_text(encoding="utf-8")
        return text, tomllib.loads(text)
    except UnicodeDecodeError:
        raise SpecError(
            f"spec file {str(path)!r} is not UTF-8 text. Fix: save it as UTF-8."
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(
            f"spec file {str(path)!r} is not valid TOML ({exc}). Fix: correct the syntax."
        ) from None


def _sections(raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    unknown = sorted(set(raw) - set(_SECTIONS))
    if unknown:
        raise _fail(
            unknown[0],
            raw[unknown[0]],
            f"one of the sections {sorted(_SECTIONS)}",
            f"remove or rename section '{unknown[0]}'.",
        )
    for name, table in raw.items():
        if not isinstance(table, dict):
            raise _fail(name, table, f"a table [{name}]", f"write it as a [{name}] section.")
    for name in _REQUIRED_SECTIONS:
        if name not in raw:
            raise SpecError(f"spec section '[{name}]' is missing. Fix: add a [{name}] table.")
    out: dict[str, dict[str, Any]] = {}
    for name, keys in _SECTIONS.items():
        table = raw.get(name, {})
        for key in table:
            if key not in keys:
                raise _fail(
                    f"{name}.{key}",
                    table[key],
                    f"one of the keys {sorted(keys)}",
                    f"remove or rename '{name}.{key}'.",
                )
        clean = {}
        for key, (required, kind) in keys.items():
            if key not in table:
                if required:
                    raise SpecError(
                        f"spec key '{name}.{key}' is missing: expected {_EXPECTED[kind]}. "
                        f"Fix: add '{key} = ...' under [{name}]."
                    )
                continue
            clean[key] = _check_kind(f"{name}.{key}", table[key], kind)
        out[name] = clean
    return out


def _choice(key: str, value: str, choices) -> str:
    if value not in choices:
        raise _fail(key, value, f"one of {list(choices)}", f"set '{key}' to one of them.")
    return value


def _mechanism_options(mech: dict[str, Any]) -> dict[str, Any]:
    options: dict[str, Any] = {}
    for key in ("scale", "shift", "normalisation", "reweight", "exclude_quantile"):
        if key in mech:
            options[key] = mech[key]
    if "normalisation" in options:
        _choice("mechanism.normalisation", options["normalisation"], ("linear", "logistic"))
    q = options.get("exclude_quantile")
    if q is not None and not 0 < q <= 1:
        raise _fail("mechanism.exclude_quantile", q, "a number in (0, 1]", "e.g. 0.95.")
    wanted = [k for k in OPTIONAL_MECHANISM_KEYS if k in mech]
    if wanted:
        from ..mechanism import PseudoPosterior

        accepted = inspect.signature(PseudoPosterior).parameters
        for key in wanted:
            if key not in accepted:
                raise _fail(
                    f"mechanism.{key}",
                    mech[key],
                    "a key this installed PseudoPosterior accepts",
                    f"remove '{key}' or upgrade pseudopost.",
                )
            options[key] = mech[key]
    if "rtol" in options and not options["rtol"] < 1:
        raise _fail("mechanism.rtol", options["rtol"], "a number in (0, 1)", "e.g. 0.05.")
    for key, needs in (
        ("range_method", "sensitive_range"),
        ("lambda_draws", "sensitive_range"),
        ("rtol", "target_epsilon"),
        ("max_refits", "target_epsilon"),
    ):
        if key in options and needs not in options:
            raise SpecError(
                f"spec key 'mechanism.{key}' needs 'mechanism.{needs}'. "
                f"Fix: add {needs} or remove {key}."
            )
    if "range_method" in options:
        _choice("mechanism.range_method", options["range_method"], ("truncated", "averaged"))
    if "censor_epsilon" in options and (
        "sensitive_range" in options or "target_epsilon" in options
    ):
        raise SpecError(
            "spec key 'mechanism.censor_epsilon' sets a global epsilon directly and cannot be "
            "combined with 'sensitive_range' or 'target_epsilon'. Fix: keep one of them."
        )
    return options


def load_spec(path: str | Path, out: str | Path | None = None) -> ReleaseSpec:
    """Read and check a spec file (not its data; see :func:`validate`). ``out`` overrides
    ``release.out``."""
    spec_path = Path(path).resolve()
    text, raw = _read_toml(spec_path)
    s = _sections(raw)
    base = spec_path.parent
    data_path = (base / s["data"]["path"]).resolve()
    suffix = data_path.suffix.lower().lstrip(".")
    fmt = s["data"].get("format", {"pq": "parquet"}.get(suffix, suffix))
    _choice("data.format", fmt, ("csv", "parquet"))
    family = _choice("model.family", s["model"]["family"], tuple(FAMILIES))
    predictors = tuple(s["model"].get("predictors", ()))
    outcome = s["model"]["outcome"]
    if outcome in predictors:
        raise _fail(
            "model.predictors",
            list(predictors),
            f"columns other than the outcome {outcome!r}",
            f"remove {outcome!r} from predictors.",
        )
    if len(set(predictors)) != len(predictors):
        raise _fail(
            "model.predictors", list(predictors), "distinct column names", "drop duplicates."
        )
    mech = s["mechanism"]
    name = _choice("mechanism.name", mech["name"], MECHANISMS)
    options = _mechanism_options(mech)
    smp = s["sampling"]
    sampler = _choice("sampling.sampler", smp.get("sampler", "nutpie"), ("nutpie", "pymc"))
    rel = s["release"]
    m = rel.get("m", 1)
    draws, chains = smp.get("draws", 1000), smp.get("chains", 2)
    capacity = int(draws * chains * options.get("exclude_quantile", 1.0) + 1e-9)
    if m > capacity:
        raise _fail(
            "release.m",
            m,
            f"at most the {capacity} kept posterior draws (draws x chains x exclude_quantile)",
            "lower release.m or raise sampling.draws.",
        )
    if out is not None:
        out_path = Path(out).resolve()
    elif "out" in rel:
        out_path = (base / rel["out"]).resolve()
    else:
        raise SpecError(
            "spec key 'release.out' is missing and no --out was given. "
            'Fix: add out = "folder" under [release] or pass --out DIR.'
        )
    bud = s["budget"]
    if bud["max_epsilon"] * m > bud["total_epsilon"]:
        raise _fail(
            "budget.max_epsilon",
            bud["max_epsilon"],
            f"m x max_epsilon <= budget.total_epsilon = {bud['total_epsilon']} (m = {m})",
            "raise total_epsilon, lower max_epsilon or release fewer datasets.",
        )
    for key in ("target_epsilon", "censor_epsilon"):
        value = options.get(key)
        if value is not None and value > bud["max_epsilon"]:
            raise _fail(
                f"mechanism.{key}",
                value,
                f"at most budget.max_epsilon = {bud['max_epsilon']}",
                f"lower {key} or raise max_epsilon.",
            )
    ledger = (
        (base / bud["ledger"]).resolve()
        if "ledger" in bud
        else data_path.with_name(data_path.name + ".ledger.json")
    )
    dis = s["disclosure"]
    return ReleaseSpec(
        path=spec_path,
        text=text,
        data_path=data_path,
        data_format=fmt,
        family=family,
        outcome=outcome,
        predictors=predictors,
        prior_scale=s["model"].get("prior_scale"),
        mechanism=name,
        mechanism_options=options,
        draws=draws,
        tune=smp.get("tune", draws),
        chains=chains,
        seed=smp["seed"],
        sampler=sampler,
        m=m,
        out=out_path,
        report=rel.get("report", True),
        total_epsilon=bud["total_epsilon"],
        max_epsilon=bud["max_epsilon"],
        ledger_path=ledger,
        disclosure_keys=tuple(dis.get("keys", predictors)),
        disclosure_radius=dis.get("radius", 0.1),
        disclosure_sensitive=dis.get("sensitive", outcome),
        raw=raw,
    )


def load_data(spec: ReleaseSpec) -> pd.DataFrame:
    """Read the spec's data file; a missing or unreadable file is a :class:`SpecError`."""
    path = spec.data_path
    if not path.is_file():
        raise _fail("data.path", str(path), "an existing CSV or Parquet file", "correct the path.")
    try:
        if spec.data_format == "csv":
            frame = pd.read_csv(path)
        else:
            frame = pd.read_parquet(path)
    except Exception as exc:  # pandas raises many types for unreadable files
        raise SpecError(
            f"spec key 'data.path': file {str(path)!r} could not be read as "
            f"{spec.data_format} ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}). "
            "Fix: check the file and 'data.format'."
        ) from None
    if frame.columns.duplicated().any():
        dup = frame.columns[frame.columns.duplicated()][0]
        raise SpecError(
            f"data file {str(path)!r}: column {dup!r} appears more than once. "
            "Fix: give every column a distinct name."
        )
    return frame


def validate(spec: ReleaseSpec, data: pd.DataFrame | None = None) -> pd.DataFrame:
    """Check the data against the spec (columns, types, support, sizes, disclosure keys) and
    that the model and mechanism can be built; returns the data. No sampling happens."""
    frame = load_data(spec) if data is None else data
    for col in spec.columns:
        if col not in frame.columns:
            key = "model.outcome" if col == spec.outcome else "model.predictors"
            raise _fail(
                key,
                col,
                f"a column of {spec.data_path.name} (columns: {list(frame.columns)})",
                "correct the column name.",
            )
    for key, cols in (
        ("disclosure.keys", spec.disclosure_keys),
        ("disclosure.sensitive", (spec.disclosure_sensitive,)),
    ):
        for col in cols:
            if col not in spec.columns:
                raise _fail(
                    key,
                    col,
                    f"one of the model's columns {spec.columns}",
                    "use a modelled or predictor column.",
                )
    try:
        mechanism = spec.build_mechanism()
        mechanism.model.prepare(frame)
    except (TypeError, ValueError) as exc:
        raise SpecError(
            f"data file {str(spec.data_path)!r}: {exc} Fix: correct the data or the [model] "
            "section."
        ) from None
    return frame
