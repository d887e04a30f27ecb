"""Run a release from a spec, and re-run the accountant on a saved one.

:func:`run_release` does, in this order:

1. check the spec and its data (:func:`~pseudopost.release.spec.validate`), that the output
   folder does not exist, and that the ledger has room for ``m * max_epsilon``: any failure
   here stops before any work and before anything is written;
2. fit the pseudo posterior, refuse if its epsilon exceeds ``budget.max_epsilon``;
3. synthesize m datasets, compute utility and disclosure measures, build every output in a
   hidden staging folder beside the output folder;
4. under the ledger's lock: re-check the budget, append the charge ``m * epsilon``, write the
   ledger atomically, then rename the staging folder to the output folder.

A crash before step 4 leaves the ledger untouched and no output folder (a stale staging folder
``.NAME.partial-PID`` of a dead process is removed by the next release to the same place).

Outputs: ``synthetic-1.csv`` .. ``synthetic-m.csv``, ``privacy.json``, ``fit.nc`` (the result's
DataTree, netCDF4 via h5netcdf), ``manifest.json`` (SHA-256 of input, spec and outputs, package
versions, seed, timings), ``report.html`` and ``spec.toml`` (a copy, for
:func:`account_release`).

The lighter releases (REPS, PRISM, entropy histogram; :mod:`pseudopost.release.lighter_run`)
follow the same steps with their declared (epsilon, delta): the ledger is pre-checked for
``epsilon`` and ``delta`` (not ``m * max_epsilon``: their m datasets are samples of one release),
the charge is the release's own figure, and there is no ``fit.nc`` (no posterior);
:func:`account_release` says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import sys
import time
import warnings
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from pseudopost._io import fsync_dir
from pseudopost.release.ledger import BudgetError, Ledger
from pseudopost.release.spec import MECHANISMS, ReleaseSpec, SpecError, load_spec, resolve, validate

__all__ = [
    "AccountResult",
    "ReleaseError",
    "ReleaseOutcome",
    "account_release",
    "run_release",
    "sha256_file",
]


class ReleaseError(RuntimeError):
    """The release cannot be published after the fit (e.g. non-finite synthetic values);
    nothing was written and the ledger is unchanged."""


_VERSIONS = (
    "pseudopost",
    "pymc",
    "pytensor",
    "nutpie",
    "arviz",
    "numpy",
    "scipy",
    "pandas",
    "xarray",
    "h5netcdf",
    "matplotlib",
    "scikit-learn",
    "mbi",
    "jax",
)


@dataclass(frozen=True)
class ReleaseOutcome:
    """What a release produced (``delta`` is 0 for the pure-epsilon pseudo posterior)."""

    out: Path
    epsilon: float
    charge: float
    files: list[str]
    delta: float = 0.0
    guarantee: str = "local"


def sha256_file(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _say(message: str) -> None:
    print(f"pseudopost: {message}", file=sys.stderr, flush=True)


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in _VERSIONS:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _staging_dir(out: Path) -> Path:
    """A fresh hidden staging folder beside ``out``; stale ones of dead processes are removed."""
    out.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{out.name}.partial-"
    for old in out.parent.glob(prefix + "*"):
        pid = old.name[len(prefix) :]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    stage = out.parent / f"{prefix}{os.getpid()}"
    shutil.rmtree(stage, ignore_errors=True)
    stage.mkdir()
    return stage


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def save_fit(tree: xr.DataTree, path: Path) -> None:
    """The DataTree as netCDF4 (h5netcdf). Object-dtype variables (e.g. nutpie's
    ``divergence_message``, mostly None) are stored as strings, None as ''."""
    groups = {}
    for node in tree.subtree:
        ds = node.to_dataset()
        for name, var in ds.data_vars.items():
            if var.dtype == object:
                ds[name] = var.copy(
                    data=np.vectorize(lambda v: "" if v is None else str(v), otypes=[str])(
                        var.to_numpy()
                    )
                )
        groups[node.path] = ds
    xr.DataTree.from_dict(groups).to_netcdf(path, engine="h5netcdf")


def load_fit(path: str | os.PathLike) -> xr.DataTree:
    """A fit saved by :func:`save_fit`, loaded into memory."""
    return xr.open_datatree(path, engine="h5netcdf").load()


def _diagnostics_json(diag) -> dict[str, Any]:
    t = diag.table
    return {
        "divergences": diag.divergences,
        "draws": diag.draws,
        "max_r_hat": float(t.r_hat.max()),
        "min_ess_bulk": float(t.ess_bulk.min()),
        "min_ess_tail": float(t.ess_tail.min()),
        "problems": diag.problems(),
        "by_parameter": t.to_dict(orient="records"),
    }


def _jsonable(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v


def charged_epsilon(result) -> float:
    """The epsilon one synthetic dataset is charged: the global epsilon when the release has
    one (censoring), else the local epsilon_x."""
    g = result.global_epsilon
    return result.epsilon if g is None else float(g)


def _parsed(attrs: dict[str, Any], key: str) -> Any:
    value = attrs.get(key)
    return json.loads(value) if isinstance(value, str) else value


def privacy_record(spec: ReleaseSpec, result) -> dict[str, Any]:
    """The content of ``privacy.json``."""
    attrs = {k: _jsonable(v) for k, v in result.datatree["privacy"].attrs.items()}
    eps = charged_epsilon(result)
    global_eps = result.global_epsilon
    guarantee_type = (
        "global (non-asymptotic) epsilon-DP by censoring, given the weights"
        if global_eps is not None
        else "local asymptotic (epsilon_x of this database; not a worst-case guarantee)"
    )
    stages = [
        {
            "stage": "unweighted fit, risk and weights",
            "epsilon": 0.0,
            "note": "uses the data; covered only through the accountant of the weighted fit "
            "(the papers' convention), not by a separate budget",
        }
    ]
    decomposition = attrs.get("decomposition", "weighted")
    if decomposition == "averaged":
        stages.append(
            {
                "stage": "range-averaged inclusion probabilities lambda_i",
                "epsilon": 0.0,
                "note": "posterior-predictive averages over data sets (a relaxation, paper "
                "section 2); covered by the range-averaged accountant",
            }
        )
    if "calibration" in attrs:
        stages.append(
            {
                "stage": "calibration of the weight scale to target_epsilon",
                "epsilon": 0.0,
                "note": "importance reweighting and refits; the final fit is accounted",
            }
        )
    stages += [
        {"stage": "weighted pseudo posterior, per synthetic dataset", "epsilon": eps},
        {"stage": f"release of m = {spec.m} datasets", "epsilon": spec.m * eps},
    ]
    return {
        "mechanism": spec.mechanism,
        "guarantee_kind": "global" if global_eps is not None else "local",
        "description": attrs.get("mechanism"),
        "decomposition": decomposition,
        "epsilon_per_dataset": eps,
        "local_epsilon": result.epsilon,
        "global_epsilon": global_eps,
        "m": spec.m,
        "epsilon_total": spec.m * eps,
        "composition": "basic: m synthetic datasets from m posterior draws cost m x epsilon",
        "delta": None,
        "delta_note": "pure epsilon: the pseudo posterior mechanism has no delta",
        "guarantee_type": guarantee_type,
        "guarantee": str(attrs.get("guarantee", "")),
        "neighbouring_relation": str(attrs.get("neighbouring_relation", "")),
        "unweighted_epsilon": result.unweighted_epsilon,
        "units": str(attrs.get("units", "")),
        "sensitive_range": _parsed(attrs, "sensitive_range"),
        "calibration": _parsed(attrs, "calibration"),
        "stages": stages,
        "lipschitz": {
            "max": float(result.lipschitz.max()),
            "median": float(result.lipschitz.median()),
        },
        "weights": {
            "min": float(result.alpha.min()),
            "mean": float(result.alpha.mean()),
            "max": float(result.alpha.max()),
        },
        "mechanism_options": {k: _jsonable(v) for k, v in spec.mechanism_options.items()},
        "mechanism_attrs": attrs,
        "budget": {
            "total_epsilon": spec.total_epsilon,
            "max_epsilon": spec.max_epsilon,
            "charge": spec.m * eps,
            "ledger": str(spec.ledger_path),
        },
        "diagnostics": {k: _diagnostics_json(d) for k, d in result.diagnostics.items()},
    }


def _measures(spec: ReleaseSpec, data: pd.DataFrame, synthetic: list[pd.DataFrame]):
    """Utility (ECDF, pMSE, CI overlap) and disclosure tables, one block per dataset."""
    from pseudopost.evaluate.disclosure import attribute_risk, identification_risk
    from pseudopost.evaluate.utility import ci_overlap, ecdf_utility, pmse

    util, overlap, disc = [], [], []
    for j, s in enumerate(synthetic, start=1):
        ecdf = ecdf_utility(data, s, spec.columns).reset_index()
        ecdf.insert(0, "dataset", j)
        ecdf["pMSE"] = pmse(data, s, spec.columns, seed=spec.seed)
        util.append(ecdf)
        try:
            ci = ci_overlap(
                data,
                s,
                spec.outcome,
                list(spec.predictors),
                log_outcome=spec.family == "lognormal",
            ).reset_index()
            overlap.append(ci[["coefficient", "overlap"]].assign(dataset=j, note=""))
        except ValueError as exc:  # e.g. a synthetic 0 under a log outcome: say so in the report
            overlap.append(
                pd.DataFrame(
                    {"coefficient": ["-"], "overlap": [np.nan], "dataset": [j], "note": [str(exc)]}
                )
            )
        ir = identification_risk(
            data, s, spec.disclosure_keys, spec.outcome, spec.disclosure_radius
        )
        ar = attribute_risk(
            data, s, spec.disclosure_keys, spec.disclosure_sensitive, spec.disclosure_radius
        )
        disc.append(
            {
                "dataset": j,
                "radius": spec.disclosure_radius,
                "expected_match_risk": ir["expected_match_risk"],
                "true_match_rate": ir["true_match_rate"],
                f"attribute_risk ({spec.disclosure_sensitive})": ar["attribute_risk"],
                "attribute_baseline": ar["baseline"],
            }
        )
    overlap = pd.concat(overlap, ignore_index=True)[["dataset", "coefficient", "overlap", "note"]]
    return pd.concat(util, ignore_index=True), overlap, pd.DataFrame(disc)


def prepare_release(spec_path, out=None) -> tuple[ReleaseSpec, pd.DataFrame, str]:
    """Every check that runs before any work: spec, data, output folder, budget."""
    spec = load_spec(spec_path, out)
    data = validate(spec)
    spec = resolve(spec, data)
    if spec.out.exists():
        raise SpecError(
            f"output folder {str(spec.out)!r} already exists ('release.out' / --out). "
            "Fix: choose a new folder; releases never overwrite."
        )
    digest = sha256_file(spec.data_path)
    Ledger(spec.ledger_path).precheck(
        digest,
        spec.total_epsilon,
        release_cap(spec),
        total_delta=spec.total_delta,
        delta_cap=spec.delta if spec.lighter and spec.delta else 0.0,
    )
    return spec, data, digest


def release_cap(spec: ReleaseSpec) -> float:
    """The most epsilon a release may charge: ``m * max_epsilon`` for the pseudo posterior,
    the declared ``epsilon`` (whatever m) for a lighter release."""
    return spec.epsilon if spec.lighter else spec.m * spec.max_epsilon


def _publish(spec: ReleaseSpec, digest: str, stage: Path, entry: dict[str, Any]) -> None:
    """Under the ledger's lock: re-check, charge ``entry``, then rename ``stage`` to the output
    folder (module docstring, step 4). On any failure the staging folder is removed."""

    def publish() -> None:
        os.rename(stage, spec.out)
        fsync_dir(spec.out.parent)

    def precondition() -> None:
        if spec.out.exists():
            raise SpecError(
                f"output folder {str(spec.out)!r} appeared during the release; "
                "nothing was charged. Fix: choose a new folder."
            )

    Ledger(spec.ledger_path).commit(
        digest,
        spec.total_epsilon,
        entry,
        total_delta=spec.total_delta,
        precondition=precondition,
        then=publish,
    )


def run_release(
    spec_path: str | os.PathLike, out: str | os.PathLike | None = None, *, progress=None
) -> ReleaseOutcome:
    """Run the release a spec describes (module docstring); raises :class:`SpecError` or
    :class:`~pseudopost.release.ledger.BudgetError` before any work when it cannot go ahead."""
    from pseudopost.fitting.sampler import SamplingWarning

    spec, data, digest = prepare_release(spec_path, out)
    if spec.lighter:
        return _run_lighter(spec, data, digest)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    _say(f"fitting the pseudo posterior ({spec.chains} chains x {spec.draws} draws)")
    fit_seed, synth_seed = np.random.SeedSequence(spec.seed).spawn(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SamplingWarning)
        result = spec.build_mechanism().fit(
            data,
            draws=spec.draws,
            tune=spec.tune,
            chains=spec.chains,
            seed=np.random.default_rng(fit_seed),
            progress=progress,
        )
    problems = [str(w.message) for w in caught if issubclass(w.category, SamplingWarning)]
    for p in problems:
        _say(f"warning: {p}")
    timings["fit_total"] = time.perf_counter() - t0
    timings.update({f"fit_{k}": v for k, v in result.timings.items()})
    eps = charged_epsilon(result)
    if eps > spec.max_epsilon:
        raise BudgetError(
            f"budget refused: the fit's epsilon {eps:.6g} exceeds budget.max_epsilon = "
            f"{spec.max_epsilon:.6g}; nothing was written and the ledger is unchanged. Fix: "
            "lower mechanism.scale/shift (smaller weights) or raise budget.max_epsilon."
        )
    _say(f"epsilon = {eps:.4f} per dataset; synthesizing m = {spec.m}")
    t0 = time.perf_counter()
    synthetic = result.synthesize(spec.m, seed=np.random.default_rng(synth_seed))
    synthetic = [synthetic] if isinstance(synthetic, pd.DataFrame) else synthetic
    timings["synthesize"] = time.perf_counter() - t0
    _check_finite(synthetic)
    t0 = time.perf_counter()
    utility, overlap, disclosure = _measures(spec, data, synthetic)
    timings["measures"] = time.perf_counter() - t0

    stage = _staging_dir(spec.out)
    try:
        files = _write_outputs(
            stage,
            spec,
            data,
            digest,
            result,
            synthetic,
            (utility, overlap, disclosure),
            problems,
            timings,
        )
        guarantee = "global" if result.global_epsilon is not None else "local"
        entry = {
            "out": str(spec.out),
            "m": spec.m,
            "epsilon": eps,
            "charge": spec.m * eps,
            "delta": 0.0,
            "delta_charge": 0.0,
            "guarantee": guarantee,
            "neighbouring": "add/remove one record",
            "spec_sha256": spec.sha256,
            "mechanism": spec.mechanism,
        }
        _publish(spec, digest, stage, entry)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    _say(f"wrote {spec.out} ({', '.join(files)}); charged epsilon {spec.m * eps:.4f}")
    return ReleaseOutcome(spec.out, eps, spec.m * eps, files, 0.0, guarantee)


def _run_lighter(spec: ReleaseSpec, data: pd.DataFrame, digest: str) -> ReleaseOutcome:
    """A REPS, PRISM or entropy-histogram release (module docstring of lighter_run)."""
    from pseudopost.release.lighter_run import measures, produce

    made = produce(spec, data)
    if made.epsilon > spec.epsilon * (1 + 1e-9) + _LEDGER_TOL:
        raise ReleaseError(
            f"the {spec.mechanism} release reports epsilon {made.epsilon:.6g}, above the "
            f"declared mechanism.epsilon = {spec.epsilon:.6g}; nothing was written and the "
            "ledger is unchanged. Fix: report this as a bug."
        )
    _check_finite(made.synthetic)
    t0 = time.perf_counter()
    tables = measures(spec, data, made.synthetic)
    made.timings["measures"] = time.perf_counter() - t0
    stage = _staging_dir(spec.out)
    try:
        files = _write_lighter(stage, spec, data, digest, made, tables)
        entry = {
            "out": str(spec.out),
            "m": spec.m,
            "epsilon": made.epsilon,
            "charge": made.epsilon,
            "delta": made.delta,
            "delta_charge": made.delta,
            "guarantee": "global",
            "neighbouring": made.privacy["neighbouring_relation"],
            "spec_sha256": spec.sha256,
            "mechanism": spec.mechanism,
        }
        _publish(spec, digest, stage, entry)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    _say(
        f"wrote {spec.out} ({', '.join(files)}); charged epsilon {made.epsilon:.4f}, "
        f"delta {made.delta:.3g}"
    )
    return ReleaseOutcome(spec.out, made.epsilon, made.epsilon, files, made.delta, "global")


_LEDGER_TOL = 1e-12


def _write_lighter(stage, spec, data, digest, made, tables) -> list[str]:
    from pseudopost.release.report import build_synthetic_report

    t0 = time.perf_counter()
    names = []
    for j, frame in enumerate(made.synthetic, start=1):
        name = f"synthetic-{j}.csv"
        frame.to_csv(stage / name, index=False)
        names.append(name)
    marginals, models, disclosure = tables
    privacy = dict(made.privacy)
    privacy["disclosure_keys"] = list(spec.disclosure_keys)
    privacy["utility"] = {
        "marginals": _records(marginals),
        "models": _records(models),
    }
    privacy["disclosure"] = _records(disclosure)
    (stage / "privacy.json").write_text(json.dumps(privacy, indent=2, sort_keys=True))
    names.append("privacy.json")
    (stage / "spec.toml").write_text(spec.text, encoding="utf-8")
    names.append("spec.toml")
    if spec.report:
        page = build_synthetic_report(
            title=f"pseudopost release: {spec.data_path.name} ({spec.mechanism})",
            privacy=privacy,
            real=data[spec.columns],
            synthetic=made.synthetic,
            columns=spec.columns,
            marginals=marginals,
            models=models,
            disclosure=disclosure,
            per_record=made.per_record,
        )
        (stage / "report.html").write_text(page, encoding="utf-8")
        names.append("report.html")
    made.timings["write"] = time.perf_counter() - t0
    _write_manifest(stage, spec, data, digest, names, made.timings)
    names.append("manifest.json")
    _fsync_all(stage, names)
    return names


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-safe dicts (NaN as null)."""
    return json.loads(frame.to_json(orient="records"))


