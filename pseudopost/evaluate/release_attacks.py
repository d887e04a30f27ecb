r"""Attacks on released statistics: membership inference and linkage (REAEDP §V-J, Fig. 7).

Both attacks play the distinguishing game behind differential privacy: the adversary knows two
neighbouring datasets :math:`D_{\text{in}}` (with the target record) and :math:`D_{\text{out}}`
(without it, or with it replaced) and sees a release from one of them.

* Membership inference (Fig. 7, left and middle): features of the release (by default the
  paper's pair: Shannon entropy of the released counts and their total) feed a logistic
  regression trained on labelled releases from both datasets; accuracy and AUC are measured on
  held-out releases, repeated with fresh seeds, mean and 95% t-interval over the repeats.
* Linkage-style attack (Fig. 7, right): the adversary holds a reference for each candidate
  (the exact counts, or an independent release) and guesses the one closer in L2 to the
  release; accuracy with a 95% Clopper-Pearson interval.

For an :math:`(\varepsilon, \delta)`-DP release and balanced classes, *every* attack has accuracy
at most :math:`(e^\varepsilon + \delta)/(1 + e^\varepsilon)` (:func:`dp_accuracy_bound`: from
:math:`\mathrm{TPR} \le e^\varepsilon\mathrm{FPR} + \delta` and the same for the complements),
which is the reference line the measured accuracies are compared with.

These attacks read releases only; the datasets given are the adversary's assumed knowledge.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from pseudopost._rng import SeedLike, spawn_seeds
from pseudopost._validation import check_in_interval, check_positive_int
from pseudopost.privacy.audit import clopper_pearson
from pseudopost.privacy.entropy import shannon_entropy

__all__ = [
    "LinkageResult",
    "ReleaseMembershipResult",
    "dp_accuracy_bound",
    "histogram_features",
    "linkage_attack",
    "release_membership_inference",
]

Release = Callable[[Any, SeedLike], np.ndarray]


def dp_accuracy_bound(epsilon: float, delta: float = 0.0) -> float:
    r"""Largest balanced accuracy of any attack on an :math:`(\varepsilon,\delta)`-DP release.

    :math:`(e^\varepsilon + \delta)/(1 + e^\varepsilon)`, reached at
    :math:`\mathrm{FPR} = (1-\delta)/(1+e^\varepsilon)`.
    """
    e = check_in_interval(epsilon, "epsilon", 0.0, np.inf, closed="left")
    d = check_in_interval(delta, "delta", 0.0, 1.0, closed="both")
    return float(min(1.0, (np.exp(e) + d) / (1.0 + np.exp(e))))


def histogram_features(counts: np.ndarray) -> np.ndarray:
    """The paper's MIA features of a released histogram: (Shannon entropy, total count)."""
    c = np.clip(np.asarray(counts, dtype=float), 0.0, None)
    h = shannon_entropy(c) if c.sum() > 0 else 0.0
    return np.array([h, c.sum()])


@dataclass(frozen=True)
class ReleaseMembershipResult:
    """Membership inference on releases: per-repeat scores, their mean and 95% t-interval."""

    accuracy: float
    accuracy_ci: tuple[float, float]
    auc: float
    auc_ci: tuple[float, float]
    accuracies: np.ndarray
    aucs: np.ndarray
    n_releases: int


@dataclass(frozen=True)
class LinkageResult:
    """Linkage-style attack: accuracy of the closer-reference guess, 95% Clopper-Pearson."""

    accuracy: float
    accuracy_ci: tuple[float, float]
    n_trials: int


def _t_interval(values: np.ndarray) -> tuple[float, float]:
    m, r = float(values.mean()), values.size
    half = float(stats.t.ppf(0.975, r - 1) * values.std(ddof=1) / np.sqrt(r))
    return m - half, m + half


def _outputs(release: Release, data: Any, seeds: list[int]) -> np.ndarray:
    return np.array([np.asarray(release(data, s), dtype=float).ravel() for s in seeds])


