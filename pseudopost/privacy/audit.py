r"""Empirical privacy audits: a statistically valid lower bound on epsilon from observed outputs,
and an exact check of the local bound of the pseudo posterior.

**Lower bound.** Run a mechanism many times on a dataset D and on a neighbour D', reduce each
output to a real score, and test the events :math:`S_t = \{\text{score} > t\}` and
:math:`\{\text{score} \le t\}`. For any :math:`(\varepsilon, \delta)`-DP mechanism and every
event S, :math:`P_D(S) \le e^\varepsilon P_{D'}(S) + \delta`, hence

.. math:: \varepsilon \ge \ln\frac{\underline{p} - \delta}{\overline{q}}

with :math:`\underline{p}` a lower Clopper-Pearson bound on :math:`P_D(S)` and
:math:`\overline{q}` an upper bound on :math:`P_{D'}(S)` (Jagielski et al. 2020; Nasr et al.
2021). Both directions (D, D') and (D', D) are tested. The confidence is split over all events
tried (Bonferroni), so the returned bound holds with probability at least ``confidence``: a
correct mechanism fails ``epsilon_lower <= claimed`` at most ``1 - confidence`` of the time.
:func:`audit_epsilon` runs a release on both databases and compares the bound with a claim.

**The pseudo posterior, without MCMC.** :class:`ConjugateNormal` is the model
:math:`x_i \sim N(\mu, \sigma^2)` (σ known), :math:`\mu \sim N(m_0, s_0^2)`, whose
:math:`\alpha`-weighted pseudo posterior (Savitsky, Williams & Hu 2022; range-restricted paper
eq. 1) stays conjugate,

.. math:: \xi^\alpha(\mu \mid x) = N\Big(\frac{m_0/s_0^2 + \sum_i \alpha_i x_i/\sigma^2}
          {1/s_0^2 + \sum_i \alpha_i/\sigma^2},\ \frac{1}{1/s_0^2 + \sum_i\alpha_i/\sigma^2}\Big),

so its draws are exact; the censored pseudo posterior (Hu, Williams & Savitsky 2025),
:math:`\tilde\xi(\mu\mid x) \propto \xi(\mu)\prod_i \exp\{\mathrm{clip}(\alpha_i f_\mu(x_i),
-B, B)\}`, is drawn exactly by rejection from the prior (its density ratio to the prior is
bounded). A release is one posterior draw and a synthetic dataset drawn under it.

**A whole file, censored per part.** :class:`CensoredFile` draws a whole file's censored
pseudo posterior (:class:`~pseudopost.privacy.decomposition.PartsCensored`, the parts and
bounds :math:`B_k` of :func:`~pseudopost.fitting.censored.split_bound`) exactly: each part by
rejection from its prior (:func:`prior_draws`), accepted with probability
:math:`\exp\{\sum_i \mathrm{clip}(w_i f_i(\theta), -B_k, B_k) - U_k\}`, the envelope
:math:`U_k = \sum_i \min(B_k, \max(w_i \bar f, -B_k))` from an upper bound :math:`\bar f`
of every record's log-likelihood (0 for the discrete parts: log-probabilities), with the
parts' own per-record log-likelihoods (:meth:`Part.table
<pseudopost.models.parts.base.Part.table>`); the uncensored posterior of a conjugate part by its
exact draws. A release is one draw of every part; the synthetic file is its post-processing, so
the draw is what is audited.

**Local epsilon.** :func:`audit_local_epsilon` checks Theorem 3 of Savitsky, Williams & Hu
(2022) on the realized draws: for the database x and each neighbour :math:`x_{-j}` (record j
removed), the exact log density ratio :math:`|\log\xi^\alpha(\mu_m\mid x) -
\log\xi^\alpha(\mu_m\mid x_{-j})|` at every draw :math:`\mu_m` of :math:`\xi^\alpha(\cdot\mid x)`
must not exceed :math:`\varepsilon_x = 2\max_i\Delta_i` computed by the accountant on the same
draws. (The ratio of two normals of different variances is unbounded in the far tails; the
local guarantee is about the region the posterior's draws cover, which is where
:math:`\Delta_i` is measured.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_in_interval, check_positive, check_positive_int

__all__ = [
    "AuditResult",
    "CensoredFile",
    "ConjugateNormal",
    "EpsilonAudit",
    "LocalAudit",
    "audit_epsilon",
    "audit_local_epsilon",
    "clopper_pearson",
    "epsilon_lower_bound",
    "outlier_score",
    "prior_draws",
]


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`epsilon_lower_bound`."""

    epsilon_lower: float
    threshold: float
    direction: str
    counts: tuple[int, int]
    trials: tuple[int, int]
    confidence: float


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """Two one-sided ``1 - alpha`` Clopper-Pearson bounds (lower, upper) for ``k`` of ``n``."""
    lo = 0.0 if k == 0 else float(stats.beta.ppf(alpha, k, n - k + 1))
    hi = 1.0 if k == n else float(stats.beta.ppf(1 - alpha, k + 1, n - k))
    return lo, hi