def _write_manifest(stage, spec, data, digest, names, timings) -> None:
    manifest = {
        "input": {
            "path": str(spec.data_path),
            "sha256": digest,
            "rows": len(data),
            "columns": list(data.columns),
        },
        "spec": {"path": str(spec.path), "sha256": spec.sha256},
        "mechanism": spec.mechanism,
        "seed": spec.seed,
        "versions": _versions(),
        "timings_seconds": timings,
        "files": {n: sha256_file(stage / n) for n in names},
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": sys.argv,
    }
    (stage / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True))


def _fsync_all(stage: Path, names: list[str]) -> None:
    for n in names:
        with open(stage / n, "rb") as fh:
            os.fsync(fh.fileno())
    fsync_dir(stage)


def _check_finite(synthetic: list[pd.DataFrame]) -> None:
    for j, frame in enumerate(synthetic, start=1):
        values = frame.select_dtypes("number")
        bad = ~np.isfinite(values.to_numpy(dtype=float))
        if bad.any():
            col = values.columns[int(np.flatnonzero(bad.any(axis=0))[0])]
            raise ReleaseError(
                f"synthetic dataset {j} has {int(bad.sum())} non-finite value(s) (column "
                f"{col!r}): the posterior reached extreme parameter values. Nothing was written "
                "and the ledger is unchanged. Fix: check the sampler diagnostics; use more "
                "draws/tune, a tighter model.prior_scale, or a larger censor_epsilon."
            )


