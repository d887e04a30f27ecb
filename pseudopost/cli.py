"""The ``pseudopost`` command."""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from . import PseudoPosterior, SamplingWarning
    from ._io import write_csv, write_json
    from .datasets import load_fatigue, simulate_lognormal
    from .models import LogNormalRegression

    if args.dataset == "simulation":
        data = simulate_lognormal(2000, seed=args.seed)
        model = LogNormalRegression("x", ["z"])
        title = "range-restricted paper section 4.1 simulation (n = 2000)"
    else:
        data = load_fatigue()
        model = LogNormalRegression("cycle", ["stress"])
        title = "fatigue data (n = 22)"
    print(f"pseudopost demo: {model!r} on the {title}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SamplingWarning)
        result = PseudoPosterior(model).fit(
            data, draws=args.draws, tune=args.draws, chains=2, seed=args.seed
        )
    for w in caught:
        if issubclass(w.category, SamplingWarning):
            print(f"warning: {w.message}", file=sys.stderr)
    synthetic = result.synthesize(seed=args.seed)
    out = Path(args.out)
    write_csv(synthetic, out / "synthetic.csv")
    write_json(
        {
            "epsilon": result.epsilon,
            "unweighted_epsilon": result.unweighted_epsilon,
            "neighbouring_relation": "add/remove one record",
            "guarantee": "local epsilon_x = 2 max_i Delta_i (asymptotic DP) for one synthetic dataset",
            "records": len(data),
            "seed": args.seed,
            "mean_weight": float(result.alpha.mean()),
        },
        out / "privacy.json",
    )
    a = result.alpha.to_numpy()
    print(f"weights alpha: min {a.min():.3f}, mean {a.mean():.3f}, max {a.max():.3f}")
    print(f"epsilon (weighted)   = {result.epsilon:.3f}")
    print(f"epsilon (unweighted) = {result.unweighted_epsilon:.3f}")
    print(f"wrote {out / 'synthetic.csv'} ({len(synthetic)} rows) and {out / 'privacy.json'}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pseudopost", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="run the pseudo posterior mechanism on shipped data")
    demo.add_argument("--dataset", choices=["simulation", "fatigue"], default="simulation")
    demo.add_argument("--out", default="pseudopost-demo", help="output folder")
    demo.add_argument("--seed", type=int, default=2026)
    demo.add_argument("--draws", type=int, default=1000)
    demo.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
