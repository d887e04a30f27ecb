"""Two of ``pp.synthesize``'s defaults against their alternatives, on the files of
``benchmarks/defaults.py``: the whole-file weight floor (``weight_floor``, default 0.5) and the
visit order (the frame's column order) against categorical columns first.

Each setting is one ``pp.synthesize(train, <codebook facts>, seed=1, **setting)`` run (the
same 80 % split as ``defaults.py``); the table shows its wall time, its unweighted and
weighted mechanism epsilon, and for each of the two synthesizers the S_pMSE (synthpop's
``utility.gen``, CART) and the main-effects regression's mean CI overlap (synthpop's
``compare.fit.synds``) of two synthetic files, each measured on a seeded subsample of at most
``--measure-rows`` records of the real 80 % and of the synthetic file. A default is kept while
no alternative improves utility across files at no cost in epsilon; the table says so, not a
tuned file. Needs R and synthpop (``../shared/peers/install-synthpop.sh``).

    .venv/bin/python benchmarks/default_choices.py --files slid fertility
"""

from __future__ import annotations

import argparse
import time
import warnings

import _synthpop
import defaults as d
import numpy as np
import pandas as pd

import pseudopost as pp

#: the settings compared: label and the pp.synthesize arguments it adds (``order`` is filled
#: per file: the categorical columns, then the numeric ones, each in the frame's order)
SETTINGS = {
    "defaults": {},
    "weight_floor=0.8": {"weight_floor": 0.8},
    "weight_floor=1": {"weight_floor": 1.0},
    "categoricals first": {"order": None},
}


def _cut(frame: pd.DataFrame, rows: int, seed: int) -> pd.DataFrame:
    if len(frame) <= rows:
        return frame
    pick = np.random.default_rng(seed).choice(len(frame), rows, replace=False)
    return frame.iloc[np.sort(pick)].reset_index(drop=True)


def run(name: str, labels: list[str], rows: int) -> list[dict]:
    spec = d.FILES[name]
    frame = d._declared_levels(spec["load"](), spec.get("integers", ()))
    train, _ = d.split(frame, 1)
    kwargs, _ = d._codebook_kwargs(spec)
    cols = list(train.columns)
    numeric = [c for c in cols if d._is_numeric(train[c])]
    outcome, predictors, family = spec["regression"]
    real = _cut(train, rows, 5)
    out_rows = []
    for label in labels:
        extra = dict(SETTINGS[label])
        if "order" in extra:
            extra["order"] = [c for c in cols if c not in numeric] + numeric
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = pp.synthesize(train, **kwargs, **extra, seed=1, progress=False)
        wall = time.perf_counter() - t0
        row = {"file": name, "setting": label, "wall s": wall,
               "epsilon unweighted": out.unweighted_epsilon, "epsilon weighted": out.epsilon}  # fmt: skip
        files = {
            "unweighted": [out.synthesize(seed=2 + j, weighted=False) for j in range(2)],
            "weighted": [out.synthetic, out.synthesize(seed=101)],
        }
        for which, syns in files.items():
            spmse, overlap = [], []
            for j, syn in enumerate(syns):
                s = _cut(syn[cols], rows, j)
                spmse.append(_synthpop.utility_gen(real, s, seed=1)["S_pMSE"])
                fit = _synthpop.compare_fit(real, s, outcome, predictors, family=family)
                overlap.append(fit["mean_ci_overlap"] if fit else np.nan)
            row[f"S_pMSE {which}"] = float(np.mean(spmse))
            row[f"CI overlap {which}"] = float(np.mean(overlap))
        print(pd.DataFrame([row]).to_string(index=False, header=not out_rows), flush=True)
        out_rows.append(row)
    return out_rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", nargs="*", default=["slid", "fertility"], choices=list(d.FILES))
    parser.add_argument("--settings", nargs="*", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--measure-rows", type=int, default=20000)
    args = parser.parse_args(argv)
    if not _synthpop.synthpop_available():
        return 1
    rows = [r for f in args.files for r in run(f, args.settings, args.measure_rows)]
    print()
    print(pd.DataFrame(rows).to_markdown(index=False, floatfmt=".3g"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