def _write_outputs(
    stage, spec, data, digest, result, synthetic, measures, problems, timings
) -> list[str]:
    from pseudopost.release.report import build_report

    names = []
    for j, frame in enumerate(synthetic, start=1):
        name = f"synthetic-{j}.csv"
        frame.to_csv(stage / name, index=False)
        names.append(name)
    privacy = privacy_record(spec, result)
    utility, overlap, disclosure = measures
    privacy["utility"] = {
        "ecdf_and_pmse": utility.to_dict(orient="records"),
        "ci_overlap": overlap.to_dict(orient="records"),
    }
    privacy["disclosure"] = disclosure.to_dict(orient="records")
    (stage / "privacy.json").write_text(json.dumps(privacy, indent=2, sort_keys=True))
    names.append("privacy.json")
    t0 = time.perf_counter()
    save_fit(result.datatree, stage / "fit.nc")
    names.append("fit.nc")
    (stage / "spec.toml").write_text(spec.text, encoding="utf-8")
    names.append("spec.toml")
    if spec.report:
        page = build_report(
            title=f"pseudopost release: {spec.data_path.name} ({spec.family} model of "
            f"{spec.outcome})",
            privacy=privacy,
            lipschitz=result.lipschitz.to_numpy(),
            unweighted_lipschitz=result.unweighted_lipschitz.to_numpy(),
            alpha=result.alpha.to_numpy(),
            real=data,
            synthetic=synthetic,
            columns=spec.columns,
            utility=utility,
            overlap=overlap,
            disclosure=disclosure,
            diagnostics={k: d.table for k, d in result.diagnostics.items()},
            divergences={k: d.divergences for k, d in result.diagnostics.items()},
            problems=problems,
        )
        (stage / "report.html").write_text(page, encoding="utf-8")
        names.append("report.html")
    timings["write"] = time.perf_counter() - t0
    _write_manifest(stage, spec, data, digest, names, timings)
    names.append("manifest.json")
    _fsync_all(stage, names)
    return names


