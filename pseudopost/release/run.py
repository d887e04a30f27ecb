"""Run a release from a spec, and re-run the accountant on a saved one.

:func:`run_release` takes every mechanism through the same steps, asking its adapter
(:mod:`pseudopost.release.adapters`) for the mechanism's part and reading the result's
:class:`~pseudopost.privacy.PrivacyStatement` for what the release is charged:

1. **pre-check**: the spec and its data (:func:`~pseudopost.release.spec.checked`: the data
   and an SPSS/Stata codebook read once, the adapter's plan built once, both carried by the
   spec to every later step), that the output folder does not exist, and that the ledger has
   room for the adapter's cap (``m * max_epsilon`` for a statement per dataset, the declared
   (epsilon, delta) for a statement per release); any failure here stops before any work and
   before anything is written;
2. **produce**: fit; refuse if the statement charges more than the cap
   (``statement.charge(m)``); then draw the m synthetic datasets;
3. **check** that every synthetic value is finite; compute the utility and disclosure measures;
4. **stage**: build every output in a hidden staging folder beside the output folder (each file
   written atomically);
5. **commit**: under the ledger's lock, re-check the budget, append the entry (the statement
   and its charge), write the ledger atomically, then rename the staging folder to the output
   folder.

A crash before step 5 leaves the ledger untouched and no output folder (a stale staging folder
``.NAME.partial-PID`` of a dead process is removed by the next release to the same place).

Outputs: ``synthetic-1.csv`` .. ``synthetic-m.csv``, ``privacy.json`` (the statement, the
mechanism's stages and details, the measures), the adapter's own files (the pseudo posterior's
``fit.nc``), ``manifest.json`` (SHA-256 of input, spec and outputs, package versions, seed,
timings), ``report.html`` and ``spec.toml`` (a copy, for :func:`account_release`).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import sys
import time
from dataclasses import dataclass, replace
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pseudopost._io import atomic_write, fsync_dir, write_csv, write_json
from pseudopost.privacy.statement import PrivacyStatement
from pseudopost.release.adapters import ADAPTERS, AccountResult, MechanismAdapter, Produced
from pseudopost.release.adapters.base import require_file
from pseudopost.release.errors import ReleaseError, SpecError
from pseudopost.release.files import jsonable, records, say, sha256_file, staging_dir
from pseudopost.release.ledger import Ledger
from pseudopost.release.measures import Measures
from pseudopost.release.report import build_report
from pseudopost.release.schema import ReleaseSpec
from pseudopost.release.spec import checked, load_spec

__all__ = [
    "AccountResult",
    "ReleaseError",
    "ReleaseOutcome",
    "account_release",
    "prepare_release",
    "run_release",
    "sha256_file",
]

#: the packages whose versions a manifest records: a release repeats to the digit under the
#: same seed only on the same install (numba's compiled likelihood kernels and BLAS fix the
#: rounding of every gradient, and with it the NUTS trajectories: on a new machine and install
#: at the same commit, YRBSS's epsilon moved from 37.8 to 37.6)
_VERSIONS = (
    "pseudopost",
    "pymc",
    "pytensor",
    "nutpie",
    "numba",
    "opendp",
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
#: slack when holding a statement to its cap (the mechanism's own sums of stage budgets)
_RTOL = 1e-9
_ATOL = 1e-12

# the names the tests of the staging and finite checks use
_staging_dir = staging_dir


@dataclass(frozen=True)
class ReleaseOutcome:
    """What a release produced: the statement's epsilon and delta (per dataset or per release,
    ``statement.unit``), what the ledger was charged, the files, the guarantee's scope."""

    out: Path
    epsilon: float
    charge: float
    files: list[str]
    delta: float = 0.0
    guarantee: str = "local"
    statement: PrivacyStatement | None = None
    delta_charge: float = 0.0


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in _VERSIONS:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def prepare_release(spec_path, out=None) -> tuple[ReleaseSpec, pd.DataFrame, str]:
    """Every check that runs before any work: spec, data, output folder, budget. The spec
    returned is resolved and carries the input and the adapter's plan (``spec.loaded``); the
    data returned are its frame."""
    spec = checked(load_spec(spec_path, out))
    data = spec.loaded.frame
    if spec.out.exists():
        raise SpecError(
            f"output folder {str(spec.out)!r} already exists ('release.out' / --out). "
            "Fix: choose a new folder; releases never overwrite."
        )
    digest = sha256_file(spec.data_path)
    cap, delta_cap = ADAPTERS[spec.mechanism].cap(spec)
    Ledger(spec.ledger_path).precheck(
        digest, spec.total_epsilon, cap, total_delta=spec.total_delta, delta_cap=delta_cap
    )
    return spec, data, digest


