r"""REPS: risk-equalized private synthesis by a one-shot Gaussian release (Asiaee et al., Alg. 1).

Algorithm 1 (instantiation A, sections 5.1-5.3 and appendix B), as :meth:`REPS.fit` runs it.
Require: data :math:`D = (z_1, \dots, z_n)`, budget :math:`(\varepsilon, \delta)` split into
:math:`(\varepsilon_s, \delta_s) = (0.1\varepsilon, \delta/2)` and
:math:`(\varepsilon_t, \delta_t) = (0.9\varepsilon, \delta/2)` (appendix B.2; ``delta=None`` is
:math:`1/n^2`, section 7.4), weight map :math:`g`, clip :math:`C`.

1. Line 1, Stage 1, budget :math:`(\varepsilon_s, \delta_s)` (section 5.1): release every
   feature's histogram in one Gaussian vector, L2 sensitivity :math:`\sqrt d`
   (:func:`pseudopost.mechanisms.reps.rarity.release_histograms`), and score each record

   .. math:: \hat s_i = -\sum_{j=1}^d \log\max(\tilde p_{j,\mathrm{bin}(x_{ij})}, p_{\min}).

   With ``threshold="dp"`` (default) the threshold :math:`t` is a DP percentile of the scores
   (:func:`pseudopost.mechanisms.reps.rarity.dp_quantile`, pure :math:`\kappa\varepsilon_s`), the
   histograms getting :math:`(1-\kappa)\varepsilon_s` (basic composition inside Stage 1).
2. Line 2, Stage 1.5, no budget (section 5.2): :math:`w_i = g(\hat s_i) \in [0, 1]`, hinge-exp
   :math:`e^{-\gamma(\hat s_i - t)_+}`, cap :math:`\min(1, \tau/(\hat s_i + \tau))`, or the
   targeted schedule of Proposition 1 (:mod:`pseudopost.mechanisms.reps.weight_maps`).
3. Line 3, Stage 2, budget :math:`(\varepsilon_t, \delta_t)` (section 5.3): release

   .. math:: \tilde f = f_w(D) + N(0, \sigma^2 I), \qquad
             f_w(D) = \frac1n\sum_{i=1}^n w_i\,\mathrm{clip}(\phi(z_i), C)          \qquad (2)

   with :math:`\sigma` calibrated to the global sensitivity :math:`C/n` (Proposition 1 (2)),
   and fit the class-conditional Gaussian naive Bayes of appendix B.3 to :math:`\tilde f`
   (:mod:`pseudopost.mechanisms.reps.gaussian_nb`; post-processing).
4. Line 4: :meth:`REPS.sample` draws ``n`` synthetic records from the fitted model
   (post-processing; any number of records and datasets cost nothing more).

Privacy. Neighbouring relation: :math:`D \sim D^{(-i)}`, record :math:`i` replaced by the null
record :math:`\perp` with :math:`\phi(\perp) = 0`, :math:`n` public (section 3.1; add/remove
with a public size). Lemma 1: :math:`\|f_w(D) - f_w(D^{(-i)})\|_2 \le w_i C/n \le C/n` when
:math:`w_i` depends only on record :math:`i` and DP releases, so Stage 2 is
:math:`(\varepsilon_t, \delta_t)`-DP for any such weights and the whole release is
:math:`(\varepsilon_s+\varepsilon_t, \delta_s+\delta_t)`-DP (Theorem 1). Record :math:`i`'s
per-instance bound is :math:`\varepsilon_s + \frac{w_i C}{n\sigma}\sqrt{2\ln(1.25/\delta_t)}`
(Corollaries 1-2). :attr:`REPS.privacy_statement` says which of these hold:

* ``threshold="dp"`` or a public number: global, as above;
* ``threshold="empirical"`` (the raw percentile of the training scores, as in the paper's
  experiments): :math:`t`, hence every :math:`w_i`, depends on all records, so Lemma 1 does
  not cover the weighting and the statement is "global given the weights";
* the standardisation and categorical levels are taken as public: pass ``scaling`` and
  ``categories``, otherwise they are read from the data (as in the paper) and the statement
  names them as an assumption;
* ``calibration="classic"`` is Dwork & Roth's Theorem A.1 formula, proven for
  :math:`\varepsilon < 1`; :meth:`REPS.fit` checks it against the exact Gaussian curve
  (Balle & Wang 2018) and refuses a stage where the formula does not deliver its
  :math:`(\varepsilon, \delta)`.

What is published: :attr:`REPS.release_` (noisy histograms, noisy statistics, fitted model,
budgets) and samples. The per-record ``weights_``, ``scores_`` and ``per_instance_epsilon_`` are
functions of the confidential data: diagnostics for the data holder, not for release.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from pseudopost._cards import ReleaseCard
from pseudopost._rng import SeedLike, spawn_seeds
from pseudopost._validation import (
    check_columns,
    check_frame,
    check_in_interval,
    check_positive,
    check_positive_int,
    check_probability,
)
from pseudopost.mechanisms.reps.accounting import (
    BudgetSplit,
    compose,
    default_delta,
    end_to_end_epsilon,
    split_budget,
    synthesis_sigma,
    weighted_release_epsilon,
)
from pseudopost.mechanisms.reps.gaussian_nb import (
    NaiveBayesParameters,
    NaiveBayesSchema,
    weighted_clipped_mean,
)
from pseudopost.mechanisms.reps.rarity import HistogramRarity, dp_quantile, release_histograms
from pseudopost.mechanisms.reps.weight_maps import (
    cap_weights,
    hinge_exp_weights,
    targeted_clip_share,
    targeted_weights,
)
from pseudopost.privacy.noise import Backend, check_classic_gaussian, gaussian_noise
from pseudopost.privacy.statement import REPLACE_WITH_NULL, PrivacyStatement

__all__ = [
    "REPS",
    "RepsRelease",
    "next_sample_seed",
    "records_argument",
    "release_weighted_statistics",
    "split_feature_types",
    "weighted_statistics",
]

WeightMap = Literal["hinge_exp", "cap", "targeted", "uniform"]


@dataclass(frozen=True, repr=False)
class RepsRelease(ReleaseCard):
    """Frozen record of one REPS release: everything measured, and nothing per record.

    Attributes
    ----------
    schema
        Columns, classes, levels and standardisation used to encode :math:`\\phi`.
    rarity
        The Stage-1 release (noisy histograms), or ``None`` when no scoring was run.
    threshold
        Hinge/targeting threshold :math:`t` on the rarity score (``nan`` if unused).
    threshold_epsilon
        Part of :math:`\\varepsilon_s` spent on a DP threshold (0 if none).
    weight_map, gamma, tau
        The weight map and its parameters.
    clip, n, sigma
        Clip bound :math:`C`, public record count :math:`n` and Stage-2 noise :math:`\\sigma`.
    noisy_statistics
        :math:`\\tilde f`, shape ``(K, width)``: per label, noisy weighted count, categorical
        counts, first and second moments (all divided by :math:`n`).
    budget
        The :class:`~pseudopost.mechanisms.reps.accounting.BudgetSplit`.
    epsilon, delta
        End-to-end guarantee from Theorem 1.
    calibration, backend
        Gaussian privacy map ("classic"/"analytic") and noise sampler.
    model
        Naive Bayes parameters fitted to ``noisy_statistics`` (post-processing).
    """

    schema: NaiveBayesSchema
    rarity: HistogramRarity | None
    threshold: float
    threshold_epsilon: float
    weight_map: str
    gamma: float
    tau: float
    clip: float
    n: int
    sigma: float
    noisy_statistics: np.ndarray
    budget: BudgetSplit
    epsilon: float
    delta: float
    calibration: str
    backend: str
    model: NaiveBayesParameters

    def sample(self, n: int, seed: SeedLike = None) -> pd.DataFrame:
        """``n`` synthetic records from the released model, in the training frame's columns and
        dtypes (post-processing: costs no budget)."""
        return self.model.sample(check_positive_int(n, "n"), seed)

    def _card_details(self) -> list[tuple[str, str]]:
        k, width = np.shape(self.noisy_statistics)
        return [
            ("neighbours", "one record replaced by the null record; the whole release (Theorem 1)"),
            ("released", f"noisy weighted statistics of {self.n} records ({k} labels x {width})"),
            ("weights", f"{self.weight_map} (gamma {self.gamma:g}, tau {self.tau:g})"),
            ("noise", f"Gaussian sigma {self.sigma:.4g} ({self.calibration}), clip {self.clip:g}"),
        ]


def records_argument(n: int | None, m: int | None, owner: str) -> int:
    """The number of records a sampler was asked for: ``n``, or the deprecated alias ``m``.

    In pseudopost ``m`` counts synthetic *datasets*; a sampler of records takes ``n``. ``m=``
    still works for one version, with a :class:`DeprecationWarning`.
    """
    if m is not None:
        if n is not None:
            raise TypeError(f"{owner}() got both 'n' and the deprecated 'm'; pass n only.")
        warnings.warn(
            f"{owner}(m=...) is deprecated: in pseudopost 'm' counts synthetic datasets; pass "
            "the number of records as n=... (the alias is removed in the next version).",
            DeprecationWarning,
            stacklevel=3,
        )
        n = m
    if n is None:
        raise TypeError(f"{owner}() needs 'n', the number of records to draw.")
    return check_positive_int(n, "n")


def next_sample_seed(sample_seed: int, calls: int) -> int | np.random.SeedSequence:
    """The seed of the ``calls``-th draw without a seed: the sample seed itself first, then
    ``SeedSequence((sample_seed, calls))``, independent streams for successive datasets."""
    return sample_seed if calls == 0 else np.random.SeedSequence((sample_seed, calls))


def weighted_statistics(frame, schema: NaiveBayesSchema, weights, clip: float) -> np.ndarray:
    r""":math:`f_w(D) = \frac1n\sum_i w_i\,\mathrm{clip}(\phi(z_i), C)` (eq. 2), shape (K, width),
    of a pandas frame, or of a Dask DataFrame / Parquet path chunked over records
    (:func:`pseudopost.mechanisms.reps.dask.weighted_clipped_statistics`; weights then a Dask array
    chunked like the partitions, a function of a partition, or None for all 1)."""
    from pseudopost._io import is_dask_input

    if is_dask_input(frame):
        from pseudopost.mechanisms.reps.dask import weighted_clipped_statistics

        return weighted_clipped_statistics(frame, schema, weights, clip)
    u, y = schema.encode(frame)
    w = np.ones(len(frame)) if weights is None else weights
    return weighted_clipped_mean(u, y, w, clip, len(schema.classes))


def release_weighted_statistics(
    u: np.ndarray,
    y: np.ndarray,
    weights: np.ndarray,
    *,
    clip: float,
    sigma: float,
    n_classes: int,
    seed: SeedLike = None,
    backend: Backend = "numpy",
) -> np.ndarray:
    r"""Stage 2 (eq. 2): :math:`f_w(D) + N(0, \sigma^2 I)` for encoded records ``u``, labels ``y``.

    Record :math:`i`'s influence is :math:`w_i\min(\|u_i\|, C)/n \le w_i C/n` (Lemma 1); with
    ``sigma`` from :func:`pseudopost.mechanisms.reps.accounting.synthesis_sigma` the release is
    :math:`(\varepsilon_t, \delta_t)`-DP under null-record replacement for any fixed weights.
    """
    stats = weighted_clipped_mean(u, y, weights, clip, n_classes)
    return gaussian_noise(stats, sigma, seed, backend=backend)


def split_feature_types(
    frame: pd.DataFrame,
    label: str,
    features: Sequence[str] | None = None,
    categorical: Sequence[str] | None = None,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(numeric, categorical) features: numeric dtypes unless listed in ``categorical``."""
    check_columns(frame, [label], "frame")
    feats = [c for c in frame.columns if c != label] if features is None else list(features)
    check_columns(frame, feats, "frame")
    if label in feats:
        raise ValueError(f"The label column '{label}' cannot also be a feature.")
    cat_set = set(check_columns(frame, categorical or [], "frame"))
    is_num = [
        c not in cat_set
        and pd.api.types.is_numeric_dtype(frame[c])
        and not pd.api.types.is_bool_dtype(frame[c])
        for c in feats
    ]
    numeric = tuple(c for c, k in zip(feats, is_num, strict=True) if k)
    return numeric, tuple(c for c, k in zip(feats, is_num, strict=True) if not k)


