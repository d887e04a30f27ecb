"""Where the S_pMSE gap lies: one-way S_pMSE of every column, pseudopost's defaults beside
synthpop CART, on the files of ``benchmarks/defaults.py`` (same split, same codebook facts).

For each file: the 80 % training split of :mod:`defaults` (seeded, the 20 % control set aside),
``pp.synthesize(train, <codebook facts>, seed=s, m=k)`` (its defaults: the weighted files, and
``k`` unweighted ones from the same fit) and ``k`` synthpop ``syn()`` files. For every column:

* one-way S_pMSE (``pseudopost.evaluate.propensity_utility`` on that column alone: CART
  propensity, synthpop's null; the mean over the ``k`` files) of the unweighted, weighted and
  synthpop files, and the weighted one's ratio to synthpop's;
* distinct non-missing values, real and synthetic (the first weighted file), and the share of
  that file's values that the real column holds exactly (synthpop resamples observed values,
  so its share is 1: a column of amounts on a few hundred exact values, spread by a model
  over its bins, is where CART's propensity finds a synthetic file most easily);
* the column's model and structure (``out.choices``).

The whole-file S_pMSE of each synthesizer is printed above each file's table. ``--pairs`` adds
one table per file of the two-way S_pMSE of every pair of columns (the same measure on the
pair), sorted by the weighted file's: where a relation is lost (a predictor left out of a wide
column's model, a bend between spline knots) rather than a margin. Diagnosis only: no goal is
printed (those are ``defaults.py``'s).

Run: ``.venv/bin/python benchmarks/columns.py [--files slid cps91 ...] [--seed 1]
[--files-per 3] [--pairs]``. Writes ``benchmarks/results/columns.{md,csv}`` (and
``column_pairs.{md,csv}``).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import defaults as D
import numpy as np
import pandas as pd

from pseudopost.evaluate import propensity_utility

RESULTS = Path(__file__).parent / "results"


def _spmse(real: pd.DataFrame, files: list[pd.DataFrame], cols: list[str]) -> float:
    return float(np.mean([propensity_utility(real[cols], f[cols], seed=3).S_pMSE for f in files]))


def _exact_share(real: pd.Series, syn: pd.Series) -> float:
    s = syn.dropna()
    if not len(s):
        return np.nan
    return float(s.isin(set(real.dropna().tolist())).mean())


def run_file(name: str, seed: int, k: int, pairs: bool = False):
    spec, train, out, wall = D.synthesize_training(name, seed, m=k)
    weighted = out.synthetic if isinstance(out.synthetic, list) else [out.synthetic]
    unweighted = out.synthesize_datasets(k, seed=seed + 100, weighted=False)
    synthpop, _ = D._synthpop_files(train, spec, seed, k)
    cols = list(train.columns)
    files = {"unweighted": unweighted, "weighted": weighted}
    if synthpop is not None:
        files["synthpop"] = synthpop
    whole = {who: _spmse(train, fs, cols) for who, fs in files.items()}
    choices = out.choices.set_index("column")
    rows = []
    for c in cols:
        row = {"file": name, "column": c}
        for who, fs in files.items():
            row[f"S_pMSE {who}"] = _spmse(train, fs, [c])
        if "synthpop" in files:
            row["weighted x synthpop"] = row["S_pMSE weighted"] / max(row["S_pMSE synthpop"], 1e-9)
        row["distinct real"] = int(train[c].nunique())
        row["distinct weighted"] = int(weighted[0][c].nunique())
        row["exact share weighted"] = _exact_share(train[c], weighted[0][c])
        row["model"] = str(choices.loc[c, "model"]) if c in choices.index else ""
        st = choices.loc[c, "structure"] if c in choices.index and "structure" in choices else ""
        row["structure"] = "" if pd.isna(st) else str(st)
        rows.append(row)
    two = []
    for a, b in itertools.combinations(cols, 2) if pairs else ():
        two.append({"file": name, "pair": f"{a} x {b}",
                    **{f"S_pMSE {who}": _spmse(train, fs, [a, b]) for who, fs in files.items()}})
    two = pd.DataFrame(two)
    if len(two):
        two = two.sort_values("S_pMSE weighted", ascending=False)
    whole = {"wall s": wall, **{f"whole {k_}": v for k_, v in whole.items()}}
    return pd.DataFrame(rows), whole, two


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", nargs="*", default=["slid", "cps91"], choices=list(D.FILES))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--files-per", type=int, default=3, help="synthetic files per synthesizer")
    parser.add_argument("--pairs", action="store_true", help="two-way S_pMSE of every pair")
    args = parser.parse_args(argv)
    tables, lines, pair_tables, pair_lines = [], [], [], []
    for name in args.files:
        table, whole, two = run_file(name, args.seed, args.files_per, args.pairs)
        if len(two):
            print(two.drop(columns=["file"]).to_string(index=False, float_format="%.3g"))
            pair_lines += [f"### {name}", "",
                           two.drop(columns=["file"]).to_markdown(index=False, floatfmt=".3g"), ""]
            pair_tables.append(two)
        head = f"### {name}: " + ", ".join(f"{k} {v:.3g}" for k, v in whole.items())
        print(head)
        print(table.drop(columns=["file"]).to_string(index=False, float_format="%.3g"))
        lines += [
            head,
            "",
            table.drop(columns=["file"]).to_markdown(index=False, floatfmt=".3g"),
            "",
        ]
        tables.append(table)
    RESULTS.mkdir(exist_ok=True)
    pd.concat(tables).to_csv(RESULTS / "columns.csv", index=False)
    (RESULTS / "columns.md").write_text(
        f"## One-way S_pMSE by column (seed {args.seed}, {args.files_per} files each)\n\n"
        + "\n".join(lines)
    )
    if pair_tables:
        pd.concat(pair_tables).to_csv(RESULTS / "column_pairs.csv", index=False)
        (RESULTS / "column_pairs.md").write_text(
            f"## Two-way S_pMSE by pair of columns (seed {args.seed}, {args.files_per} files "
            "each)\n\n" + "\n".join(pair_lines)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