def _check_cap(adapter: MechanismAdapter, spec: ReleaseSpec, statement: PrivacyStatement) -> None:
    """Refuse a statement that charges more than the adapter's cap (step 2)."""
    eps, delta = statement.charge(spec.m)
    cap, delta_cap = adapter.cap(spec)
    if eps > cap * (1 + _RTOL) + _ATOL or delta > delta_cap * (1 + _RTOL) + _ATOL:
        raise adapter.over_cap(spec, statement)


def _check_finite(synthetic: list[pd.DataFrame], missing_allowed: bool = False) -> None:
    """Refuse non-finite synthetic numbers; empty cells (NaN) are allowed when the adapter
    releases files with missing cells (``MechanismAdapter.missing_cells``)."""
    for j, frame in enumerate(synthetic, start=1):
        values = frame.select_dtypes("number")
        numbers = values.to_numpy(dtype=float, na_value=np.nan)
        bad = np.isinf(numbers) if missing_allowed else ~np.isfinite(numbers)
        if bad.any():
            col = values.columns[int(np.flatnonzero(bad.any(axis=0))[0])]
            raise ReleaseError(
                f"synthetic dataset {j} has {int(bad.sum())} non-finite value(s) (column "
                f"{col!r}): the release reached extreme values. Nothing was written and the "
                "ledger is unchanged. Fix: check the fit's diagnostics in a dry run; for the "
                "pseudo posterior use more draws/tune, a tighter model.prior_scale, or a larger "
                "censor_epsilon."
            )


def run_release(
    spec_path: str | os.PathLike, out: str | os.PathLike | None = None, *, progress=None
) -> ReleaseOutcome:
    """Run the release a spec describes (module docstring); raises :class:`SpecError` or
    :class:`~pseudopost.release.ledger.BudgetError` before any work when it cannot go ahead."""
    spec, data, digest = prepare_release(spec_path, out)
    adapter = ADAPTERS[spec.mechanism]
    produced = adapter.fit(spec, data, progress=progress)
    statement = produced.statement
    _check_cap(adapter, spec, statement)
    eps, delta = statement.charge(spec.m)
    per = "per dataset" if statement.unit == "dataset" else "for the release"
    say(
        f"{statement.scope} epsilon = {statement.epsilon:.4f}, delta = {statement.delta:.3g} "
        f"{per}; synthesizing m = {spec.m}"
    )
    t0 = time.perf_counter()
    produced.synthetic = adapter.synthesize(spec, produced)
    produced.timings["synthesize"] = time.perf_counter() - t0
    _check_finite(produced.synthetic, adapter.missing_cells)
    t0 = time.perf_counter()
    measures = adapter.measures(spec, data, produced.synthetic)
    produced.timings["measures"] = time.perf_counter() - t0
    stage = staging_dir(spec.out)
    try:
        files = _write(stage, adapter, spec, data, digest, produced, measures)
        entry = {
            "out": str(spec.out),
            "m": spec.m,
            "epsilon": statement.epsilon,
            "charge": eps,
            "delta": statement.delta,
            "delta_charge": delta,
            "guarantee": statement.scope,
            "neighbouring": statement.neighbouring,
            "spec_sha256": spec.sha256,
            "mechanism": spec.mechanism,
            "statement": statement.as_dict(),
        }
        _publish(spec, digest, stage, entry)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    say(f"wrote {spec.out} ({', '.join(files)}); charged epsilon {eps:.4f}, delta {delta:.3g}")
    return ReleaseOutcome(
        spec.out, statement.epsilon, eps, files, statement.delta, statement.scope, statement, delta
    )