def epsilon_lower_bound(
    scores_d: np.ndarray,
    scores_neighbour: np.ndarray,
    *,
    delta: float = 0.0,
    confidence: float = 0.95,
    n_thresholds: int = 50,
) -> AuditResult:
    """Largest epsilon lower bound over threshold events on the two samples of scores.

    Parameters
    ----------
    scores_d, scores_neighbour
        One real score per independent run of the mechanism on D and on its neighbour.
    delta
        The mechanism's claimed delta (subtracted as in the inequality above).
    confidence
        Joint confidence over every event tested (Bonferroni over thresholds and directions).
    n_thresholds
        Thresholds at evenly spaced quantiles of the pooled scores.
    """
    a = np.asarray(scores_d, dtype=float).ravel()
    b = np.asarray(scores_neighbour, dtype=float).ravel()
    if a.size < 10 or b.size < 10:
        raise ValueError(f"Need at least 10 runs on each dataset; got {a.size} and {b.size}.")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("Audit scores must be finite.")
    check_in_interval(confidence, "confidence", 0.0, 1.0, closed="neither")
    check_in_interval(delta, "delta", 0.0, 1.0, closed="left")
    pooled = np.concatenate([a, b])
    ts = np.unique(np.quantile(pooled, np.linspace(0.02, 0.98, n_thresholds)))
    alpha = (1 - confidence) / (4 * len(ts))  # 2 events x 2 directions per threshold, one-sided
    best = AuditResult(0.0, float(ts[0]), "none", (0, 0), (a.size, b.size), confidence)
    for t in ts:
        for name, x, y in (("D>D'", a, b), ("D'>D", b, a)):
            for side in (">", "<="):
                kx = int(np.sum(x > t)) if side == ">" else int(np.sum(x <= t))
                ky = int(np.sum(y > t)) if side == ">" else int(np.sum(y <= t))
                p_lo, _ = clopper_pearson(kx, x.size, alpha)
                _, q_hi = clopper_pearson(ky, y.size, alpha)
                if p_lo - delta <= 0 or q_hi <= 0:
                    continue
                eps = float(np.log((p_lo - delta) / q_hi))
                if eps > best.epsilon_lower:
                    best = AuditResult(
                        eps, float(t), f"{name} {side}", (kx, ky), (x.size, y.size), confidence
                    )
    return best


# -- auditing a release against its claim ------------------------------------------------------
@dataclass(frozen=True)
class EpsilonAudit:
    """Outcome of :func:`audit_epsilon`: the lower bound, the claim, and whether the claim is
    refuted (``violated``: the lower bound, valid with probability ``confidence``, exceeds it)."""

    lower: AuditResult
    claimed: float

    @property
    def violated(self) -> bool:
        return self.lower.epsilon_lower > self.claimed

    @property
    def epsilon_lower(self) -> float:
        return self.lower.epsilon_lower


def audit_epsilon(
    release: Callable[[np.ndarray, int, np.random.Generator], np.ndarray],
    data: np.ndarray,
    neighbour: np.ndarray,
    score: Callable[[np.ndarray], np.ndarray],
    claimed: float,
    *,
    runs: int,
    delta: float = 0.0,
    confidence: float = 0.95,
    seed: SeedLike = None,
) -> EpsilonAudit:
    """Run ``release`` ``runs`` times on ``data`` and on ``neighbour`` (one record added or
    removed), score each output, and bound epsilon from below (:func:`epsilon_lower_bound`).

    ``release(data, runs, rng)`` returns ``runs`` independent outputs (leading axis);
    ``score(outputs)`` one real number per output. The claim is refuted, with confidence
    ``confidence``, when the lower bound exceeds ``claimed``.
    """
    runs = check_positive_int(runs, "runs", minimum=10)
    claimed = check_positive(claimed, "claimed", strict=False)
    rng = as_generator(seed)
    scores = []
    for d in (data, neighbour):
        s = np.asarray(score(release(np.asarray(d, dtype=float), runs, rng)), dtype=float)
        if s.shape != (runs,):
            raise ValueError(f"'score' must return one value per run ({runs},); got {s.shape}.")
        scores.append(s)
    lower = epsilon_lower_bound(*scores, delta=delta, confidence=confidence)
    return EpsilonAudit(lower, float(claimed))


