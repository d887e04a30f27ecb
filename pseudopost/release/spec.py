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

The ``pseudo_posterior`` mechanism's range-restriction, calibration and
censoring options are passed to :class:`~pseudopost.PseudoPosterior`:
``sensitive_range = [a, b]`` (a :class:`~pseudopost.risk.MultiplicativeRange`, the range
:math:`[a x_i, b x_i]` around each outcome value), ``range_method = "truncated" | "averaged"``
and ``lambda_draws``; ``target_epsilon`` (calibrate the weights to this local epsilon) with
``rtol`` and ``max_refits``; and ``censor_epsilon`` (global DP by censoring; not combinable with
the range or the target). A key the installed PseudoPosterior does
not accept is refused with a message saying so. ``budget.total_delta`` (optional here) fixes
the dataset's lifetime delta in the ledger when a lighter release may share it; the pseudo
posterior itself spends no delta.

The lighter releases (``name = "reps" | "prism" | "entropy"``) have their own layout: the budget
they spend under ``[mechanism]`` (``epsilon``, ``delta``), their structure in a section named
after them, the seed under ``[release]``, and no ``[model]`` or ``[sampling]``; see
:mod:`pseudopost.release.lighter_spec`.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from pseudopost.release import lighter_spec as lighter

__all__ = [
    "FAMILIES",
    "MECHANISMS",
    "ReleaseSpec",
    "SpecError",
    "load_data",
    "load_spec",
    "resolve",
    "validate",
]


class SpecError(ValueError):
    """A spec or its data is invalid; the message names the key, the value and the fix."""


FAMILIES = {
    "normal": "NormalRegression",
    "lognormal": "LogNormalRegression",
    "poisson": "PoissonRegression",
    "negative_binomial": "NegativeBinomialRegression",
}
MECHANISMS = ("pseudo_posterior", *lighter.LIGHTER)
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
        "total_delta": (False, "float"),
        "ledger": (False, "str"),
    },
    "disclosure": {
        "keys": (False, "list[str]"),
        "radius": (False, "posfloat"),
        "sensitive": (False, "str"),
    },
}
_REQUIRED_SECTIONS = ("data", "model", "mechanism", "sampling", "budget")


def _lighter_sections(name: str) -> dict[str, dict[str, tuple[bool, str]]]:
    """The sections of a lighter release's spec (module docstring of lighter_spec)."""
    return {
        "data": _SECTIONS["data"],
        "mechanism": {
            "name": (True, "str"),
            "epsilon": (True, "posfloat"),
            "delta": (False, "float"),
        },
        name: lighter.SCHEMAS[name],
        "release": {
            "m": (False, "posint"),
            "out": (False, "str"),
            "report": (False, "bool"),
            "seed": (True, "nonnegint"),
            "rows": (False, "posint"),
        },
        "budget": {
            "total_epsilon": (True, "posfloat"),
            "total_delta": (False, "float"),
            "ledger": (False, "str"),
        },
        "disclosure": _SECTIONS["disclosure"],
    }


#: hints for keys and sections that belong to another mechanism's layout
_HINTS = {
    "model": "the lighter releases have no [model]: their structure goes under [{name}]",
    "sampling": "the lighter releases do not sample a posterior: put seed under [release]",
    "budget.max_epsilon": "a lighter release spends exactly mechanism.epsilon, so there is no "
    "per-dataset cap",
    "release.seed": "the pseudo posterior's seed goes under [sampling]",
    "release.rows": "the pseudo posterior synthesizes one row per record",
}

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
    "table": "a table {column = value, ...}",
    "threshold": "'dp', 'empirical' or a number",
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
    #: lighter releases: the (epsilon, delta) spent, the section's options, released columns
    epsilon: float | None = None
    delta: float | None = None
    total_delta: float | None = None
    options: dict[str, Any] = field(default_factory=dict)
    rows: int | None = None
    release_columns: tuple[str, ...] = ()
    target: str | None = None

    @property
    def lighter(self) -> bool:
        """True for REPS, PRISM and the entropy release (global (epsilon, delta)-DP)."""
        return self.mechanism in lighter.LIGHTER

    @property
    def sha256(self) -> str:
        """SHA-256 of the spec file's text."""
        return hashlib.sha256(self.text.encode()).hexdigest()

    @property
    def columns(self) -> list[str]:
        if self.lighter:
            return list(self.release_columns)
        return [*self.predictors, self.outcome]

    def build_release(self, seed=None):
        """The lighter release object (REPS, PRISM or the joint histogram) of ``[NAME]``."""
        mech = {"epsilon": self.epsilon, "delta": self.delta}
        return lighter.build(self.mechanism, mech, self.options, seed=seed)

    def build_model(self):
        """The ready model named by ``model.family``."""
        from pseudopost import models

        cls = getattr(models, FAMILIES[self.family])
        kwargs = {} if self.prior_scale is None else {"prior_scale": self.prior_scale}
        return cls(self.outcome, list(self.predictors), **kwargs)

    def build_mechanism(self):
        """The :class:`~pseudopost.PseudoPosterior` described by ``[mechanism]``."""
        from pseudopost.mechanisms.pseudo_posterior.core import PseudoPosterior

        options = dict(self.mechanism_options)
        if "sensitive_range" in options:
            from pseudopost.risk.ranges import MultiplicativeRange

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
    else:
        return lighter.check_kind(key, value, kind)
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