@dataclass(frozen=True)
class AccountResult:
    """The accountant re-run on a saved release."""

    epsilon: float
    saved_epsilon: float
    lipschitz: np.ndarray

    @property
    def agrees(self) -> bool:
        return bool(np.isclose(self.epsilon, self.saved_epsilon, rtol=1e-9, atol=1e-12))


def account_release(release_dir: str | os.PathLike, data_path=None) -> AccountResult:
    """Recompute the local epsilon from a release folder: :math:`\\varepsilon = 2\\max_i c_i
    \\max_m |g_{\\theta_m}(x_i)|` (:math:`c = \\alpha`, :math:`g = f` for the plain mechanism;
    the range-truncated, range-averaged and censored splits of
    :mod:`pseudopost.privacy.decomposition` otherwise). The model is rebuilt from its
    ``spec.toml`` and the data (checked against the manifest's SHA-256); the weighted draws (kept
    draws only), weights, ranges and lambda come from ``fit.nc``."""
    from pseudopost.models.loglik import RecordFunction, stack_draws
    from pseudopost.privacy.accountant import account, sensitive_function

    folder = Path(release_dir)
    if (folder / "spec.toml").is_file() and (folder / "privacy.json").is_file():
        saved = json.loads((folder / "privacy.json").read_text())
        if saved.get("mechanism") in MECHANISMS[1:]:
            raise SpecError(
                f"release folder {str(folder)!r} holds a {saved['mechanism']} release: there is "
                "no posterior to re-account for this mechanism (its (epsilon, delta) = "
                f"({saved['epsilon']:.6g}, {saved['delta']:.3g}) is fixed by its noise "
                "calibration before the data are seen; see privacy.json). Fix: use "
                "'pseudopost account' on pseudo posterior releases only."
            )
    for name in ("spec.toml", "fit.nc", "manifest.json"):
        if not (folder / name).is_file():
            raise SpecError(
                f"release folder {str(folder)!r} has no {name}. Fix: give the folder a "
                "'pseudopost synthesize' run wrote."
            )
    manifest = json.loads((folder / "manifest.json").read_text())
    spec = load_spec(folder / "spec.toml", out=folder)
    if data_path is not None:
        spec = _with_data(spec, Path(data_path).resolve())
    elif not spec.data_path.is_file():
        spec = _with_data(spec, Path(manifest["input"]["path"]))
    data = validate(spec)
    digest = sha256_file(spec.data_path)
    if digest != manifest["input"]["sha256"]:
        raise SpecError(
            f"data file {str(spec.data_path)!r} has SHA-256 {digest[:12]}..., not the "
            f"released input's {manifest['input']['sha256'][:12]}.... Fix: pass --data with the "
            "file the release used."
        )
    tree = load_fit(folder / "fit.nc")
    model = spec.build_model()
    prepared = model.prepare(data)
    base = model.build(prepared)
    decomp = _decomposition(tree)
    alpha = tree["weights"]["alpha"].to_numpy()
    sens = sensitive_function(decomp, model, base, RecordFunction(base, model.observed))
    free = [rv.name for rv in base.free_RVs]
    draws = stack_draws(tree["posterior"].to_dataset(), free)
    kept = tree["privacy"]["draw_kept"].transpose("chain", "draw").to_numpy().ravel()
    draws = {k: v[kept] for k, v in draws.items()}
    acc = account(sens, draws, alpha, decomp)
    return AccountResult(acc.epsilon, float(tree["privacy"].attrs["epsilon"]), acc.lipschitz)


def _decomposition(tree: xr.DataTree):
    """The accountant's public/sensitive split, rebuilt from the saved fit."""
    from pseudopost.privacy.decomposition import (
        Censored,
        RangeAveraged,
        RangeTruncated,
        Unrestricted,
    )

    attrs = tree["privacy"].attrs
    name = attrs.get("decomposition", "weighted")
    if name == "truncated":
        priv = tree["privacy"]
        return RangeTruncated(priv["range_lower"].to_numpy(), priv["range_upper"].to_numpy())
    if name == "averaged":
        return RangeAveraged(tree["weights"]["lambda"].to_numpy())
    if name == "censored":
        return Censored(float(attrs["global_epsilon"]) / 2.0)
    return Unrestricted()


def _with_data(spec: ReleaseSpec, path: Path) -> ReleaseSpec:
    from dataclasses import replace

    return replace(spec, data_path=path)
