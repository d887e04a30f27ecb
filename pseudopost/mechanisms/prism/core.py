r"""PRISM: prediction-centric release with informed structure measurements (Algorithm 1).

Neighbouring relation: **replace-one** (datasets of the same size n differing in one record),
as in the paper (section 3.2). n is therefore public.

Algorithm 1 (appendix A) as :meth:`PRISM.fit` runs it, each step with its pool and cost
(section 5; ``"approx"`` accounting shown, the ``"zcdp"`` charges are in :mod:`.budget`):

1. Line 2: split :math:`(\varepsilon, \delta)` into the pools ``sel``, ``mi``, ``task``, ``bg``
   (section 5.4, :func:`.budget.split_pools`); :math:`\delta = 1/n^2` by default.
   (Optional extension) DP bins for numeric columns: pool ``bins``, taken off the top,
   Laplace, pure :math:`\varepsilon_{bins}` (:mod:`.discretize`).
2. Lines 3-9, features S (section 5.2): causal :math:`S = Pa(Y)` or graphical
   :math:`S = MB(Y)` at no cost; predictive: greedy top-k exponential mechanism on
   :math:`I(X_j; Y)`, pool ``sel``, pure :math:`\varepsilon_{sel}` (:mod:`.selection`).
3. Noisy :math:`I(X_j; Y)` (for MI task weights) and :math:`I(X_j; X_{j'} \mid Y)` (for the
   3-way marginals; Theorem 6.1's "Step 2"), one Laplace vector release, pool ``mi``, pure
   :math:`\varepsilon_{mi}`; its :math:`\ell_1` sensitivity is the sum of the coordinates' bounds
   (:math:`\Delta_I(n)` per MI, :math:`2\Delta_I(n)` per CMI, :mod:`.selection`).
4. Line 10, workload :math:`\mathcal W = \mathcal W_{task} \cup \mathcal W_{bg}` (section 5.3): task
   marginals :math:`(X_S, Y)`, admitted 3-way marginals, and a background spanning tree (PGM
   backend) chosen by the exponential mechanism on :math:`I(X_i; X_j)` with a third of pool
   ``bg``, pure (:mod:`.workload`).
5. Lines 11-12, allocation and measurement (sections 5.4-5.5, 6.5): budgets from Theorem 6.3
   within the ``task`` pool and within the rest of the ``bg`` pool, :math:`\delta` split evenly
   over these queries; every marginal as a probability vector with Gaussian noise (L2
   sensitivity :math:`\sqrt2/n`, :mod:`.measure`).
6. Lines 13-14: fit Private-PGM or naive Bayes to the noisy marginals and sample
   (:meth:`PRISM.sample`): post-processing.

End to end (Theorem 6.1): :math:`(\varepsilon_{sel} + \varepsilon_{mi} + \sum_q \varepsilon_q,
\sum_q \delta_q)`-DP by basic composition; the release also reports the zCDP sum and its
conversion (``release_.report()``). :attr:`PRISM.privacy_statement` states exactly the report's
``epsilon`` and ``delta``, global, replace-one, with the column domains read from the data
named as assumed public.

Deviations from the paper, each argued where it lives: the selection score is mutual
information with PrivBayes' bound, not the clipped chi-square (whose sensitivity is not
:math:`O(1/n)`, :mod:`.selection`); 1-way background marginals only for columns no task marginal
covers (:mod:`.workload`); 3-way marginals are skipped when the junction tree would exceed
``max_model_cells``; data-derived task weights are floored at 0.1 of their average; the
Gaussian mechanism is calibrated analytically by default; DP bins are an optional extension.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import (
    check_frame,
    check_in_interval,
    check_positive,
    check_positive_int,
    check_probability,
)
from pseudopost.mechanisms.prism.budget import (
    Accounting,
    LedgerEntry,
    PrivacyLedger,
    allocate_budget,
    epsilon_to_rho,
    split_pools,
)
from pseudopost.mechanisms.prism.discretize import Encoding, encode_frame
from pseudopost.mechanisms.prism.measure import (
    MarginalMeasurement,
    measure_marginal,
    replace_one_l2,
)
from pseudopost.mechanisms.prism.naive_bayes import fit_naive_bayes
from pseudopost.mechanisms.prism.pgm import fit_pgm
from pseudopost.mechanisms.prism.regimes import markov_blanket
from pseudopost.mechanisms.prism.release import PRISMRelease, prism_statement
from pseudopost.mechanisms.prism.selection import (
    conditional_mutual_information,
    exponential_spanning_tree,
    greedy_top_k,
    mi_sensitivity,
    mutual_information,
)
from pseudopost.mechanisms.prism.workload import (
    Query,
    Workload,
    background_queries,
    candidate_pairs,
    noisy_weights,
    task_queries,
    triple_queries,
)
from pseudopost.privacy.noise import gaussian_epsilon, gaussian_sigma, laplace_noise, zcdp_sigma
from pseudopost.privacy.statement import PrivacyStatement

__all__ = ["PRISM"]

Regime = Literal["causal", "graphical", "predictive"]
_BG_TREE_SHARE = 1.0 / 3.0  # share of the bg pool for the spanning-tree selection (as MST)


class PRISM:
    r"""Prediction-centric DP synthetic data (Asiaee et al., PRISM, Algorithm 1).

    Parameters
    ----------
    epsilon, delta
        Total :math:`(\varepsilon, \delta)`; ``delta=None`` means :math:`1/n^2` (appendix C.2).
    target
        Name of Y (may also be given to :meth:`fit`).
    regime
        ``"causal"`` (needs ``parents``), ``"graphical"`` (needs ``dag``) or ``"predictive"``
        (needs ``k``).
    parents, dag, k
        :math:`Pa(Y)`; a DAG as ``{node: parents}`` or ``(parent, child)`` edges; the number of
        features to select.
    allocation
        ``"closed_form"`` (Theorem 6.3) or ``"uniform"`` (the ablation).
    backend
        ``"pgm"`` (Private-PGM via mbi) or ``"naive_bayes"`` (appendix C.2).
    accounting
        ``"approx"`` (basic composition, Theorem 6.1) or ``"zcdp"`` (allocation in rho,
        converted to :math:`(\varepsilon,\delta)` at the end).
    pools
        Fractions for ``sel``, ``mi``, ``task``, ``bg`` (default 0.10/0.05/0.65/0.20).
    m3
        Maximum number of 3-way task marginals (PGM backend; default 20).
    task_weights
        ``"uniform"`` (w = 1), ``"mi"`` (DP-estimated :math:`I(X_j;Y)`) or a mapping
        feature -> weight (public, e.g. oracle weights); normalised to average 1.
    joint_cells
        Measure the full joint :math:`(X_S, Y)` when it has at most this many cells (PGM).
    bins, bounds, domain, bins_fraction
        Column coding (``discretize.fit_encoding``); ``bins_fraction`` of the budget pays
        for DP bins when any are requested.
    gaussian_method
        ``"analytic"`` (exact for every epsilon, default) or ``"classic"`` (the paper's formula,
        used only where a query's epsilon is below 1, the range Dwork & Roth's Theorem A.1
        covers; analytic otherwise) calibration of the Gaussian mechanism under ``"approx"``.
    iters, tol, max_model_cells
        At most ``iters`` mirror-descent iterations, stopping early once the loss falls by at
        most ``tol`` (relative) over each of two consecutive 50-iteration blocks (``None``: run
        all); the junction-tree size cap for 3-way marginals: a 3-way marginal is admitted
        only if the junction tree of the workload stays within ``max_model_cells`` cells
        (AIM-style model-size control; the cap is in cells of the whole junction tree, not of
        the marginal). With the PGM backend each mirror-descent iteration costs time in
        proportion to these cells (Adult: 19k cells under the old 20,000 cap, 2.2 ms per
        iteration; 2k cells, 0.3 ms), while TSTR AUC did not move
        (benchmarks/results/prism_adult.md). A cap below the background model's own junction
        tree admits no 3-way marginal.
    seed
        Seed for every random step; the same seed gives the same release and samples.
    """

    _notes: tuple[str, ...] = ()

    def __init__(
        self,
        epsilon: float,
        delta: float | None = None,
        target: str | None = None,
        regime: Regime = "causal",
        *,
        parents: Sequence[str] | None = None,
        dag: Any = None,
        k: int | None = None,
        allocation: Literal["closed_form", "uniform"] = "closed_form",
        backend: Literal["pgm", "naive_bayes"] = "pgm",
        accounting: Accounting = "approx",
        pools: Mapping[str, float] | None = None,
        m3: int = 20,
        task_weights: str | Mapping[str, float] = "uniform",
        joint_cells: int = 1000,
        bins: Mapping[str, Any] | None = None,
        bounds: Mapping[str, tuple[float, float]] | None = None,
        domain: Mapping[str, Sequence] | None = None,
        bins_fraction: float = 0.05,
        gaussian_method: Literal["classic", "analytic"] = "analytic",
        iters: int = 1000,
        tol: float | None = 1e-2,
        max_model_cells: float = 2e3,
        seed: SeedLike = None,
    ) -> None:
        self.epsilon = check_positive(epsilon, "epsilon")
        self.delta = None if delta is None else check_probability(delta, "delta")
        self.target = target
        _choice(regime, "regime", ("causal", "graphical", "predictive"))
        _choice(allocation, "allocation", ("closed_form", "uniform"))
        _choice(backend, "backend", ("pgm", "naive_bayes"))
        _choice(accounting, "accounting", ("approx", "zcdp"))
        _choice(gaussian_method, "gaussian_method", ("classic", "analytic"))
        if isinstance(task_weights, str):
            _choice(task_weights, "task_weights", ("uniform", "mi"))
        self.regime, self.parents, self.dag, self.k = regime, parents, dag, k
        self.allocation, self.backend, self.accounting = allocation, backend, accounting
        self.pools, self.task_weights = pools, task_weights
        self.m3 = check_positive_int(m3, "m3", minimum=0)
        self.joint_cells = check_positive_int(joint_cells, "joint_cells", minimum=0)
        self.bins, self.bounds, self.domain = bins, bounds, domain
        self.bins_fraction = check_in_interval(
            bins_fraction, "bins_fraction", 0.0, 1.0, closed="neither"
        )
        self.gaussian_method = gaussian_method
        self.iters = check_positive_int(iters, "iters")
        self.tol = None if tol is None else check_positive(tol, "tol")
        self.max_model_cells = check_positive(max_model_cells, "max_model_cells")
        self.seed = seed
        if regime == "causal" and parents is None:
            raise ValueError("regime='causal' needs the causal parents of Y: pass parents=[...].")
        if regime == "graphical" and dag is None:
            raise ValueError("regime='graphical' needs a DAG: pass dag={node: [parents]}.")
        if regime == "predictive":
            if k is None:
                raise ValueError("regime='predictive' needs the number of features k.")
            check_positive_int(k, "k")

    # ------------------------------------------------------------------ validation
    def _features(self, frame: pd.DataFrame, target: str) -> tuple[list[str], list[str] | None]:
        """All feature columns, and S when the regime fixes it without data."""
        features = [c for c in frame.columns if c != target]
        if not features:
            raise ValueError("The frame has no feature columns besides the target.")
        if self.regime == "causal":
            pas = [self.parents] if isinstance(self.parents, str) else list(self.parents)
            bad = [p for p in pas if p not in features]
            if bad or not pas:
                raise ValueError(
                    f"The 'parents' {bad or pas} are not feature columns of the frame; "
                    f"features are {features}."
                )
            return features, list(dict.fromkeys(pas))
        if self.regime == "graphical":
            blanket = markov_blanket(self.dag, target)
            bad = [b for b in blanket if b not in features]
            if bad:
                raise ValueError(
                    f"Markov blanket node(s) {bad} of '{target}' are not columns of the frame."
                )
            if not blanket:
                raise ValueError(f"The Markov blanket of '{target}' in the DAG is empty.")
            return features, blanket
        if self.k > len(features):
            raise ValueError(
                f"The 'k' parameter must be <= the number of features d={len(features)}. Got {self.k}."
            )
        return features, None

    def _check(self, frame: pd.DataFrame, target: str | None) -> str:
        check_frame(frame, "frame", min_rows=2)
        target = self.target if target is None else target
        if target is None:
            raise ValueError("No target: pass target='Y' to PRISM(...) or to fit(...).")
        if target not in frame.columns:
            raise ValueError(
                f"The target column '{target}' is missing from the frame; columns are "
                f"{list(frame.columns)}."
            )
        if frame[target].nunique(dropna=True) < 2:
            raise ValueError(
                f"The target column '{target}' is constant; there is nothing to predict."
            )
        return target

    # ------------------------------------------------------------------ fit
    def fit(self, frame: pd.DataFrame, target: str | None = None) -> PRISM:
        """Run Algorithm 1 on ``frame`` (not modified); the release is ``self.release_``."""
        target = self._check(frame, target)
        features, fixed_s = self._features(frame, target)
        n = len(frame)
        delta = self.delta if self.delta is not None else 1.0 / n**2
        rng = as_generator(self.seed)
        s_size = len(fixed_s) if fixed_s is not None else int(self.k)
        pgm = self.backend == "pgm"
        wants_cmi = pgm and self.m3 > 0 and s_size >= 2
        wants_mi = self.task_weights == "mi" or wants_cmi
        used = ["task", "bg", *(["sel"] if fixed_s is None else []), *(["mi"] if wants_mi else [])]
        dp_bins = [c for c, b in (self.bins or {}).items() if isinstance(b, (int, np.integer))]
        total = self.epsilon if self.accounting == "approx" else epsilon_to_rho(self.epsilon, delta)
        pools = split_pools(
            total,
            used=used,
            fractions=self.pools,
            bins_fraction=self.bins_fraction if dp_bins else 0.0,
        )

        # step 0: coding (DP bins are a Laplace release)
        encoding, entries = encode_frame(
            frame,
            bins=self.bins,
            bounds=self.bounds,
            domain=self.domain,
            epsilon=self._pure_eps(pools.get("bins", 0.0)),
            seed=rng.spawn(1)[0],
        )
        codes, sizes = encoding.encode(frame), encoding.sizes

        # step 1: features S
        if fixed_s is None:
            s, sel_entries = self._select(codes, sizes, features, target, n, pools["sel"], rng)
            entries += sel_entries
        else:
            s = fixed_s

        # step 2: noisy MI / CMI
        scores, mi_entries = self._noisy_scores(
            codes,
            sizes,
            s,
            target,
            n,
            pools.get("mi", 0.0),
            rng,
            want_mi=self.task_weights == "mi",
            want_cmi=wants_cmi,
        )
        entries += mi_entries

        # step 3: workload (background tree spends part of bg)
        bg_meas = pools["bg"]
        tree: list[tuple[str, str]] = []
        if pgm and len(features) >= 2:
            tree_budget = pools["bg"] * _BG_TREE_SHARE
            bg_meas = pools["bg"] - tree_budget
            tree, tree_entries = self._tree(codes, sizes, features, n, tree_budget, rng)
            entries += tree_entries
        workload = self._workload(encoding, sizes, s, target, scores, tree)

        # step 4: allocation and measurement
        measurements, meas_entries = self._measure(
            codes, sizes, workload, n, delta, {"task": pools["task"], "bg": bg_meas}, rng
        )
        entries += meas_entries
        ledger = PrivacyLedger(
            tuple(entries),
            delta,
            self.accounting,
            notes=(
                *self._notes,
                *(
                    f"column '{c.name}': domain read from the data (assumed public)"
                    for c in encoding.columns
                    if c.source.startswith("data")
                ),
            ),
        )
        if ledger.epsilon > self.epsilon * (1 + 1e-9):
            raise RuntimeError(f"Budget overrun: spent {ledger.epsilon} > {self.epsilon}.")

        # step 5: synthesis backend (post-processing)
        if pgm:
            model = fit_pgm(measurements, sizes, n, iters=self.iters, tol=self.tol)
        else:
            model = fit_naive_bayes(measurements, target, encoding.names)
        self.release_ = PRISMRelease(
            encoding=encoding,
            target=target,
            regime=self.regime,
            features=tuple(s),
            workload=workload,
            measurements=tuple(measurements),
            ledger=ledger,
            backend=self.backend,
            n=n,
            allocation=self.allocation,
            released_scores=scores,
            model=model,
            column_order=tuple(frame.columns),
        )
        self._sample_rng = rng.spawn(1)[0]
        return self

    # ------------------------------------------------------------------ steps
    def _pure_eps(self, budget: float) -> float:
        """Epsilon of a pure (Laplace) step bought with ``budget`` (eps, or rho = eps^2/2)."""
        return budget if self.accounting == "approx" else float(np.sqrt(2 * budget))

    def _select(self, codes, sizes, features, target, n, budget, rng):
        """Regime 3a: greedy top-k exponential mechanism on I(X_j; Y)."""
        k = int(self.k)
        binary = sizes[target] == 2 or all(sizes[f] == 2 for f in features)
        sens = mi_sensitivity(n, binary=binary)
        u = [mutual_information(codes[f], codes[target], sizes[f], sizes[target]) for f in features]
        eps_round = budget / k if self.accounting == "approx" else float(np.sqrt(8 * budget / k))
        idx = greedy_top_k(u, k, eps_round * k, sens, rng.spawn(1)[0])
        entries = [
            LedgerEntry(f"select:{i}", "sel", "exponential", eps_round, 0.0, eps_round**2 / 8)
            for i in range(k)
        ]
        return [features[i] for i in idx], entries

    def _noisy_scores(self, codes, sizes, s, target, n, budget, rng, *, want_mi, want_cmi):
        """One Laplace release of I(X_j;Y), j in S, and I(X_j;X_j'|Y) for pairs in S."""
        keys: list[Any] = []
        vals: list[float] = []
        sens: list[float] = []
        if want_mi:
            for f in s:
                keys.append(f)
                vals.append(mutual_information(codes[f], codes[target], sizes[f], sizes[target]))
                sens.append(mi_sensitivity(n, binary=2 in (sizes[f], sizes[target])))
        if want_cmi:
            for a, b in candidate_pairs(s):
                keys.append((a, b))
                vals.append(
                    conditional_mutual_information(
                        codes[a], codes[b], codes[target], sizes[a], sizes[b], sizes[target]
                    )
                )
                sens.append(2 * mi_sensitivity(n, binary=False))
        if not keys:
            return {}, []
        eps = self._pure_eps(budget)
        noisy = laplace_noise(np.asarray(vals), float(np.sum(sens)) / eps, rng.spawn(1)[0])
        entry = LedgerEntry("mi:laplace", "mi", "laplace", eps, 0.0, eps**2 / 2)
        return dict(zip(keys, noisy.tolist(), strict=True)), [entry]

    def _tree(self, codes, sizes, features, n, budget, rng):
        """MST-style background: noisy maximum-MI spanning tree over the features."""
        rounds = len(features) - 1
        pairs = candidate_pairs(features)
        scores = {
            p: mutual_information(codes[p[0]], codes[p[1]], sizes[p[0]], sizes[p[1]]) for p in pairs
        }
        binary = all(sizes[f] == 2 for f in features)
        eps_round = (
            budget / rounds if self.accounting == "approx" else float(np.sqrt(8 * budget / rounds))
        )
        tree = exponential_spanning_tree(
            features, scores, eps_round, mi_sensitivity(n, binary=binary), rng.spawn(1)[0]
        )
        entries = [
            LedgerEntry(f"tree:{i}", "bg", "exponential", eps_round, 0.0, eps_round**2 / 8)
            for i in range(rounds)
        ]
        return tree, entries

    def _workload(self, encoding: Encoding, sizes, s, target, scores, tree) -> Workload:
        order = {c: i for i, c in enumerate(encoding.names)}

        def canon(q: Query) -> Query:
            return Query(tuple(sorted(q.clique, key=order.__getitem__)), q.pool, q.weight, q.kind)

        pgm = self.backend == "pgm"
        if isinstance(self.task_weights, Mapping):
            bad = [f for f in s if f not in self.task_weights or not self.task_weights[f] > 0]
            if bad:
                raise ValueError(
                    f"The 'task_weights' mapping needs a weight > 0 for feature(s) {bad}."
                )
            weights = dict(self.task_weights)
        elif self.task_weights == "mi":
            weights = dict(zip(s, noisy_weights([scores[f] for f in s]), strict=True))
        else:
            weights = None
        task = task_queries(
            s, target, sizes, weights=weights, joint_cells=self.joint_cells if pgm else 0
        )
        # 1-way marginals for the columns outside S (and Y for naive Bayes, appendix C.2); for
        # X_j in S and Y the measured (X_j, Y) marginals already carry the 1-way margins
        ones = [c for c in encoding.names if c not in s and (c != target or not pgm)]
        bg = background_queries(ones, tree if pgm else ())
        cmi = {k: v for k, v in scores.items() if isinstance(k, tuple)}
        triples = []
        if pgm and cmi:
            base = [q.clique for q in task + bg]
            triples = triple_queries(
                cmi,
                target,
                sizes,
                m3=self.m3,
                base_cliques=base,
                max_model_cells=self.max_model_cells,
            )
        queries = tuple(canon(q) for q in [*task, *triples, *bg])
        return Workload(target=target, features=tuple(s), queries=queries)

    def _measure(self, codes, sizes, workload, n, delta, budgets, rng):
        """Theorem 6.3 within each pool, then Gaussian measurement of each marginal."""
        sens = replace_one_l2(n)
        gauss = [q for q in workload.queries if q.pool in budgets]
        delta_q = delta / len(gauss)
        measurements: list[MarginalMeasurement] = []
        entries: list[LedgerEntry] = []
        for pool, total in budgets.items():
            qs = [q for q in gauss if q.pool == pool]
            if not qs:
                continue
            a = [q.weight * q.cells(sizes) for q in qs]  # c_t is common to the pool
            b = allocate_budget(a, total, accounting=self.accounting, method=self.allocation)
            for q, bq in zip(qs, b, strict=True):
                if self.accounting == "approx":
                    # Dwork & Roth's classic calibration is only proven for eps < 1 (Thm A.1)
                    method = self.gaussian_method if bq < 1 else "analytic"
                    sigma = gaussian_sigma(sens, bq, delta_q, method=method)
                    eps_q = float(bq)
                else:
                    sigma = zcdp_sigma(sens, bq)
                    eps_q = gaussian_epsilon(sigma, sens, delta_q)
                m = measure_marginal(
                    codes,
                    q.clique,
                    sizes,
                    sigma,
                    epsilon=eps_q,
                    delta=delta_q,
                    pool=pool,
                    weight=q.weight,
                    seed=rng.spawn(1)[0],
                )
                measurements.append(m)
                entries.append(
                    LedgerEntry(
                        f"measure:{'|'.join(q.clique)}", pool, "gaussian", eps_q, delta_q, m.rho
                    )
                )
        return measurements, entries

    # ------------------------------------------------------------------ output
    def _fitted(self) -> PRISMRelease:
        if not hasattr(self, "release_"):
            raise RuntimeError("This PRISM instance is not fitted yet; call fit(frame) first.")
        return self.release_

    def sample(self, n: int, seed: SeedLike = None) -> pd.DataFrame:
        """``n`` synthetic records; ``seed=None`` continues the fit seed's stream."""
        rel = self._fitted()
        return rel.sample(n, self._sample_rng.spawn(1)[0] if seed is None else seed)

    def privacy_report(self) -> dict[str, Any]:
        """The release's privacy report (both accountings, per pool and per query)."""
        return self._fitted().report()

    @property
    def privacy_statement(self) -> PrivacyStatement:
        """Global (epsilon, delta)-DP of the whole release under replace-one neighbours
        (Theorem 6.1: basic composition of every step, or zCDP converted once); equal to
        ``privacy_report()["epsilon"]`` and ``["delta"]``."""
        rel = self._fitted()
        extra = ()
        if isinstance(self.task_weights, Mapping):
            extra = ("the task weights given as a mapping are public (not computed from the data)",)
        return prism_statement("prism", self.privacy_report(), rel.encoding, extra)


def _choice(value: object, name: str, options: tuple[str, ...]) -> None:
    if value not in options:
        raise ValueError(f"The '{name}' parameter must be one of {list(options)}. Got {value!r}.")