def _hint(item: str, mechanism: str) -> str:
    hint = _HINTS.get(item)
    return f" ({hint.format(name=mechanism)})" if hint else ""


def _sections(
    raw: dict[str, Any],
    sections: dict[str, dict[str, tuple[bool, str]]] | None = None,
    required: tuple[str, ...] = _REQUIRED_SECTIONS,
    mechanism: str = "pseudo_posterior",
) -> dict[str, dict[str, Any]]:
    sections = _SECTIONS if sections is None else sections
    unknown = sorted(set(raw) - set(sections))
    if unknown:
        raise _fail(
            unknown[0],
            raw[unknown[0]],
            f"one of the sections {sorted(sections)} for mechanism {mechanism!r}",
            f"remove or rename section '{unknown[0]}'{_hint(unknown[0], mechanism)}.",
        )
    for name, table in raw.items():
        if not isinstance(table, dict):
            raise _fail(name, table, f"a table [{name}]", f"write it as a [{name}] section.")
    for name in required:
        if name not in raw:
            raise SpecError(f"spec section '[{name}]' is missing. Fix: add a [{name}] table.")
    out: dict[str, dict[str, Any]] = {}
    for name, keys in sections.items():
        table = raw.get(name, {})
        for key in table:
            if key not in keys:
                raise _fail(
                    f"{name}.{key}",
                    table[key],
                    f"one of the keys {sorted(keys)}",
                    f"remove or rename '{name}.{key}'{_hint(f'{name}.{key}', mechanism)}.",
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
        from pseudopost.mechanisms.pseudo_posterior.core import PseudoPosterior

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
    table = raw.get("mechanism")
    name = table.get("name") if isinstance(table, dict) else None
    if isinstance(name, str) and name in lighter.LIGHTER:
        return _load_lighter(spec_path, text, raw, name, out)
    s = _sections(raw)
    base = spec_path.parent
    data_path, fmt = _data_path(base, s["data"])
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
    out_path = _out_path(base, rel, out)
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
    ledger = _ledger_path(base, bud, data_path)
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
        total_delta=_total_delta(bud),
    )


def _data_path(base: Path, data: dict[str, Any]) -> tuple[Path, str]:
    data_path = (base / data["path"]).resolve()
    suffix = data_path.suffix.lower().lstrip(".")
    fmt = data.get("format", {"pq": "parquet"}.get(suffix, suffix))
    _choice("data.format", fmt, ("csv", "parquet"))
    return data_path, fmt


def _out_path(base: Path, rel: dict[str, Any], out) -> Path:
    if out is not None:
        return Path(out).resolve()
    if "out" in rel:
        return (base / rel["out"]).resolve()
    raise SpecError(
        "spec key 'release.out' is missing and no --out was given. "
        'Fix: add out = "folder" under [release] or pass --out DIR.'
    )


def _ledger_path(base: Path, bud: dict[str, Any], data_path: Path) -> Path:
    if "ledger" in bud:
        return (base / bud["ledger"]).resolve()
    return data_path.with_name(data_path.name + ".ledger.json")


def _total_delta(bud: dict[str, Any]) -> float | None:
    value = bud.get("total_delta")
    if value is not None and not 0 < value < 1:
        raise _fail("budget.total_delta", value, "a number in (0, 1)", "e.g. 1e-4.")
    return value


