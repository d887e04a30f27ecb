"""Fingerprints of the shipped example releases and of one fixed ``pp.synthesize`` run, to show
that a restructuring commit changes no output (issue 29: "byte-identical before and after each
step").

Each ``examples/*.toml`` is released by ``pseudopost synthesize`` in a scratch copy of
``examples/`` and ``data/`` (the repository's ledgers are never charged); its fingerprint is the
SHA-256 of its synthetic files and of its ``privacy.json`` without the entries that name a
path, a time or a version. One ``pp.synthesize`` run on YRBSS (2,000 records, seed 1, 1 chain x
50 draws) is fingerprinted by its synthetic CSV, its epsilons and its choices table.
``--data-only`` leaves out ``privacy.json`` and the choices table (the synthetic files and the
epsilons only): for a commit that rewrites the reports' texts but should draw the same data.

    .venv/bin/python scripts/release_hashes.py --out before.json
    .venv/bin/python scripts/release_hashes.py --check before.json   # exit 1 on any difference
    .venv/bin/python scripts/release_hashes.py --data-only --out before.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: privacy.json keys whose values depend on the machine, the folder or the clock
VOLATILE = ("ledger", "path", "time", "seconds", "version", "created", "date", "host", "python")


def _stable(x):
    if isinstance(x, dict):
        return {k: _stable(v) for k, v in sorted(x.items())
                if not any(w in k.lower() for w in VOLATILE)}  # fmt: skip
    if isinstance(x, list):
        return [_stable(v) for v in x]
    return x


def _digest(files: list[Path], privacy: Path | None) -> str:
    h = hashlib.sha256()
    for f in sorted(files):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    if privacy is not None and privacy.exists():
        h.update(json.dumps(_stable(json.loads(privacy.read_text())), sort_keys=True).encode())
    return h.hexdigest()


def example_hashes(names: list[str] | None = None, data_only: bool = False) -> dict[str, str]:
    out = {}
    with tempfile.TemporaryDirectory(prefix="pp-hashes-") as tmp:
        work = Path(tmp)
        shutil.copytree(ROOT / "examples", work / "examples")
        shutil.copytree(ROOT / "data", work / "data",
                        ignore=shutil.ignore_patterns("*.ledger.json*"))  # fmt: skip
        for spec in sorted((work / "examples").glob("*.toml")):
            if names and spec.stem not in names:
                continue
            dest = work / f"{spec.stem}-out"
            cmd = [sys.executable, "-m", "pseudopost.cli", "synthesize", str(spec), "--out",
                   str(dest)]  # fmt: skip
            done = subprocess.run(cmd, capture_output=True, text=True, cwd=work / "examples")
            if done.returncode != 0:
                out[spec.stem] = f"failed ({done.returncode}): {done.stderr.strip()[-200:]}"
                continue
            files = [p for p in dest.iterdir() if p.name.startswith("synthetic")]
            out[spec.stem] = _digest(files, None if data_only else dest / "privacy.json")
            print(f"{spec.stem}: {out[spec.stem][:16]}", flush=True)
    return out


def synthesize_hash(data_only: bool = False) -> str:
    import numpy as np
    import pandas as pd

    import pseudopost as pp

    frame = pd.read_csv(ROOT / "data" / "yrbss.csv")
    frame = frame.iloc[np.random.default_rng(0).choice(len(frame), 2000, replace=False)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = pp.synthesize(frame.reset_index(drop=True), seed=1, draws=50, tune=50, chains=1,
                            progress=False)  # fmt: skip
    h = hashlib.sha256(out.synthetic.to_csv(index=False).encode())
    h.update(repr((out.epsilon, out.unweighted_epsilon, out.structure_epsilon)).encode())
    if not data_only:
        h.update(out.choices.astype(str).to_csv(index=False).encode())
    digest = h.hexdigest()
    print(f"pp.synthesize(yrbss): {digest[:16]}", flush=True)
    return digest


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="write the fingerprints here (JSON)")
    ap.add_argument("--check", type=Path, help="compare with fingerprints written before")
    ap.add_argument("--examples", nargs="*", help="only these examples (file stems)")
    ap.add_argument("--data-only", action="store_true",
                    help="synthetic files and epsilons only (no privacy.json, no choices)")
    args = ap.parse_args(argv)
    hashes = {**example_hashes(args.examples, args.data_only),
              "pp.synthesize(yrbss)": synthesize_hash(args.data_only)}
    if args.out:
        args.out.write_text(json.dumps(hashes, indent=1) + "\n")
    if args.check:
        before = json.loads(args.check.read_text())
        differ = [k for k in hashes if k in before and before[k] != hashes[k]]
        for k in differ:
            print(f"DIFFERS: {k}")
        print("identical" if not differ else f"{len(differ)} of {len(hashes)} differ")
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