def _write(
    stage: Path,
    adapter: MechanismAdapter,
    spec: ReleaseSpec,
    data: pd.DataFrame,
    digest: str,
    produced: Produced,
    measures: Measures,
) -> list[str]:
    """Every output file, in ``stage``; returns their names (manifest last)."""
    t0 = time.perf_counter()
    names = []
    for j, frame in enumerate(produced.synthetic, start=1):
        write_csv(frame, stage / f"synthetic-{j}.csv")
        names.append(f"synthetic-{j}.csv")
    statement = produced.statement
    privacy = {
        "mechanism": spec.mechanism,
        "m": spec.m,
        **adapter.privacy_record(spec, produced),
        "statement": statement.as_dict(),
        "guarantee_kind": statement.scope,
        "disclosure_keys": list(spec.disclosure_keys),
        "utility": {name: records(t) for name, t in measures.utility.items()},
        "disclosure": records(measures.disclosure),
    }
    if measures.verdicts is not None:
        privacy["verdicts"] = records(measures.verdicts)
    privacy = jsonable(privacy)
    write_json(privacy, stage / "privacy.json")
    names.append("privacy.json")
    names += adapter.write_files(stage, spec, produced)
    atomic_write(stage / "spec.toml", lambda p: p.write_text(spec.text, encoding="utf-8"))
    names.append("spec.toml")
    if spec.report:
        page = build_report(
            title=adapter.report_title(spec),
            statement=statement,
            parts=adapter.report_parts(spec, produced, privacy),
            real=data,
            synthetic=produced.synthetic,
            columns=spec.columns,
            measures=measures,
        )
        atomic_write(stage / "report.html", lambda p: p.write_text(page, encoding="utf-8"))
        names.append("report.html")
    produced.timings["write"] = time.perf_counter() - t0
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
        "timings_seconds": produced.timings,
        "files": {n: sha256_file(stage / n) for n in names},
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": sys.argv,
    }
    write_json(manifest, stage / "manifest.json")
    return [*names, "manifest.json"]


def _publish(spec: ReleaseSpec, digest: str, stage: Path, entry: dict[str, Any]) -> None:
    """Under the ledger's lock: re-check, charge ``entry``, then rename ``stage`` to the output
    folder (module docstring, step 5)."""

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


def account_release(release_dir: str | os.PathLike, data_path=None) -> AccountResult:
    """Re-run the accountant on a release folder (``pseudopost account``): the spec is read
    from its ``spec.toml``, its adapter checks that the release has something to re-account
    (:meth:`~pseudopost.release.adapters.base.MechanismAdapter.check_accountable`; only the
    pseudo posterior has), the data (``data_path``, else the spec's, else the manifest's path),
    read and planned once as in a release, are checked against the manifest's SHA-256, and the
    adapter recomputes epsilon."""
    folder = Path(release_dir)
    require_file(folder, "spec.toml")
    spec = load_spec(folder / "spec.toml", out=folder)
    adapter = ADAPTERS[spec.mechanism]
    adapter.check_accountable(folder)
    require_file(folder, "manifest.json")
    manifest = json.loads((folder / "manifest.json").read_text())
    if data_path is not None:
        spec = replace(spec, data_path=Path(data_path).resolve())
    elif not spec.data_path.is_file():
        spec = replace(spec, data_path=Path(manifest["input"]["path"]))
    spec = checked(spec)
    digest = sha256_file(spec.data_path)
    if digest != manifest["input"]["sha256"]:
        raise SpecError(
            f"data file {str(spec.data_path)!r} has SHA-256 {digest[:12]}..., not the "
            f"released input's {manifest['input']['sha256'][:12]}.... Fix: pass --data with the "
            "file the release used."
        )
    return adapter.account(folder, spec, spec.loaded.frame)
