"""Time the whole pseudo posterior mechanism (both fits, risk, accountant, synthesis) at
n in {2e3, 2e4, 2e5}, with peak memory, and the identical weighted log-normal model in Stan.

Each size runs in a fresh subprocess so its peak RSS is its own. Stan (PyStan 3) is optional and
installed only for this benchmark: ``.venv/bin/pip install pystan``.

    .venv/bin/python benchmarks/mechanism_scale.py [--sizes 2000 20000 200000] [--no-stan]
        [--samplers nutpie nutpie-jax]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np
import pandas as pd
from _common import report

DRAWS = TUNE = 1000
CHAINS = 2

STAN_PROGRAM = """
data { int<lower=1> n; vector[n] z; vector<lower=0>[n] x; vector<lower=0, upper=1>[n] w; }
parameters { real intercept; real beta; real<lower=0> sigma; }
model {
  intercept ~ normal(0, 10); beta ~ normal(0, 10); sigma ~ normal(0, 10);
  for (i in 1:n) target += w[i] * lognormal_lpdf(x[i] | intercept + beta * z[i], sigma);
}
"""


def run_pseudopost(n: int, sampler: str = "nutpie") -> dict:
    import warnings

    from pseudopost import PseudoPosterior
    from pseudopost.datasets import simulate_lognormal
    from pseudopost.models import LogNormalRegression

    data = simulate_lognormal(n, seed=1)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = PseudoPosterior(LogNormalRegression("x", ["z"]), sampler=sampler).fit(
            data, draws=DRAWS, tune=TUNE, chains=CHAINS, seed=1, progress=False
        )
        t1 = time.perf_counter()
        res.synthesize(seed=2)
    t2 = time.perf_counter()
    out = {k: round(v, 2) for k, v in res.timings.items()}
    out.update(
        sampler=sampler,
        n=n,
        total_s=t2 - t0,
        synthesis_s=t2 - t1,
        epsilon=res.epsilon,
        unweighted_epsilon=res.unweighted_epsilon,
    )
    return out


def run_stan(n: int) -> dict:
    import stan
    from scipy import stats

    from pseudopost.datasets import simulate_lognormal
    from pseudopost.risk import risk_weights

    data = simulate_lognormal(n, seed=1)
    z, x = data["z"].to_numpy(), data["x"].to_numpy()

    def fit(w, seed):
        tb = time.perf_counter()
        post = stan.build(STAN_PROGRAM, data={"n": n, "z": z, "x": x, "w": w}, random_seed=seed)
        tbuild = time.perf_counter() - tb
        fitted = post.sample(num_chains=CHAINS, num_samples=DRAWS, num_warmup=TUNE)
        return fitted, tbuild

    def loglik(fitted):
        b0, b1, s = (np.asarray(fitted[k]).ravel() for k in ("intercept", "beta", "sigma"))
        return stats.lognorm(s=s[:, None], scale=np.exp(b0[:, None] + b1[:, None] * z)).logpdf(x)

    t0 = time.perf_counter()
    f_u, build_u = fit(np.ones(n), 1)
    L = np.abs(loglik(f_u)).max(axis=0)
    alpha = risk_weights(L)
    f_w, build_w = fit(alpha, 2)
    eps = 2 * (alpha * np.abs(loglik(f_w))).max()
    total = time.perf_counter() - t0
    return {"n": n, "stan_total_s": total, "stan_build_s": build_u + build_w, "stan_epsilon": eps}


def child(kind: str, n: int) -> None:
    out = run_stan(n) if kind == "stan" else run_pseudopost(n, kind)
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("RESULT " + json.dumps(out))


def spawn(kind: str, n: int) -> dict | None:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(n)], capture_output=True, text=True
    )
    for line in proc.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    print(f"{kind} n={n} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
    return None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="*", default=[2000, 20000, 200000])
    ap.add_argument("--no-stan", action="store_true")
    ap.add_argument("--samplers", nargs="*", default=["nutpie", "nutpie-jax"])
    ap.add_argument("--child", nargs=2)
    args = ap.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    rows = [r for sampler in args.samplers for n in args.sizes if (r := spawn(sampler, n))]
    table = pd.DataFrame(rows)[
        [
            "n",
            "sampler",
            "total_s",
            "compile",
            "unweighted_fit",
            "risk",
            "weighted_fit",
            "accountant",
            "synthesis_s",
            "peak_rss_mb",
            "epsilon",
            "unweighted_epsilon",
        ]
    ]
    report(
        table,
        "mechanism_scale",
        f"Pseudo posterior mechanism, log-normal regression, {CHAINS} x {DRAWS} draws "
        f"+ {TUNE} tune (seconds)",
    )
    if args.no_stan:
        return
    try:
        import stan  # noqa: F401
    except ImportError:
        print("PyStan not installed: `.venv/bin/pip install pystan` to compare with Stan.")
        return
    stan_row = spawn("stan", 2000)
    if stan_row:
        cmp = pd.DataFrame(
            [
                {
                    "n": 2000,
                    "sampler": r.sampler,
                    "pseudopost_s": r.total_s,
                    "stan_s": stan_row["stan_total_s"],
                    "stan_build_s": stan_row["stan_build_s"],
                    "speedup": stan_row["stan_total_s"] / r.total_s,
                    "stan_epsilon": stan_row["stan_epsilon"],
                }
                for r in table[table.n == 2000].itertuples()
            ]
        )
        report(
            cmp,
            "mechanism_vs_stan",
            "End to end at n = 2000: pseudopost vs Stan (stan_build_s near 0 means httpstan's "
            "compile cache was warm; delete ~/.cache/httpstan for a cold start)",
        )


if __name__ == "__main__":
    main()
