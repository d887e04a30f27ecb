"""SDMetrics' quality report and anonymeter's risks, run inside the benchmark venv.

anonymeter 1.x needs numpy < 2 and SDMetrics pandas < 3, neither of which installs beside the
package's own environment; both live in ``.bench-venv`` (``bash benchmarks/setup_bench.sh``),
and ``benchmarks/defaults.py`` calls this script there on CSV files. It imports neither numpy 2
nor pseudopost: it reads one job folder and writes ``result.json`` into it.

The folder holds ``train.csv`` (the records the synthesizers saw), ``control.csv`` (the held-out
records no synthesizer saw), one CSV per synthetic file, and ``job.json``::

    {"kinds": {column: "numerical" | "categorical"}, "synthetic": {label: file name},
     "secret": column, "n_attacks": int, "seed": int, "measures": ["quality", "anonymeter"]}

Quality: ``sdmetrics.reports.single_table.QualityReport`` with its defaults, against the
training records: the overall score, "Column Shapes" and "Column Pair Trends" (a pair whose
real association is below SDMetrics' threshold is left out by SDMetrics itself). Empty cells of
a categorical column are a level "<missing>"; numerical columns keep their empty cells.

Risks: anonymeter's ``SinglingOutEvaluator`` (multivariate, 3 columns a query, at most
``max_attempts`` = 10^5 tries to find queries), ``LinkabilityEvaluator`` (the columns split into
their first and second halves as the two auxiliary sets, 10 neighbours) and
``InferenceEvaluator`` (every other column known, ``secret`` to infer; a regression when it is
numerical), each with the control records, ``n_attacks`` attacks and the risk's point estimate
(``risk().value``: the attack's success beyond the control baseline) and its upper 95% bound.
The singling-out attack takes ``seed``; the other two draw their targets from NumPy's global
state (``DataFrame.sample``) and the linkability baseline from an unseeded
``np.random.default_rng()``, so both run under :func:`_seeded` (the same job gives the same
risks: before, two runs on the same Adult files gave linkability 0.033 and 0.016).

Run: ``.bench-venv/bin/python benchmarks/_bench_venv.py JOB_FOLDER``
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import pandas as pd


@contextmanager
def _seeded(seed: int):
    """NumPy's global state seeded with ``seed``, and ``np.random.default_rng()`` without a
    seed returning a generator seeded from it, inside the block (anonymeter's linkability and
    inference evaluators take no seed)."""
    import numpy as np

    real = np.random.default_rng
    state = np.random.get_state()  # noqa: NPY002 (anonymeter reads the global state)
    np.random.seed(seed)  # noqa: NPY002
    np.random.default_rng = lambda s=None: real(seed if s is None else s)
    try:
        yield
    finally:
        np.random.default_rng = real
        np.random.set_state(state)  # noqa: NPY002


def _read(path: Path, kinds: dict[str, str]) -> pd.DataFrame:
    dtypes = {c: (float if k == "numerical" else str) for c, k in kinds.items()}
    frame = pd.read_csv(path, dtype=dtypes, keep_default_na=False, na_values=[""])
    return frame[list(kinds)]


def quality(real: pd.DataFrame, syn: pd.DataFrame, kinds: dict[str, str]) -> dict:
    from sdmetrics.reports.single_table import QualityReport

    def fill(frame):
        out = frame.copy()
        for c, k in kinds.items():
            if k == "categorical":
                out[c] = out[c].fillna("<missing>")
        return out

    meta = {"columns": {c: {"sdtype": k} for c, k in kinds.items()}}
    report = QualityReport()
    report.generate(fill(real), fill(syn), meta, verbose=False)
    props = report.get_properties().set_index("Property")["Score"]
    return {
        "quality": float(report.get_score()),
        "column shapes": float(props.get("Column Shapes", float("nan"))),
        "column pair trends": float(props.get("Column Pair Trends", float("nan"))),
    }


def risks(
    train: pd.DataFrame,
    syn: pd.DataFrame,
    control: pd.DataFrame,
    kinds: dict[str, str],
    secret: str,
    n_attacks: int,
    seed: int,
) -> dict:
    from anonymeter.evaluators import (
        InferenceEvaluator,
        LinkabilityEvaluator,
        SinglingOutEvaluator,
    )

    cols = list(kinds)
    n = min(n_attacks, len(control))
    out = {}
    common = {"ori": train, "syn": syn, "control": control, "n_attacks": n}
    so = SinglingOutEvaluator(**common, n_cols=3, max_attempts=100_000, seed=seed).evaluate(
        mode="multivariate"
    )
    half = len(cols) // 2
    with _seeded(seed):
        link = LinkabilityEvaluator(
            **common, n_neighbors=10, aux_cols=(cols[:half], cols[half:])
        ).evaluate(n_jobs=1)
    with _seeded(seed + 1):
        inf = InferenceEvaluator(
            **common,
            secret=secret,
            aux_cols=[c for c in cols if c != secret],
            regression=kinds[secret] == "numerical",
        ).evaluate(n_jobs=1)
    for name, ev in (("singling out", so), ("linkability", link), ("inference", inf)):
        r = ev.risk()
        out[f"{name} risk"] = float(r.value)
        out[f"{name} risk upper"] = float(r.ci[1])
    return out


def main(folder: str) -> int:
    warnings.simplefilter("ignore")
    root = Path(folder)
    job = json.loads((root / "job.json").read_text())
    kinds = job["kinds"]
    train = _read(root / "train.csv", kinds)
    control = _read(root / "control.csv", kinds)
    result = {}
    for label, name in job["synthetic"].items():
        syn = _read(root / name, kinds)
        row, t0 = {}, time.perf_counter()
        if "quality" in job["measures"]:
            row |= quality(train, syn, kinds)
        t1 = time.perf_counter()
        if "anonymeter" in job["measures"]:
            row |= risks(train, syn, control, kinds, job["secret"], job["n_attacks"],
                         job["seed"])  # fmt: skip
        row |= {"quality s": t1 - t0, "anonymeter s": time.perf_counter() - t1}
        result[label] = row
        print(f"  {label}: {row}", file=sys.stderr, flush=True)
    (root / "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1]))
