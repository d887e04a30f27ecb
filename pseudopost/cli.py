"""The ``pseudopost`` command.

Subcommands: ``demo`` (a quick run on shipped data), ``synthesize SPEC.toml [--out DIR]`` (a
release from a spec), ``validate SPEC.toml`` (check a spec and its data without running),
``account RELEASE_DIR`` (re-run the accountant on a saved release) and ``ledger PATH`` (the
budget spent per dataset). Exit status: 0 success, 2 bad spec or data (one line naming the key
and the fix; nothing is created), 3 budget refused (nothing is created, ledger unchanged),
4 the release failed after fitting (e.g. non-finite synthetic values; nothing is created, ledger
unchanged), 5 ``account`` disagrees with the saved epsilon. ``account`` on a REPS, PRISM or
entropy release exits 2 saying there is no posterior to re-account (their (epsilon, delta) is
fixed by the noise calibration, see their privacy.json).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
    from pseudopost._io import write_csv, write_json
    from pseudopost.datasets import load_fatigue, simulate_lognormal
    from pseudopost.fitting.sampler import SamplingWarning
    from pseudopost.mechanisms.pseudo_posterior import PseudoPosterior
    from pseudopost.models import LogNormalRegression

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


def _fail(message: str, status: int) -> int:
    print(f"pseudopost: error: {message}", file=sys.stderr)
    return status


def _guarded(run):
    """Turn spec, budget and release errors into one line on stderr and exit status 2, 3, 4."""

    def wrapper(args: argparse.Namespace) -> int:
        from pseudopost.release import BudgetError, ReleaseError, SpecError

        try:
            return run(args)
        except SpecError as exc:
            return _fail(str(exc), 2)
        except BudgetError as exc:
            return _fail(str(exc), 3)
        except ReleaseError as exc:
            return _fail(str(exc), 4)

    return wrapper


@_guarded
def _synthesize(args: argparse.Namespace) -> int:
    from pseudopost.release import run_release

    outcome = run_release(args.spec, args.out)
    st = outcome.statement
    if st.unit == "release":  # m samples of one release: charged once
        print(
            f"epsilon = {st.epsilon:.6g}, delta = {st.delta:.3g} ({st.scope}); "
            f"charged = {outcome.charge:.6g}"
        )
    else:
        print(
            f"epsilon per dataset = {st.epsilon:.6g} ({st.scope}); charged = {outcome.charge:.6g}"
        )
    print(f"wrote {outcome.out}")
    return 0


@_guarded
def _validate(args: argparse.Namespace) -> int:
    from pseudopost.release import ADAPTERS
    from pseudopost.release.run import prepare_release

    spec, data, _ = prepare_release(args.spec, args.out)
    adapter = ADAPTERS[spec.mechanism]
    cap, delta_cap = adapter.cap(spec)
    spends = f"up to epsilon {cap:.6g}" + (f" and delta {delta_cap:.3g}" if delta_cap else "")
    print(
        f"spec OK: {adapter.describe(spec)} on {spec.data_path.name} ({len(data)} rows), "
        f"m = {spec.m}, {spends} from ledger {spec.ledger_path}"
    )
    return 0


@_guarded
def _account(args: argparse.Namespace) -> int:
    from pseudopost.release import account_release

    res = account_release(args.release, args.data)
    print(f"epsilon (recomputed) = {res.epsilon:.6g}")
    print(f"epsilon (saved)      = {res.saved_epsilon:.6g}")
    print(f"max Lipschitz bound  = {res.lipschitz.max():.6g} over {res.lipschitz.size} records")
    if not res.agrees:
        return _fail("the recomputed epsilon differs from the saved one.", 5)
    print("agrees with privacy.json")
    return 0


@_guarded
def _ledger(args: argparse.Namespace) -> int:
    from pseudopost.release import BudgetError, Ledger

    path = Path(args.path)
    if path.is_file() and not path.name.endswith(".ledger.json"):
        path = path.with_name(path.name + ".ledger.json")  # a data file: its ledger beside it
    if not path.is_file():
        raise BudgetError(f"no ledger at {str(path)!r}. Fix: give a ledger or data file path.")
    print(Ledger(path).summary())
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

    for name, func, text in (
        ("synthesize", _synthesize, "run a release described by a TOML spec"),
        ("validate", _validate, "check a spec, its data and the budget without running"),
    ):
        cmd = sub.add_parser(name, help=text)
        cmd.add_argument("spec", help="the release spec (TOML)")
        cmd.add_argument("--out", default=None, help="output folder (overrides release.out)")
        cmd.set_defaults(func=func)
    acc = sub.add_parser("account", help="re-run the accountant on a saved release")
    acc.add_argument("release", help="a folder written by 'pseudopost synthesize'")
    acc.add_argument("--data", default=None, help="the input data, if it has moved")
    acc.set_defaults(func=_account)
    led = sub.add_parser("ledger", help="show the budget spent on a dataset")
    led.add_argument("path", help="a ledger file, or the data file it sits beside")
    led.set_defaults(func=_ledger)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
