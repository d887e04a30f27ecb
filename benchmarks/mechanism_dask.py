"""The pseudo posterior mechanism on the Dask backend: n = 1e6 in memory, n = 1e7 out of core.

Log-normal regression of the range-restricted paper's simulation (z ~ N(2, 1),
x ~ LogNormal(z + 1, 1)), 2 chains x 1000 draws + 1000 tune, end to end: statistics, both fits
(sufficient statistics), risk, weights, accountant and one synthetic dataset.

* ``memory``: a Dask DataFrame built from an in-memory pandas frame (16 partitions), synthesis
  computed back into memory (n = 1e6).
* ``parquet``: a Parquet file written chunk by chunk into a temporary folder (row groups of 500k
  records; the data are never whole in memory), the release run on the path with the risk stored
  in a work folder, the synthetic dataset written to Parquet partition by partition (n = 1e7).
  The same configuration at n = 2e6 and 1e7 with fewer draws shows that peak memory does not
  grow with n.

Each size runs in a fresh subprocess so that its peak RSS is its own (the Parquet file is written
by that subprocess before the clock starts; RSS covers writing too). Goals (issue 8): 1e7
completes out of core; 1e6 within 120 s and 4 GB.

    .venv/bin/python benchmarks/mechanism_dask.py [--runs N:memory|parquet:DRAWS ...] [--append]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _common import RESULTS, report

CHAINS = 2
ROW_GROUP = 500_000
RUNS = [
    "1000000:memory:1000",
    "10000000:parquet:1000",
    "2000000:parquet:100",
    "10000000:parquet:100",
]


def simulate_chunk(n: int, rng: np.random.Generator) -> pd.DataFrame:
    z = rng.normal(2.0, 1.0, n)
    return pd.DataFrame({"z": z, "x": rng.lognormal(z + 1.0, 1.0)})


def write_parquet(path: Path, n: int, seed: int) -> None:
    """n records in row groups of ROW_GROUP, generated and written one group at a time."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    writer = None
    for start in range(0, n, ROW_GROUP):
        table = pa.Table.from_pandas(
            simulate_chunk(min(ROW_GROUP, n - start), rng), preserve_index=False
        )
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table, row_group_size=ROW_GROUP)
    writer.close()


def run(n: int, kind: str, draws: int) -> dict:
    import warnings

    import dask
    import dask.dataframe as dd

    from pseudopost import PseudoPosterior
    from pseudopost.mechanisms.pseudo_posterior.dask.backend import fit_dask
    from pseudopost.models import LogNormalRegression

    dask.config.set(scheduler="threads", num_workers=2)
    mech = PseudoPosterior(LogNormalRegression("x", ["z"]))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if kind == "parquet":
            t0 = time.perf_counter()
            data = tmp / "data.parquet"
            write_parquet(data, n, seed=1)
            write_s = time.perf_counter() - t0
            workdir, mode = tmp / "work", "out of core (Parquet)"
        elif kind == "memory":
            data = dd.from_pandas(simulate_chunk(n, np.random.default_rng(1)), npartitions=16)
            write_s, workdir, mode = 0.0, None, "Dask DataFrame in memory"
        else:
            raise ValueError(f"Unknown run kind {kind!r}; use 'memory' or 'parquet'.")
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fit_dask(
                mech, data, draws=draws, tune=draws, chains=CHAINS, seed=1, workdir=workdir,
                progress=False,
            )  # fmt: skip
            t1 = time.perf_counter()
            if kind == "parquet":
                res.write_parquet(tmp / "synthetic", seed=2)
            else:
                res.synthesize(seed=2).compute()
        t2 = time.perf_counter()
    out = {k: round(v, 2) for k, v in res.timings.items()}
    out.update(
        n=n,
        mode=mode,
        draws=CHAINS * draws,
        total_s=t2 - t0,
        synthesis_s=t2 - t1,
        write_parquet_s=write_s,
        epsilon=res.epsilon,
        unweighted_epsilon=res.unweighted_epsilon,
        peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", default=RUNS, help="N:memory|parquet:DRAWS")
    parser.add_argument("--append", action="store_true", help="keep the saved rows not re-run")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        n, kind, draws = args.one.split(":")
        print(json.dumps(run(int(n), kind, int(draws))))
        return
    rows = []
    for spec in args.runs:
        proc = subprocess.run(
            [sys.executable, __file__, "--one", spec], capture_output=True, text=True
        )
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"run {spec} failed")
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    saved = RESULTS / "mechanism_dask.csv"
    if args.append and saved.exists():
        old = pd.read_csv(saved)
        done = set(zip(table["n"], table["mode"], table["draws"], strict=True))
        keep = [
            (n, m, d) not in done for n, m, d in zip(old.n, old["mode"], old.draws, strict=True)
        ]
        table = pd.concat([old[keep], table], ignore_index=True)
    first = ["n", "mode", "draws", "total_s", "peak_rss_mb", "epsilon", "unweighted_epsilon"]
    table = table[first + [c for c in table.columns if c not in [*first, "goal", "met"]]]
    table["goal"] = [_goal(r) for r in table.itertuples()]
    table["met"] = [_met(r) for r in table.itertuples()]
    report(
        table,
        "mechanism_dask",
        "Pseudo posterior on the Dask backend, log-normal regression (draws: total over 2 "
        "chains, tune = draws per chain; seconds and MB; shared, heavily loaded 2-core machine)",
    )


def _goal(r) -> str:
    if r.n == 1_000_000:
        return "<= 120 s, <= 4 GB"
    return "completes out of core" if r.draws >= 2000 else "peak RSS flat in n"


def _met(r) -> bool:
    if r.n == 1_000_000:
        return bool(r.total_s <= 120 and r.peak_rss_mb <= 4096)
    return True


if __name__ == "__main__":
    main()