def outlier_score(value: float) -> Callable[[np.ndarray], np.ndarray]:
    r"""Score of a synthetic dataset: :math:`-|\bar x^* - v|`, closeness of its mean to the
    audited record's value v (large when the release looks like it saw the record)."""
    v = float(value)

    def score(synthetic: np.ndarray) -> np.ndarray:
        return -np.abs(np.asarray(synthetic, dtype=float).mean(axis=1) - v)

    return score


# -- the conjugate model ------------------------------------------------------------------------
_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)


@dataclass(frozen=True)
class ConjugateNormal:
    r""":math:`x_i \sim N(\mu, \sigma^2)` with σ known and :math:`\mu \sim N(m_0, s_0^2)`; exact
    draws of the weighted and of the censored pseudo posterior (module docstring)."""

    sigma: float
    prior_mean: float = 0.0
    prior_sd: float = 1.0

    def __post_init__(self) -> None:
        check_positive(self.sigma, "sigma")
        check_positive(self.prior_sd, "prior_sd")
        if not np.isfinite(self.prior_mean):
            raise ValueError(f"'prior_mean' must be finite; got {self.prior_mean!r}.")

    def _check(self, x, alpha) -> tuple[np.ndarray, np.ndarray]:
        x = np.asarray(x, dtype=float)
        if x.ndim != 1 or not np.all(np.isfinite(x)):
            raise ValueError(f"'x' must be a finite 1-d array; got shape {x.shape}.")
        a = np.ones_like(x) if alpha is None else np.asarray(alpha, dtype=float)
        if a.shape != x.shape or np.any(~np.isfinite(a)) or np.any(a < 0):
            raise ValueError(
                f"'alpha' must be {x.size} finite non-negative weights; got shape {a.shape}."
            )
        return x, a

    def loglik(self, x: np.ndarray, mu: np.ndarray) -> np.ndarray:
        r""":math:`f_{\mu_m}(x_i) = \log N(x_i \mid \mu_m, \sigma^2)`, shape (draws, records)."""
        z = (np.asarray(x, float)[None, :] - np.asarray(mu, float).reshape(-1, 1)) / self.sigma
        return -0.5 * z * z - np.log(self.sigma) - _HALF_LOG_2PI

    def posterior(self, x: np.ndarray, alpha: np.ndarray | None = None) -> tuple[float, float]:
        """Mean and sd of the alpha-weighted pseudo posterior (closed form, module docstring)."""
        x, a = self._check(x, alpha)
        precision = 1.0 / self.prior_sd**2 + a.sum() / self.sigma**2
        mean = (self.prior_mean / self.prior_sd**2 + (a * x).sum() / self.sigma**2) / precision
        return float(mean), float(precision**-0.5)

    def log_density(self, mu: np.ndarray, x: np.ndarray, alpha: np.ndarray | None = None):
        r"""Exact :math:`\log\xi^\alpha(\mu\mid x)` at ``mu``."""
        mean, sd = self.posterior(x, alpha)
        return stats.norm.logpdf(np.asarray(mu, float), mean, sd)

    def sample(
        self,
        x: np.ndarray,
        alpha: np.ndarray | None,
        size: int,
        rng: np.random.Generator,
        *,
        bound: float | None = None,
    ) -> np.ndarray:
        r"""``size`` exact draws of the weighted posterior, or with ``bound`` B of the censored
        one: proposals from the prior accepted with probability
        :math:`\exp\{\sum_i \mathrm{clip}(\alpha_i f_\mu(x_i), -B, B) - U\}`, where
        :math:`U = \sum_i \min(B, \max(\alpha_i \max_\mu f_\mu(x_i), -B))` bounds the sum."""
        x, a = self._check(x, alpha)
        size = check_positive_int(size, "size")
        if bound is None:
            mean, sd = self.posterior(x, a)
            return rng.normal(mean, sd, size)
        B = check_positive(bound, "bound")
        top = -np.log(self.sigma) - _HALF_LOG_2PI  # max over mu of f_mu(x_i)
        envelope = float(np.sum(np.minimum(B, np.maximum(a * top, -B))))
        out, tried = [], 0
        while sum(len(o) for o in out) < size:
            if tried > 1000 * size + 10**6:
                raise RuntimeError("Rejection sampling accepts too rarely for this database.")
            k = max(1000, 4 * size)
            mu = rng.normal(self.prior_mean, self.prior_sd, k)
            log_accept = np.clip(a * self.loglik(x, mu), -B, B).sum(axis=1) - envelope
            out.append(mu[np.log(rng.uniform(size=k)) < log_accept])
            tried += k
        return np.concatenate(out)[:size]

    def synthesize(self, mu: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
        r"""One synthetic dataset of n records per draw: :math:`x^*_{mj} \sim N(\mu_m,\sigma^2)`."""
        mu = np.asarray(mu, dtype=float).reshape(-1, 1)
        return mu + self.sigma * rng.standard_normal((mu.shape[0], check_positive_int(n, "n")))

    def release(
        self,
        alpha: np.ndarray | Callable[[np.ndarray], np.ndarray] | None = None,
        *,
        bound: float | None = None,
        n_synthetic: int = 20,
    ) -> Callable[[np.ndarray, int, np.random.Generator], np.ndarray]:
        """The mechanism as :func:`audit_epsilon` runs it: ``release(x, runs, rng)`` gives
        ``runs`` synthetic datasets, each under its own exact posterior draw. ``alpha``: fixed
        weights per database (a function of x, or None for alpha = 1)."""

        def run(x: np.ndarray, runs: int, rng: np.random.Generator) -> np.ndarray:
            a = alpha(x) if callable(alpha) else alpha
            return self.synthesize(self.sample(x, a, runs, rng, bound=bound), n_synthetic, rng)

        return run

    def pymc_model(self, x: np.ndarray):
        """The same model in PyMC (free variable ``mu``), for the package's accountant."""
        import pymc as pm

        x, _ = self._check(x, None)
        with pm.Model() as model:
            mu = pm.Normal("mu", self.prior_mean, self.prior_sd)
            pm.Normal("x", mu, self.sigma, observed=x)
        return model


# -- the local bound -------------------------------------------------------------------------
@dataclass(frozen=True)
class LocalAudit:
    r"""Outcome of :func:`audit_local_epsilon`: ``per_record[j]`` = :math:`\max_m |\log
    \xi^\alpha(\mu_m\mid x) - \log\xi^\alpha(\mu_m\mid x_{-j})|`, their maximum, the claimed
    :math:`\varepsilon_x`, and whether any ratio exceeds it."""

    per_record: np.ndarray
    epsilon: float

    @property
    def max_log_ratio(self) -> float:
        return float(self.per_record.max())

    @property
    def violated(self) -> bool:
        return self.max_log_ratio > self.epsilon


def audit_local_epsilon(
    model: ConjugateNormal,
    x: np.ndarray,
    alpha: np.ndarray | None,
    draws: np.ndarray,
    epsilon: float,
) -> LocalAudit:
    r"""The exact log density ratio between the weighted posterior of ``x`` and of each
    remove-one neighbour, at ``draws`` (module docstring), against the claimed ``epsilon``.

    ``alpha`` are the weights of the posterior that was actually sampled (the neighbour keeps the
    other records' weights: add/remove neighbours, weights fixed); ``draws`` its draws.
    """
    x, a = model._check(x, alpha)
    epsilon = check_positive(epsilon, "epsilon", strict=False)
    mu = np.asarray(draws, dtype=float).ravel()
    here = model.log_density(mu, x, a)
    per_record = np.empty(x.size)
    for j in range(x.size):
        keep = np.arange(x.size) != j
        per_record[j] = np.max(np.abs(here - model.log_density(mu, x[keep], a[keep])))
    return LocalAudit(per_record, float(epsilon))


# -- a whole file, censored per part ----------------------------------------------------------
def prior_draws(layout, size: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """``size`` draws (leading axis) of a part layout's priors on the constrained scale:
    ``normal`` (untransformed), ``halfnormal`` and ``gamma`` (``log``), ``dirichlet``
    (``simplex``); other combinations are refused."""
    size = check_positive_int(size, "size")
    out = {}
    for p in layout.params:
        kind = p.prior[0]
        if kind == "normal" and p.transform == "none":
            mu = np.broadcast_to(np.asarray(p.prior[1], float), p.shape)
            out[p.name] = mu + float(p.prior[2]) * rng.standard_normal((size, *p.shape))
        elif kind == "halfnormal" and p.transform == "log":
            out[p.name] = np.abs(float(p.prior[1]) * rng.standard_normal((size, *p.shape)))
        elif kind == "gamma" and p.transform == "log":
            a, b = float(p.prior[1]), float(p.prior[2])
            out[p.name] = rng.gamma(a, 1.0 / b, (size, *p.shape))
        elif kind == "dirichlet" and p.transform == "simplex":
            out[p.name] = rng.dirichlet(np.broadcast_to(np.asarray(p.prior[1], float), p.shape),
                                        size)  # fmt: skip
        else:
            raise ValueError(
                f"prior_draws: no sampler for parameter '{p.name}' ({kind} prior, "
                f"{p.transform} transform)."
            )
    return out


@dataclass(frozen=True)
class CensoredFile:
    r"""Exact draws of a whole file's per-part censored pseudo posterior, and of the uncensored
    one for conjugate parts (module docstring).

    ``parts`` and ``data`` as :func:`~pseudopost.fitting.columns.file_part_data` gives them,
    ``bounds`` part name -> :math:`B_k`; ``log_lik_max`` an upper bound of every record's
    log-likelihood in every part (0: discrete parts)."""

    parts: tuple
    data: tuple
    bounds: dict
    log_lik_max: float = 0.0

    def draws(
        self,
        weights: np.ndarray,
        size: int,
        rng: np.random.Generator,
        *,
        censored: bool = True,
        max_proposals: int = 10**8,
    ) -> dict[str, dict[str, np.ndarray]]:
        """``size`` independent draws of every part (part name -> its parameters)."""
        from pseudopost.fitting.censored import CensoredDensity

        size = check_positive_int(size, "size")
        out = {}
        for part, d in zip(self.parts, self.data, strict=True):
            if not censored:
                stats = d.statistics(part, weights) if hasattr(d, "records") else \
                    part.statistics(d, weights)  # fmt: skip
                out[part.name] = part.exact_draws(stats, size, rng)
                continue
            dens = CensoredDensity(part, d, weights, self.bounds[part.name])
            B = dens.bound
            # records sharing a (key, weight) pair share their term: evaluated once, counted
            pairs, count = np.unique(np.column_stack([dens.enc.index[dens.on],
                                                      dens.weights[dens.on]]),
                                     axis=0, return_counts=True)  # fmt: skip
            enc = replace(dens.enc, n=pairs.shape[0], index=pairs[:, 0].astype(np.int64))
            w = pairs[:, 1]
            if part.kind == "gauss":  # per record: its outcome enters the term
                enc, w, count = dens.enc, dens.weights, dens.on.astype(np.float64)
            envelope = float(np.sum(count * np.minimum(B, np.maximum(w * self.log_lik_max, -B))))
            kept, got, tried = [], 0, 0
            while got < size:
                if tried > max_proposals:
                    raise RuntimeError(f"Rejection for part '{part.name}' accepts too rarely.")
                k = max(1000, 4 * (size - got))
                theta = prior_draws(part.layout, k, rng)
                with np.errstate(all="ignore"):
                    f = part.gather(part.table(theta, enc), enc)
                s = np.nan_to_num(w * f, nan=-np.inf)
                log_accept = np.clip(s, -B, B) @ count - envelope
                if np.any(log_accept > 1e-9):
                    raise ValueError(f"'log_lik_max' is not an upper bound for part '{part.name}'.")
                keep = np.log(rng.uniform(size=k)) < log_accept
                kept.append({n: v[keep] for n, v in theta.items()})
                got += int(keep.sum())
                tried += k
            out[part.name] = {n: np.concatenate([b[n] for b in kept])[:size] for n in theta}
        return out

    def record_logp(self, draws, record) -> np.ndarray:
        """Per draw, the log-likelihood of one record (``record``: part name -> its one-record
        data, a :class:`~pseudopost.models.parts.PartData` of n = 1) summed over the parts:
        the audit's score."""
        from pseudopost.models.parts.grouped import encode_records

        total = 0.0
        for part in self.parts:
            enc = encode_records(part, record[part.name])
            with np.errstate(all="ignore"):
                total = total + part.gather(part.table(draws[part.name], enc), enc)[:, 0]
        return np.asarray(total)