class REPS:
    r"""Risk-equalized private synthesis: DP rarity weights, then a weighted Gaussian NB release.

    Parameters
    ----------
    epsilon
        Total budget :math:`\varepsilon > 0` (Theorem 1: :math:`\varepsilon_s + \varepsilon_t`).
    delta
        Total :math:`\delta \in (0, 1)`; ``None`` means :math:`1/n^2` (section 7.4).
    weight_map
        ``"hinge_exp"`` (:math:`e^{-\gamma(\hat s - t)_+}`), ``"cap"``
        (:math:`\min(1, \tau/(\hat s + \tau))`), ``"targeted"`` (Proposition 1 with
        :math:`\mathcal H = \{\hat s > t\}` capped at ``epsilon_out``) or ``"uniform"``
        (all weights 1; no scoring is run, the scoring share stays unspent).
    gamma
        Hinge-exp sharpness.
    tau
        Cap-map scale; ``None`` uses the threshold :math:`t`.
    percentile
        Threshold :math:`t` as a percentile of the rarity scores (paper: 90).
    threshold
        ``"dp"`` (a DP percentile of the scores, see ``quantile_share``), ``"empirical"`` (raw
        percentile of the training scores, as in the paper; not covered by Lemma 1) or a
        public number.
    quantile_share
        Share :math:`\kappa` of the scoring epsilon spent on the DP threshold (default 0.5).
    epsilon_out
        Per-instance cap for the high-risk set under ``weight_map="targeted"``.
    clip
        :math:`C`; ``None`` uses :math:`\max\|\phi\| = \sqrt{1 + q + 2p}` so clipping never binds.
    scoring_share
        Share of epsilon for Stage 1 (paper: 0.1); delta is halved between the stages. 0 with
        ``weight_map="uniform"`` is the paper's "DP uniform (no scoring)".
    bins, p_min
        Stage-1 histogram bins per numeric column and probability floor.
    calibration
        Gaussian privacy map: ``"classic"`` (paper) or ``"analytic"``.
    scaling, categories
        Public ``{col: (centre, scale)}`` and ``{col: levels}`` (see module notes).
    noise_backend
        ``"numpy"`` (seeded) or ``"opendp"`` (floating-point safe, not reproducible).
    seed
        Seed of every random step of ``fit`` (and the default for ``sample``).

    Attributes
    ----------
    release_ : RepsRelease
        The published record.
    epsilon_, delta_ : float
        Global guarantee (Theorem 1).
    per_instance_epsilon_ : ndarray
        End-to-end bound per training record (Corollary 1 + 2); confidential diagnostic.
    per_instance_epsilon_synthesis_ : ndarray
        Stage-2 part :math:`\varepsilon_{i,t}` (Corollary 2).
    weights_, scores_ : ndarray
        :math:`w_i` and :math:`\hat s_i` (scores ``None`` without scoring).

    Examples
    --------
    >>> from pseudopost.mechanisms.reps.data import simulate_outliers
    >>> task = simulate_outliers(600, seed=1)
    >>> reps = REPS(epsilon=4.0, seed=0).fit(task.frame, label="y")
    >>> reps.sample(5).shape
    (5, 10)
    >>> reps.privacy_statement.epsilon == reps.epsilon_
    True
    """

    _statement_name = "reps"

    def __init__(
        self,
        epsilon: float,
        delta: float | None = None,
        *,
        weight_map: WeightMap = "hinge_exp",
        gamma: float = 4.0,
        tau: float | None = None,
        percentile: float = 90.0,
        threshold: Literal["dp", "empirical"] | float = "dp",
        quantile_share: float = 0.5,
        epsilon_out: float | None = None,
        clip: float | None = None,
        scoring_share: float = 0.1,
        bins: int = 16,
        p_min: float = 1e-4,
        calibration: Literal["classic", "analytic"] = "classic",
        scaling: Mapping[str, tuple[float, float]] | None = None,
        categories: Mapping[str, Sequence] | None = None,
        noise_backend: Backend = "numpy",
        seed: SeedLike = None,
    ) -> None:
        self.epsilon = check_positive(epsilon, "epsilon")
        self.delta = None if delta is None else check_probability(delta, "delta")
        if weight_map not in ("hinge_exp", "cap", "targeted", "uniform"):
            raise ValueError(
                "The 'weight_map' parameter must be one of 'hinge_exp', 'cap', 'targeted', "
                f"'uniform'. Got {weight_map!r}."
            )
        self.weight_map = weight_map
        self.gamma = check_positive(gamma, "gamma", strict=False)
        self.tau = None if tau is None else check_positive(tau, "tau")
        self.percentile = check_in_interval(percentile, "percentile", 0.0, 100.0, closed="neither")
        if not (threshold in ("dp", "empirical") or isinstance(threshold, (int, float))):
            raise ValueError(
                "The 'threshold' parameter must be 'dp', 'empirical' or a number. "
                f"Got {threshold!r}."
            )
        self.threshold = threshold
        self.quantile_share = check_in_interval(
            quantile_share, "quantile_share", 0.0, 1.0, closed="neither"
        )
        if weight_map == "targeted" and epsilon_out is None:
            raise ValueError("weight_map='targeted' needs 'epsilon_out' (the high-risk cap).")
        self.epsilon_out = (
            None if epsilon_out is None else check_positive(epsilon_out, "epsilon_out")
        )
        self.clip = None if clip is None else check_positive(clip, "clip")
        self.scoring_share = check_in_interval(scoring_share, "scoring_share", 0.0, 1.0,
                                               closed="left")  # fmt: skip
        if weight_map != "uniform" and self.scoring_share == 0.0:
            raise ValueError(
                f"weight_map={weight_map!r} needs Stage-1 scores: 'scoring_share' must be > 0."
            )
        self.bins = check_positive_int(bins, "bins", minimum=2)
        self.p_min = check_probability(p_min, "p_min")
        if calibration not in ("classic", "analytic"):
            raise ValueError(
                f"The 'calibration' parameter must be 'classic' or 'analytic'. Got {calibration!r}."
            )
        self.calibration = calibration
        self.scaling = scaling
        self.categories = categories
        if noise_backend not in ("numpy", "opendp"):
            raise ValueError(
                f"The 'noise_backend' parameter must be 'numpy' or 'opendp'. Got {noise_backend!r}."
            )
        self.noise_backend = noise_backend
        self.seed = seed

    # ------------------------------------------------------------------ fit
    def fit(
        self,
        frame: pd.DataFrame,
        label: str,
        *,
        features: Sequence[str] | None = None,
        categorical: Sequence[str] | None = None,
    ) -> REPS:
        """Run Algorithm 1 on ``frame`` (not modified); ``label`` is the class column.

        ``features`` defaults to every other column; numeric dtypes are continuous unless named
        in ``categorical``.
        """
        check_frame(frame, "frame")
        numeric, cats = split_feature_types(frame, label, features, categorical)
        schema = NaiveBayesSchema.from_frame(
            frame, label, numeric, cats, scaling=self.scaling, categories=self.categories
        )
        n = len(frame)
        u, y = schema.encode(frame)  # validates finiteness and labels before any noise
        budget = split_budget(
            self.epsilon, self.delta if self.delta is not None else default_delta(n),
            self.scoring_share,
        )  # fmt: skip
        clip = self.clip if self.clip is not None else schema.max_norm
        self._check_calibration(budget)
        sigma = synthesis_sigma(n, clip, budget.epsilon_t, budget.delta_t, self.calibration)
        s_rarity, s_quant, s_adjust, s_noise, self._sample_seed = spawn_seeds(self.seed, 5)
        self._sample_calls = 0

        # Stage 1: DP rarity scores (section 5.1)
        rarity, scores, t, eps_q = None, None, float("nan"), 0.0
        if self.weight_map != "uniform":
            eps_q = self.quantile_share * budget.epsilon_s if self.threshold == "dp" else 0.0
            rarity = release_histograms(
                frame, numeric=numeric, categorical=cats, epsilon=budget.epsilon_s - eps_q,
                delta=budget.delta_s, bins=self.bins, scaling=dict(zip(numeric, zip(
                    schema.centre, schema.scale, strict=True), strict=True)),
                categories=dict(zip(cats, schema.levels, strict=True)), p_min=self.p_min,
                seed=s_rarity, backend=self.noise_backend,
            )  # fmt: skip
            scores = rarity.score(frame)
            t = self._threshold(rarity, scores, eps_q, s_quant)

        # Stage 1.5: weights (section 5.2)
        weights = self._weights(scores, t, clip, n, sigma, budget)
        weights = self._adjust_weights(weights, scores, t, s_adjust)

        # Stage 2: weighted clipped statistics plus Gaussian noise (eq. 2)
        noisy = release_weighted_statistics(
            u, y, weights, clip=clip, sigma=sigma, n_classes=len(schema.classes),
            seed=s_noise, backend=self.noise_backend,
        )  # fmt: skip
        model = NaiveBayesParameters.from_statistics(noisy, schema)

        # Accounting: Theorem 1, Corollaries 1-2
        eps, delta = compose(budget.epsilon_s, budget.delta_s, budget.epsilon_t, budget.delta_t)
        eps_t_i = weighted_release_epsilon(
            weights, clip=clip, n=n, sigma=sigma, delta=budget.delta_t, method=self.calibration
        )
        self.release_ = RepsRelease(
            schema, rarity, t, eps_q, self.weight_map, self.gamma,
            self._tau(t) if self.weight_map == "cap" else float("nan"),
            clip, n, sigma, noisy, budget, eps, delta, self.calibration, self.noise_backend, model,
        )  # fmt: skip
        self.epsilon_, self.delta_ = eps, delta
        self.weights_, self.scores_ = weights, scores
        self.per_instance_epsilon_synthesis_ = eps_t_i
        self.per_instance_epsilon_ = end_to_end_epsilon(budget.epsilon_s, eps_t_i)
        return self

    def _check_calibration(self, budget: BudgetSplit) -> None:
        """Every classic Gaussian step meets its (epsilon, delta) on the exact curve."""
        if self.weight_map != "uniform":  # Stage-1 histograms: classic, as in the paper
            share = self.quantile_share if self.threshold == "dp" else 0.0
            check_classic_gaussian(
                (1 - share) * budget.epsilon_s, budget.delta_s, "the Stage-1 histograms"
            )
        if self.calibration == "classic":
            check_classic_gaussian(budget.epsilon_t, budget.delta_t, "Stage 2")

    def _threshold(
        self, rarity: HistogramRarity, scores: np.ndarray, epsilon: float, seed: int
    ) -> float:
        if self.threshold == "dp":
            return dp_quantile(
                scores, self.percentile / 100.0, epsilon=epsilon, lower=0.0,
                upper=rarity.max_score, seed=seed, backend=self.noise_backend,
            )  # fmt: skip
        if self.threshold == "empirical":
            return float(np.percentile(scores, self.percentile))
        return float(self.threshold)

    def _tau(self, t: float) -> float:
        return self.tau if self.tau is not None else max(t, 1e-12)

    def _weights(
        self,
        scores: np.ndarray | None,
        t: float,
        clip: float,
        n: int,
        sigma: float,
        budget: BudgetSplit,
    ) -> np.ndarray:
        if self.weight_map == "uniform":
            return np.ones(n)
        if self.weight_map == "hinge_exp":
            return hinge_exp_weights(scores, self.gamma, t)
        if self.weight_map == "cap":
            return cap_weights(scores, self._tau(t))
        tau_out = targeted_clip_share(self.epsilon_out, n=n, sigma=sigma, delta=budget.delta_t)
        return targeted_weights(scores > t, min(tau_out, clip), clip)

    def _adjust_weights(
        self, weights: np.ndarray, scores: np.ndarray | None, threshold: float, seed: int
    ) -> np.ndarray:
        """Hook for the ablations of section 7.3 (identity for REPS itself)."""
        return weights

    def _fitted(self) -> RepsRelease:
        if not hasattr(self, "release_"):
            raise RuntimeError(
                f"This {type(self).__name__} instance is not fitted yet; call fit() first."
            )
        return self.release_

    @property
    def privacy_statement(self) -> PrivacyStatement:
        r"""The release's guarantee: :math:`(\varepsilon_s + \varepsilon_t, \delta_s +
        \delta_t)` (Theorem 1, equal to ``epsilon_`` and ``delta_``) under replacement of one
        record by the null record, for the whole release (every sample is post-processing).

        Global when every weight depends on its own record and DP releases only (Lemma 1);
        "global given the weights" when the threshold is the raw training percentile
        (``threshold="empirical"``). The assumptions name what is taken as public.
        """
        rel = self._fitted()
        scope, weights_note = self._weights_scope()
        return PrivacyStatement(
            mechanism=self._statement_name,
            epsilon=self.epsilon_,
            delta=self.delta_,
            neighbouring=REPLACE_WITH_NULL,
            scope=scope,
            unit="release",
            assumptions=(
                "n is public",
                *self._public_schema(rel.schema),
                *weights_note,
                *(
                    ()
                    if self.noise_backend == "opendp"
                    else (
                        "exact Gaussian noise (NumPy's floating-point sampler is not hardened "
                        "against floating-point attacks; noise_backend='opendp' is)",
                    )
                ),
            ),
            source="REPS (Asiaee et al.), Algorithm 1; Theorem 1, Lemma 1, Proposition 1",
        )

    def _weights_scope(self) -> tuple[str, tuple[str, ...]]:
        """(scope, assumptions) of the weighting step (Lemma 1's condition)."""
        if self.weight_map == "uniform":
            return "global", ()
        if self.threshold == "empirical":
            return "global given the weights", (
                "the weights are treated as fixed: threshold='empirical' is the raw percentile of "
                "the training scores, so each w_i depends on every record and Lemma 1 does not "
                "cover the weighting",
            )
        if self.threshold == "dp":
            return "global", ()
        return "global", (f"the threshold t = {float(self.threshold):g} is public",)

    def _public_schema(self, schema: NaiveBayesSchema) -> tuple[str, ...]:
        """What the encoding takes as public and where it came from."""
        out = []
        given = set(self.scaling or ())
        read = [c for c in schema.numeric if c not in given]
        if read:
            out.append(f"the standardisation (mean, sd) of {read} read from the data is public")
        given = set(self.categories or ())
        read = [c for c in (schema.label, *schema.categorical) if c not in given]
        if read:
            out.append(f"the classes/levels of {read} read from the data are public")
        return tuple(out)

    # ------------------------------------------------------------------ sample
    def sample(
        self, n: int | None = None, seed: SeedLike = None, *, m: int | None = None
    ) -> pd.DataFrame:
        """Draw ``n`` synthetic records from the released model (post-processing).

        Columns and dtypes are those of the training frame. ``seed=None`` continues the fit
        seed's stream: the k-th call without a seed draws from ``(sample seed, k)``, so the same
        fit seed gives the same sequence of datasets and successive calls differ. ``m`` is a
        deprecated alias of ``n`` (in pseudopost ``m`` counts datasets).
        """
        rel = self._fitted()
        n = records_argument(n, m, f"{type(self).__name__}.sample")
        if seed is None:
            seed = next_sample_seed(self._sample_seed, self._sample_calls)
            self._sample_calls += 1
        return rel.sample(n, seed)
