"""Where a whole-file fit spends its time: how each part was drawn, and in how many seconds.

For each file of ``benchmarks/defaults.py`` (same split, same codebook facts): one
``pp.synthesize(train, <codebook facts>, seed=s)`` with its defaults, and from its result

* the steps' seconds (``result.timings``: the risk step's unweighted fit, the risk scores, the
  weighted fit, the accountant);
* for every part: its number of parameters (scalars in the posterior), how the risk step and
  the weighted fit drew it (``pseudopost.fitting.columns.part_samplers``: exact, Laplace,
  split-normal, independence Metropolis-Hastings, NUTS, NUTS twice because its first run had
  not mixed, NUTS twice and still unmixed, NUTS unmixed and kept by the risk step) and the
  seconds each took;
* the weighted fit's part-seconds in all, those of the parts drawn twice, and their ratio to
  the step's wall time (the parts run on the machine's cores at once).

Diagnosis only: no goal is printed (the time goal is ``defaults.py``'s, against synthpop in the
same run).

Run: ``.venv/bin/python benchmarks/fit_paths.py [--files yrbss cps91 ...] [--seed 1]``.
Writes ``benchmarks/results/fit_paths.{md,csv}``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import defaults as D
import numpy as np
import pandas as pd

import pseudopost as pp
from pseudopost.fitting.columns import samplers_table
from pseudopost.models.parts import SEP

RESULTS = Path(__file__).parent / "results"


def _parameters(tree) -> dict[str, int]:
    post = tree["posterior"].to_dataset()
    out: dict[str, int] = {}
    for v in post.data_vars:
        part = str(v).split(SEP)[0]
        size = int(np.prod([n for d, n in post[v].sizes.items() if d not in ("chain", "draw")]))
        out[part] = out.get(part, 0) + size
    return out


def run_file(name: str, seed: int) -> tuple[pd.DataFrame, dict]:
    _, _, out, wall = D.synthesize_training(name, seed, progress=False)
    tree = out.result.datatree
    table = samplers_table(tree)
    table.insert(1, "parameters", table["part"].map(_parameters(tree)).fillna(0).astype(int))
    table.insert(0, "file", name)
    steps = {k: round(v, 2) for k, v in out.result.timings.items() if v >= 0.05}
    part_s = float(table["weighted s"].sum())
    twice = table["weighted fit"].str.startswith("nuts twice")
    summary = {
        "wall s": round(wall, 1),
        **{f"{k} s": v for k, v in steps.items()},
        "weighted part-seconds": round(part_s, 1),
        "of which parts drawn twice": round(float(table.loc[twice, "weighted s"].sum()), 1),
        "parts drawn twice": int(twice.sum()),
        "part-seconds / wall": round(part_s / max(out.result.timings.get("weighted_fit", 0), 1e-9), 2),
    }
    return table, summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", nargs="*", default=["yrbss", "cps91"], choices=list(D.FILES))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    tables, lines = [], []
    for name in args.files:
        table, summary = run_file(name, args.seed)
        head = f"### {name}: " + ", ".join(f"{k} {v}" for k, v in summary.items())
        print(head)
        print(table.drop(columns=["file"]).to_string(index=False, float_format="%.3g"))
        lines += [head, "", table.drop(columns=["file"]).to_markdown(index=False, floatfmt=".3g"), ""]
        tables.append(table)
    RESULTS.mkdir(exist_ok=True)
    pd.concat(tables).to_csv(RESULTS / "fit_paths.csv", index=False)
    (RESULTS / "fit_paths.md").write_text(
        f"## How each part was drawn, and its seconds (seed {args.seed}, "
        f"pseudopost {pp.__version__})\n\n" + "\n".join(lines)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