def release_membership_inference(
    release: Release,
    data_in: Any,
    data_out: Any,
    *,
    features: Callable[[np.ndarray], np.ndarray] = histogram_features,
    n_releases: int = 200,
    n_repeats: int = 5,
    train_fraction: float = 0.5,
    seed: SeedLike = None,
) -> ReleaseMembershipResult:
    """Logistic-regression membership inference on features of releases (Fig. 7).

    Parameters
    ----------
    release
        ``release(data, seed) -> array``: the mechanism under attack (e.g.
        ``lambda d, s: EntropyHistogram(...).release(d, s).counts``).
    data_in, data_out
        The neighbouring datasets with and without the target.
    features
        Map from one release to a feature vector (default :func:`histogram_features`).
    n_releases
        Releases drawn from *each* dataset per repeat.
    n_repeats
        Independent repeats (fresh releases, fresh split); at least 2 for the interval.
    train_fraction
        Share of the releases used to fit the classifier; the rest measure accuracy and AUC.
    """
    n_releases = check_positive_int(n_releases, "n_releases", minimum=4)
    n_repeats = check_positive_int(n_repeats, "n_repeats", minimum=2)
    check_in_interval(train_fraction, "train_fraction", 0.0, 1.0, closed="neither")
    if not callable(release) or not callable(features):
        raise TypeError("The 'release' and 'features' arguments must be callables.")
    accs, aucs = [], []
    for rep_seed in spawn_seeds(seed, n_repeats):
        seeds = spawn_seeds(rep_seed, 2 * n_releases + 1)
        x_in = np.array([features(o) for o in _outputs(release, data_in, seeds[:n_releases])])
        x_out = np.array([features(o) for o in _outputs(release, data_out, seeds[n_releases:-1])])
        x = np.vstack([x_in, x_out])
        y = np.r_[np.ones(n_releases), np.zeros(n_releases)]
        order = np.random.default_rng(seeds[-1]).permutation(y.size)
        n_train = max(2, round(train_fraction * y.size))
        train, test = order[:n_train], order[n_train:]
        if np.unique(y[train]).size < 2 or np.unique(y[test]).size < 2:
            raise ValueError("Too few releases: the train/test split lost a class.")
        clf = make_pipeline(StandardScaler(), LogisticRegression())
        clf.fit(x[train], y[train])
        accs.append(float((clf.predict(x[test]) == y[test]).mean()))
        aucs.append(float(roc_auc_score(y[test], clf.predict_proba(x[test])[:, 1])))
    a, u = np.array(accs), np.array(aucs)
    return ReleaseMembershipResult(
        accuracy=float(a.mean()),
        accuracy_ci=_t_interval(a),
        auc=float(u.mean()),
        auc_ci=_t_interval(u),
        accuracies=a,
        aucs=u,
        n_releases=n_releases,
    )


def linkage_attack(
    release: Release,
    data_in: Any,
    data_out: Any,
    reference_in: np.ndarray,
    reference_out: np.ndarray,
    *,
    n_trials: int = 500,
    seed: SeedLike = None,
) -> LinkageResult:
    """Guess which candidate produced a release by the closer reference in L2 (Fig. 7, right).

    Half the trials release ``data_in``, half ``data_out``; ties count as wrong.
    """
    n_trials = check_positive_int(n_trials, "n_trials", minimum=2)
    if not callable(release):
        raise TypeError("The 'release' argument must be a callable.")
    r_in = np.asarray(reference_in, dtype=float).ravel()
    r_out = np.asarray(reference_out, dtype=float).ravel()
    if r_in.shape != r_out.shape:
        raise ValueError(
            f"'reference_in' and 'reference_out' must have the same shape. Got {r_in.shape} "
            f"and {r_out.shape}."
        )
    seeds = spawn_seeds(seed, n_trials)
    half = n_trials // 2
    correct = 0
    for i, s in enumerate(seeds):
        is_in = i < half
        out = np.asarray(release(data_in if is_in else data_out, s), dtype=float).ravel()
        if out.shape != r_in.shape:
            raise ValueError(f"A release has shape {out.shape}; references have {r_in.shape}.")
        d_in, d_out = np.linalg.norm(out - r_in), np.linalg.norm(out - r_out)
        correct += int(d_in < d_out) if is_in else int(d_out < d_in)
    lo, hi = clopper_pearson(correct, n_trials, 0.025)
    return LinkageResult(accuracy=correct / n_trials, accuracy_ci=(lo, hi), n_trials=n_trials)
