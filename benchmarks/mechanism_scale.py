"""The whole pseudo posterior mechanism end to end at scale, cold and warm, against Stan.

Log-normal regression on the range-restricted paper's simulation (section 4.1), 2 chains x 1000
draws + 1000 tune, both fits, risk, accountant and one synthetic dataset:

* n in {2e3, 2e4, 2e5, 1e6} on the default path (``likelihood="auto"``: sufficient statistics),
  with the compile cache warm; wall time split into compile / fits / risk / accountant /
  synthesis, and peak RSS. Every run is a fresh subprocess, so its peak RSS is its own.
* n = 2000 cold and warm: cold = a fresh process with empty caches (PyTensor's
  ``base_compiledir`` and ``NUMBA_CACHE_DIR`` new, empty directories); warm = a
  fresh process run again on the caches the cold run filled. At n = 2000 the accountant runs in
  NumPy (n x draws <= 2^23), so a run at n = 20,000 labelled "kernels cold" shows the one-off
  numba compilation of the accountant's kernels that larger data pay on a fresh machine. ``--full`` adds the per-record
  (``likelihood="full"``) path for comparison.
* Stan (PyStan 3, the same weighted model vectorised, the same two-fit mechanism with SciPy for
  risk and accountant) at n = 2e3 and 2e4: cold = fresh httpstan cache (``XDG_CACHE_HOME``), warm
  = the same cache again.

Times exclude the Python imports of the package and its sampler library (pseudopost and
nutpie; stan for Stan), reported as ``import_s``. ``cpu_s`` is the CPU time (all
threads, and for Stan its compiler and sampler subprocesses) of the same span: on a machine
shared with other jobs it tells how much of the wall time was waiting for a core. Goals (issue 8): n = 1e6 in at most
120 s with peak RSS at most 4 GB; n = 2000 at most 3 s warm and 15 s cold; at least 10x faster
than Stan cold.

    .venv/bin/python benchmarks/mechanism_scale.py [--sizes 2000 20000 200000 1000000]
        [--stan-sizes 2000 20000] [--no-stan] [--full]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _common import RESULTS, report

DRAWS = TUNE = 1000
CHAINS = 2
GOALS = {"n1e6_s": 120.0, "n1e6_rss_mb": 4096.0, "warm_s": 3.0, "cold_s": 15.0, "vs_stan": 10.0}

STAN_PROGRAM = """
data { int<lower=1> n; vector[n] z; vector<lower=0>[n] x; vector<lower=0, upper=1>[n] w; }
transformed data {
  vector[n] lx = log(x);
  real sw = sum(w);
  real log_jac = -dot_product(w, lx);
  vector[n] sqw = sqrt(w);
}
parameters { real intercept; real beta; real<lower=0> sigma; }
model {
  intercept ~ normal(0, 10); beta ~ normal(0, 10); sigma ~ normal(0, 10);
  // sum_i w_i lognormal_lpdf(x_i | intercept + beta z_i, sigma), vectorised
  target += log_jac - sw * (log(sigma) + 0.5 * log(2 * pi()))
            - dot_self(sqw .* (lx - intercept - beta * z)) / (2 * square(sigma));
}
"""


def cpu_seconds() -> float:
    """User + system CPU time of this process and its finished children (all threads)."""
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def run_pseudopost(n: int, likelihood: str) -> dict:
    import warnings

    t0 = time.perf_counter()
    import nutpie  # noqa: F401  (the sampler library, imported lazily by pseudopost; as `stan`)

    from pseudopost import PseudoPosterior
    from pseudopost.datasets import simulate_lognormal
    from pseudopost.models import LogNormalRegression

    t_import = time.perf_counter() - t0
    data = simulate_lognormal(n, seed=1)
    c0, t0 = cpu_seconds(), time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = PseudoPosterior(LogNormalRegression("x", ["z"]), likelihood=likelihood).fit(
            data, draws=DRAWS, tune=TUNE, chains=CHAINS, seed=1, progress=False
        )
        t1 = time.perf_counter()
        res.synthesize(seed=2)
    t2 = time.perf_counter()
    out = {k: round(v, 3) for k, v in res.timings.items()}
    out.update(
        system="pseudopost",
        likelihood=res.likelihood,
        n=n,
        import_s=t_import,
        total_s=t2 - t0,
        cpu_s=cpu_seconds() - c0,
        synthesis_s=t2 - t1,
        epsilon=res.epsilon,
        unweighted_epsilon=res.unweighted_epsilon,
    )
    return out


def run_stan(n: int) -> dict:
    t0 = time.perf_counter()
    import stan
    from scipy import stats

    from pseudopost.datasets import simulate_lognormal
    from pseudopost.risk import risk_weights

    t_import = time.perf_counter() - t0
    data = simulate_lognormal(n, seed=1)
    z, x = data["z"].to_numpy(), data["x"].to_numpy()
    timings = {"compile": 0.0}

    def fit(w, seed, stage):
        tb = time.perf_counter()
        post = stan.build(STAN_PROGRAM, data={"n": n, "z": z, "x": x, "w": w}, random_seed=seed)
        timings["compile"] += time.perf_counter() - tb
        ts = time.perf_counter()
        fitted = post.sample(num_chains=CHAINS, num_samples=DRAWS, num_warmup=TUNE)
        timings[stage] = time.perf_counter() - ts
        return fitted

    def loglik(fitted):
        b0, b1, s = (np.asarray(fitted[k]).ravel() for k in ("intercept", "beta", "sigma"))
        return stats.lognorm(s=s[:, None], scale=np.exp(b0[:, None] + b1[:, None] * z)).logpdf(x)

    c0, t0 = cpu_seconds(), time.perf_counter()
    f_u = fit(np.ones(n), 1, "unweighted_fit")
    ta = time.perf_counter()
    alpha = risk_weights(np.abs(loglik(f_u)).max(axis=0))
    timings["risk"] = time.perf_counter() - ta
    f_w = fit(alpha, 2, "weighted_fit")
    ta = time.perf_counter()
    eps = 2 * (alpha * np.abs(loglik(f_w))).max()
    timings["accountant"] = time.perf_counter() - ta
    return {
        **timings,
        "system": "stan",
        "likelihood": "full (vectorised)",
        "n": n,
        "import_s": t_import,
        "total_s": time.perf_counter() - t0,
        "cpu_s": cpu_seconds() - c0,
        "epsilon": eps,
    }


def child(kind: str, n: int, likelihood: str) -> None:
    out = run_stan(n) if kind == "stan" else run_pseudopost(n, likelihood)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("RESULT " + json.dumps(out))


def spawn(kind: str, n: int, cache: str, env: dict | None = None, likelihood="auto") -> dict | None:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(n), likelihood],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            row = json.loads(line[7:])
            row["cache"] = cache
            print(f"  {kind} n={n} {cache}: {row['total_s']:.1f} s", flush=True)
            return row
    print(f"{kind} n={n} {cache} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
    return None


def fresh_caches(root: Path) -> dict:
    """Environment for a process whose compile caches all start empty under ``root``."""
    for sub in ("pytensor", "numba", "xdg"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    flags = os.environ.get("PYTENSOR_FLAGS", "")
    return {
        "PYTENSOR_FLAGS": ",".join(filter(None, [flags, f"base_compiledir={root / 'pytensor'}"])),
        "NUMBA_CACHE_DIR": str(root / "numba"),
        "XDG_CACHE_HOME": str(root / "xdg"),  # httpstan's model cache for Stan
    }


COLUMNS = [
    "system",
    "likelihood",
    "n",
    "cache",
    "total_s",
    "cpu_s",
    "compile",
    "unweighted_fit",
    "risk",
    "weighted_fit",
    "accountant",
    "synthesis_s",
    "import_s",
    "peak_rss_mb",
    "epsilon",
]


def goals(table: pd.DataFrame) -> pd.DataFrame:
    def pick(system, n, cache, likelihood=None):
        rows = table[(table.system == system) & (table.n == n) & (table.cache == cache)]
        if likelihood is not None:
            rows = rows[rows.likelihood == likelihood]
        return rows.iloc[0] if len(rows) else None

    out = []
    big = pick("pseudopost", 1_000_000, "warm")
    if big is not None:
        out.append(("n = 1e6 end to end (s)", big.total_s, "<= 120", big.total_s <= 120))
        out.append(("n = 1e6 peak RSS (MB)", big.peak_rss_mb, "<= 4096", big.peak_rss_mb <= 4096))
    warm, cold = pick("pseudopost", 2000, "warm"), pick("pseudopost", 2000, "cold")
    if warm is not None:
        out.append(("n = 2000 warm (s)", warm.total_s, "<= 3", warm.total_s <= 3))
    if cold is not None:
        out.append(("n = 2000 cold (s)", cold.total_s, "<= 15", cold.total_s <= 15))
        stan_cold = pick("stan", 2000, "cold")
        if stan_cold is not None:
            ratio = stan_cold.total_s / cold.total_s
            out.append(("Stan cold / pseudopost cold, n = 2000", ratio, ">= 10", ratio >= 10))
    return pd.DataFrame(out, columns=["goal", "measured", "target", "met"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[2000, 20000, 200000, 1000000])
    ap.add_argument("--stan-sizes", type=int, nargs="*", default=[2000, 20000])
    ap.add_argument("--no-stan", action="store_true", help="reuse the saved Stan rows")
    ap.add_argument("--full", action="store_true", help="also the per-record likelihood")
    ap.add_argument(
        "--stan-only", action="store_true", help="rerun Stan, merge into the saved table"
    )
    ap.add_argument("--child", nargs=3)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), args.child[2])
        return
    rows = []
    if args.stan_only:
        with tempfile.TemporaryDirectory(prefix="pseudopost-cold-") as tmp:
            env = fresh_caches(Path(tmp))
            for i, n in enumerate(args.stan_sizes):
                if i == 0:
                    rows.append(spawn("stan", n, "cold", env))
                rows.append(spawn("stan", n, "warm", env))
        saved = pd.read_csv(RESULTS / "mechanism_scale.csv")
        _finish(saved[saved.system != "stan"].to_dict("records") + rows)
        return
    with tempfile.TemporaryDirectory(prefix="pseudopost-cold-") as tmp:
        env = fresh_caches(Path(tmp))
        rows.append(spawn("pseudopost", 2000, "cold", env))
        rows.append(spawn("pseudopost", 2000, "warm", env))
        if args.full:
            rows.append(spawn("pseudopost", 2000, "cold", fresh_caches(Path(tmp) / "f"), "full"))
            rows.append(spawn("pseudopost", 2000, "warm", fresh_caches(Path(tmp) / "f"), "full"))
        if not args.no_stan:
            for i, n in enumerate(args.stan_sizes):
                if i == 0:
                    rows.append(spawn("stan", n, "cold", env))
                rows.append(spawn("stan", n, "warm", env))
        # n = 2000 runs the accountant in NumPy; the first larger run compiles its numba kernels
        if any(n > 2000 for n in args.sizes):
            rows.append(spawn("pseudopost", 20000, "kernels cold", env))
        for n in args.sizes:  # on the caches the runs above filled
            if n != 2000:
                rows.append(spawn("pseudopost", n, "warm", env))
    if args.no_stan and (RESULTS / "mechanism_scale.csv").exists():  # keep the saved Stan rows
        saved = pd.read_csv(RESULTS / "mechanism_scale.csv")
        rows += saved[saved.system == "stan"].to_dict("records")
    _finish(rows)


def _finish(rows: list) -> None:
    table = pd.DataFrame([r for r in rows if r])
    table = table[[c for c in COLUMNS if c in table.columns]]
    report(
        table,
        "mechanism_scale",
        f"Pseudo posterior mechanism end to end, log-normal regression, {CHAINS} x {DRAWS} "
        f"draws + {TUNE} tune (seconds; {os.cpu_count()} cores, shared with other jobs)",
    )
    report(goals(table), "mechanism_scale_goals", "Issue 8 speed goals")


if __name__ == "__main__":
    main()
