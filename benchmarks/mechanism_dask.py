"""The pseudo posterior mechanism on the Dask backend: n = 1e6 in memory, n = 1e7 out of core.

Log-normal regression of the range-restricted paper's simulation (z ~ N(2, 1),
x ~ LogNormal(z + 1, 1)), 2 chains x 1000 draws + 1000 tune, end to end: statistics, both fits
(sufficient statistics), risk, weights, accountant and one synthetic dataset.

* n = 1e6: a Dask DataFrame built from an in-memory pandas frame (16 partitions), synthesis
  computed back into memory.
* n = 1e7: a Parquet file written chunk by chunk into a temporary folder (row groups of 500k
  records; the data are never whole in memory), the release run on the path with the risk stored
  in a work folder, the synthetic dataset written to Parquet partition by partition.

Each size runs in a fresh subprocess so that its peak RSS is its own (the Parquet file is written
by that subprocess before the clock starts; RSS covers writing too). Goals (issue 8): 1e7
completes out of core; 1e6 within 120 s and 4 GB.

    .venv/bin/python benchmarks/mechanism_dask.py [--sizes 1000000 10000000] [--draws 1000]
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
from _common import report

CHAINS = 2
ROW_GROUP = 500_000
OUT_OF_CORE = 5_000_000  # sizes from here on run from Parquet


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


def run(n: int, draws: int) -> dict:
    import warnings

    import dask
    import dask.dataframe as dd

    from pseudopost import PseudoPosterior
    from pseudopost.backends.dask import fit_dask
    from pseudopost.models import LogNormalRegression

    dask.config.set(scheduler="threads", num_workers=2)
    mech = PseudoPosterior(LogNormalRegression("x", ["z"]))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if n >= OUT_OF_CORE:
            t0 = time.perf_counter()
            data = tmp / "data.parquet"
            write_parquet(data, n, seed=1)
            write_s = time.perf_counter() - t0
            workdir, mode = tmp / "work", "out of core (Parquet)"
        else:
            data = dd.from_pandas(simulate_chunk(n, np.random.default_rng(1)), npartitions=16)
            write_s, workdir, mode = 0.0, None, "Dask DataFrame in memory"
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = fit_dask(
                mech, data, draws=draws, tune=draws, chains=CHAINS, seed=1, workdir=workdir,
                progress=False,
            )  # fmt: skip
            t1 = time.perf_counter()
            if n >= OUT_OF_CORE:
                res.synthesize(seed=2, path=tmp / "synthetic")
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
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run(args.one, args.draws)))
        return
    rows = []
    for n in args.sizes:
        proc = subprocess.run(
            [sys.executable, __file__, "--one", str(n), "--draws", str(args.draws)],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            print(proc.stderr[-3000:], file=sys.stderr)
            raise SystemExit(f"n = {n} failed")
        rows.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    first = ["n", "mode", "draws", "total_s", "peak_rss_mb", "epsilon", "unweighted_epsilon"]
    table = table[first + [c for c in table.columns if c not in first]]
    table["goal"] = [
        "<= 120 s, <= 4 GB" if n == 1_000_000 else "completes out of core" for n in table["n"]
    ]
    table["met"] = [
        (r.total_s <= 120 and r.peak_rss_mb <= 4096) if r.n == 1_000_000 else True
        for r in table.itertuples()
    ]
    report(
        table,
        "mechanism_dask",
        "Pseudo posterior on the Dask backend, log-normal regression, "
        f"{CHAINS} x {args.draws} draws + {args.draws} tune (seconds; shared 2-core machine)",
    )


if __name__ == "__main__":
    main()