def _load_lighter(spec_path: Path, text: str, raw: dict, name: str, out) -> ReleaseSpec:
    """A spec of a lighter release (:mod:`pseudopost.release.lighter_spec`)."""
    s = _sections(
        raw, _lighter_sections(name), ("data", "mechanism", name, "release", "budget"), name
    )
    base = spec_path.parent
    data_path, fmt = _data_path(base, s["data"])
    mech = s["mechanism"]
    options = lighter.check_options(name, mech, s[name])
    rel, bud, dis = s["release"], s["budget"], s["disclosure"]
    total_delta = _total_delta(bud)
    spends_delta = name != "entropy" or options.get("noise") == "gaussian"
    if spends_delta and total_delta is None:
        raise SpecError(
            f"spec key 'budget.total_delta' is missing: a {name} release spends delta, so the "
            "dataset needs a lifetime delta. Fix: add total_delta = 1e-4 (say) under [budget]."
        )
    if mech["epsilon"] > bud["total_epsilon"]:
        raise _fail(
            "mechanism.epsilon",
            mech["epsilon"],
            f"at most budget.total_epsilon = {bud['total_epsilon']}",
            "lower epsilon or raise total_epsilon.",
        )
    if mech.get("delta") is not None and mech["delta"] > total_delta:
        raise _fail(
            "mechanism.delta",
            mech["delta"],
            f"at most budget.total_delta = {total_delta}",
            "lower delta or raise total_delta.",
        )
    return ReleaseSpec(
        path=spec_path,
        text=text,
        data_path=data_path,
        data_format=fmt,
        family="",
        outcome="",
        predictors=(),
        prior_scale=None,
        mechanism=name,
        mechanism_options={},
        draws=0,
        tune=0,
        chains=0,
        seed=rel["seed"],
        sampler="",
        m=rel.get("m", 1),
        out=_out_path(base, rel, out),
        report=rel.get("report", True),
        total_epsilon=bud["total_epsilon"],
        max_epsilon=mech["epsilon"],
        ledger_path=_ledger_path(base, bud, data_path),
        disclosure_keys=tuple(dis.get("keys", ())),
        disclosure_radius=dis.get("radius", 0.1),
        disclosure_sensitive=dis.get("sensitive", ""),
        raw=raw,
        epsilon=mech["epsilon"],
        delta=mech.get("delta"),
        total_delta=total_delta,
        options=options,
        rows=rel.get("rows"),
        target=lighter.target_of(name, options),
    )


def resolve(spec: ReleaseSpec, frame: pd.DataFrame) -> ReleaseSpec:
    """A lighter spec with its data-dependent defaults filled in: the released columns, delta
    (``1/n^2`` for REPS and PRISM when not given), the disclosure keys (the released columns
    but the target, or but the last for the histogram) and sensitive column (the target, or the
    last column). The pseudo posterior's spec is returned unchanged."""
    if not spec.lighter:
        return spec
    cols = tuple(lighter.columns_of(spec.mechanism, spec.options, frame))
    delta = spec.delta
    if delta is None and spec.mechanism in ("reps", "prism"):
        delta = lighter.default_delta(len(frame))
    sensitive = spec.disclosure_sensitive or (spec.target or cols[-1])
    keys = spec.disclosure_keys or tuple(c for c in cols if c != sensitive)
    return replace(
        spec,
        release_columns=cols,
        delta=delta,
        disclosure_keys=keys,
        disclosure_sensitive=sensitive,
    )


def _check_prism_coding(spec: ReleaseSpec, frame: pd.DataFrame) -> None:
    """PRISM's column coding (levels, bins) and structure checks, without any release."""
    from pseudopost.mechanisms.prism.discretize import fit_encoding

    opts = spec.options
    bins = opts.get("bins", {})
    dp = any(isinstance(b, int) for b in bins.values())
    cols = spec.columns
    fit_encoding(
        frame[cols],
        cols,
        bins=bins,
        bounds=opts.get("bounds"),
        domain=opts.get("domain"),
        epsilon=1.0 if dp else None,
        seed=0,
    )
    spec.build_release()._features(frame[cols], spec.target)


def _validate_lighter(spec: ReleaseSpec, frame: pd.DataFrame) -> pd.DataFrame:
    lighter.check_data(spec.mechanism, spec.options, frame, str(spec.data_path))
    spec = resolve(spec, frame)
    if len(frame) < 2:
        raise SpecError(
            f"data file {str(spec.data_path)!r} must have at least 2 rows; got {len(frame)}. "
            "Fix: release a larger dataset."
        )
    if spec.delta is not None and spec.total_delta is not None and spec.delta > spec.total_delta:
        raise _fail(
            "mechanism.delta",
            spec.delta,
            f"at most budget.total_delta = {spec.total_delta} (delta defaults to 1/n^2)",
            "set mechanism.delta or raise total_delta.",
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
                    f"one of the released columns {spec.columns}",
                    "use a released column.",
                )
    try:
        release = spec.build_release()
        if spec.mechanism == "entropy":
            release.check(frame)
        elif spec.mechanism == "prism":
            _check_prism_coding(spec, frame)
    except (TypeError, ValueError) as exc:
        raise SpecError(
            f"data file {str(spec.data_path)!r}: {exc} Fix: correct the data or the "
            f"[{spec.mechanism}] section."
        ) from None
    return frame


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
    if spec.lighter:
        return _validate_lighter(spec, frame)
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
