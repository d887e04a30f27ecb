r"""Membership inference against a synthetic dataset, stratified by outlier decile.

Threat model (REPS paper, section 7.1 and appendix B.4): the attacker holds the synthetic data,
a reference sample of non-members, and candidate records; members are the training records,
non-members the held-out test records. Two attacks score each candidate (higher = "member"):

* ``"distance"``: :math:`-\min_{\tilde z \in \tilde D} \|z - \tilde z\|` (closer to the
  synthetic data means member).
* ``"domias"`` (DOMIAS-style, van Breugel et al. 2023, as simplified in the paper):
  :math:`\bar d_k(z, R) / \bar d_k(z, \tilde D)`, the ratio of the mean distance to the
  :math:`k = 5` nearest reference records to that to the :math:`k` nearest synthetic records
  (a high ratio means the synthetic data are locally denser than the population: overfitting).

Success is :math:`\text{AUC}` and the advantage :math:`|2\,\text{AUC} - 1|` (Yeom et al. 2018).
Stratified: candidates (members and non-members pooled) are cut into deciles of their k-NN outlier
score (mean distance to the :math:`k = 10` nearest reference records in standardised feature
space, own row left out, so that members and non-members are scored against the same sample);
the advantage is computed within each decile. Reported: overall, per decile, top decile, the
median of the ten per-decile advantages, and top / median.

When no separate reference set is given the test records serve as the reference (as in the
paper), and each test candidate's own row is left out of its reference neighbours: otherwise a
non-member would find itself at distance 0 and the attack would be scored on an artefact.

Features: all columns the frames share (or ``features``); numerics standardised and categoricals
one-hot by :class:`~pseudopost.evaluate._features.FeatureEncoder` fitted on the reference only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from sklearn.metrics import roc_auc_score
from sklearn.neighbors import NearestNeighbors

from pseudopost._validation import check_positive_int
from pseudopost.evaluate._features import FeatureEncoder, infer_feature_types, shared_features
from pseudopost.evaluate.outliers import decile_labels, mean_knn_distance

__all__ = [
    "MembershipResult",
    "advantage",
    "decile_advantages",
    "distance_attack_scores",
    "domias_attack_scores",
    "membership_inference",
    "run_attacks",
]

Attack = Literal["distance", "domias"]


@dataclass(frozen=True)
class MembershipResult:
    """Outcome of :func:`membership_inference`.

    ``decile_advantage[g]`` is the advantage within outlier decile ``g + 1`` (``nan`` if a decile
    lacks members or non-members); ``scores`` and ``is_member`` are per candidate (train rows
    first, then test rows); ``outlier_scores`` the stratification scores in the same order.
    """

    attack: str
    auc: float
    advantage: float
    decile_advantage: np.ndarray
    top_decile_advantage: float
    median_decile_advantage: float
    top_median_ratio: float
    scores: np.ndarray
    is_member: np.ndarray
    outlier_scores: np.ndarray


def advantage(auc: float) -> float:
    """Membership advantage :math:`|2\\,\\text{AUC} - 1|`."""
    return float(abs(2.0 * auc - 1.0))


def distance_attack_scores(candidates: np.ndarray, synthetic: np.ndarray) -> np.ndarray:
    """Negative distance of each candidate to its nearest synthetic record."""
    dist, _ = NearestNeighbors(n_neighbors=1).fit(synthetic).kneighbors(candidates)
    return -dist[:, 0]


def domias_attack_scores(
    candidates: np.ndarray,
    synthetic: np.ndarray,
    reference: np.ndarray,
    k: int = 5,
    *,
    self_in_reference: np.ndarray | None = None,
) -> np.ndarray:
    r"""DOMIAS-style ratio :math:`\bar d_k(z, R) / \bar d_k(z, \tilde D)` per candidate.

    ``self_in_reference`` marks candidates that are themselves rows of ``reference``; their own
    zero distance is dropped from their reference neighbours.
    """
    k = check_positive_int(k, "k")
    d_syn = mean_knn_distance(candidates, synthetic, k)
    d_ref = mean_knn_distance(candidates, reference, k)
    if self_in_reference is not None and self_in_reference.any():
        inside = np.flatnonzero(self_in_reference)
        d_ref[inside] = mean_knn_distance(candidates[inside], reference, k, exclude_self=True)
    tiny = 1e-12
    return (d_ref + tiny) / (d_syn + tiny)


def _auc(scores: np.ndarray, is_member: np.ndarray) -> float:
    if is_member.all() or not is_member.any():
        return float("nan")
    return float(roc_auc_score(is_member, scores))


def decile_advantages(
    scores: np.ndarray, is_member: np.ndarray, outlier_scores: np.ndarray, n_groups: int = 10
) -> np.ndarray:
    """Advantage within each outlier group (1 = least outlying); ``nan`` where undefined."""
    groups = decile_labels(outlier_scores, n_groups)
    out = np.full(n_groups, np.nan)
    for g in range(1, n_groups + 1):
        sel = groups == g
        auc = _auc(scores[sel], is_member[sel])
        out[g - 1] = advantage(auc) if np.isfinite(auc) else np.nan
    return out


def run_attacks(
    train: pd.DataFrame,
    test: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    attacks: Sequence[Attack] = ("distance", "domias"),
    reference: pd.DataFrame | None = None,
    k: int = 5,
    by_decile: bool = True,
    outlier_k: int = 10,
    outlier_scores: np.ndarray | None = None,
    features: Sequence[str] | None = None,
) -> dict[str, MembershipResult]:
    """Several attacks sharing one neighbour search; see :func:`membership_inference`.

    Returns ``{attack: MembershipResult}``.
    """
    for a in attacks:
        if a not in ("distance", "domias"):
            raise ValueError(f"Each attack must be 'distance' or 'domias'. Got {a!r}.")
    k = check_positive_int(k, "k")
    outlier_k = check_positive_int(outlier_k, "outlier_k")
    ref = test if reference is None else reference
    cols = shared_features(train, test, synthetic, ref, features=features)
    enc = FeatureEncoder(*infer_feature_types(ref, cols)).fit(ref)
    pool = pd.concat([train[cols], test[cols]], ignore_index=True)
    x_pool, x_syn, x_ref = enc.transform(pool), enc.transform(synthetic), enc.transform(ref)
    is_member = np.r_[np.ones(len(train), bool), np.zeros(len(test), bool)]
    # one search against the synthetic data, one against the reference (own row dropped)
    d_syn = _sorted_knn(x_pool, x_syn, k)
    need_ref = "domias" in attacks or (by_decile and outlier_scores is None)
    if need_ref:
        own = ~is_member if reference is None else np.zeros(len(pool), bool)
        d_ref = _sorted_knn(x_pool, x_ref, max(k, outlier_k) + 1)
        d_ref = np.where(own[:, None], d_ref[:, 1:], d_ref[:, :-1])  # drop self / the extra one
    if by_decile and outlier_scores is None:
        outlier_scores = d_ref[:, :outlier_k].mean(axis=1)
    elif outlier_scores is not None:
        outlier_scores = np.asarray(outlier_scores, dtype=float)
        if outlier_scores.shape != (len(pool),):
            raise ValueError(
                f"'outlier_scores' must have one value per train and test row ({len(pool)}). "
                f"Got shape {outlier_scores.shape}."
            )
    else:
        outlier_scores = np.zeros(0)
    out = {}
    for a in attacks:
        if a == "distance":
            scores = -d_syn[:, 0]
        else:
            scores = (d_ref[:, :k].mean(axis=1) + 1e-12) / (d_syn[:, :k].mean(axis=1) + 1e-12)
        out[a] = _result(a, scores, is_member, outlier_scores, by_decile)
    return out


def _sorted_knn(queries: np.ndarray, points: np.ndarray, k: int) -> np.ndarray:
    kk = min(k, points.shape[0])
    dist, _ = NearestNeighbors(n_neighbors=kk).fit(points).kneighbors(queries)
    return dist


def _result(
    attack: str,
    scores: np.ndarray,
    is_member: np.ndarray,
    outlier_scores: np.ndarray,
    by_decile: bool,
) -> MembershipResult:
    auc = _auc(scores, is_member)
    if by_decile:
        dec = decile_advantages(scores, is_member, outlier_scores)
        top, med = float(dec[-1]), float(np.nanmedian(dec))
        ratio = top / med if med > 0 else float("nan")
    else:
        dec, top, med, ratio = np.full(10, np.nan), float("nan"), float("nan"), float("nan")
    return MembershipResult(
        attack, auc, advantage(auc), dec, top, med, ratio, scores, is_member, outlier_scores
    )


def membership_inference(
    train: pd.DataFrame,
    test: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    reference: pd.DataFrame | None = None,
    attack: Attack = "domias",
    k: int = 5,
    by_decile: bool = True,
    outlier_k: int = 10,
    outlier_scores: np.ndarray | None = None,
    features: Sequence[str] | None = None,
) -> MembershipResult:
    """Run one membership-inference attack on ``synthetic`` (mechanism-agnostic).

    Parameters
    ----------
    train
        Members: the records the synthesizer was trained on.
    test
        Non-members drawn from the same population.
    synthetic
        The released synthetic records.
    reference
        The attacker's non-member sample; ``None`` uses ``test`` (each test candidate's own row
        left out of its reference neighbours). The feature encoder is fitted on it.
    attack
        ``"distance"`` or ``"domias"``.
    k
        Neighbours of the DOMIAS ratio (paper: 5).
    by_decile, outlier_k
        Stratify by outlier decile: a candidate's outlier score is its mean distance to its
        ``outlier_k`` (paper: 10) nearest reference records (own row left out), so members and
        non-members are scored against the same sample.
    outlier_scores
        Precomputed stratification scores for ``concat(train, test)``, e.g. to use another
        oracle such as :func:`pseudopost.evaluate.outliers.knn_outlier_scores`.
    features
        Columns to attack on; default all columns shared by the frames.

    Returns
    -------
    MembershipResult
    """
    if attack not in ("distance", "domias"):
        raise ValueError(f"The 'attack' parameter must be 'distance' or 'domias'. Got {attack!r}.")
    return run_attacks(
        train, test, synthetic, attacks=(attack,), reference=reference, k=k,
        by_decile=by_decile, outlier_k=outlier_k, outlier_scores=outlier_scores,
        features=features,
    )[attack]  # fmt: skip
