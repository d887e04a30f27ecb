r"""Stage 1 of REPS: DP histogram rarity scores (Asiaee et al., section 5.1 and appendix B.2).

For each of the :math:`d` feature columns, release the bin counts with Gaussian noise, all
:math:`d` histograms jointly as one vector of length :math:`\sum_j B_j`:

.. math:: \tilde c_{j,b} = c_{j,b}(D) + \eta_{j,b}, \qquad \eta \sim N(0, \sigma_s^2 I),
          \qquad \sigma_s = \sqrt{d}\,\sqrt{2\ln(1.25/\delta_s)}/\varepsilon_s .

Continuous columns are standardised, clipped to :math:`[-3, 3]` and cut into 16 uniform bins;
categorical columns keep their exact levels. The rarity score of a record is

.. math:: \hat s(z) = -\sum_{j=1}^d \log \max(\tilde p_{j,\mathrm{bin}_j(z)}, p_{\min}),
          \qquad \tilde p_{j,b} = \max(\tilde c_{j,b}, 0) /
          \textstyle\sum_{b'} \max(\tilde c_{j,b'}, 0).

Privacy. Neighbouring relation: one record replaced by the null record :math:`\perp` (the
paper's padding convention, section 3.1; equivalently add/remove with public :math:`n`). A
record adds 1 to exactly one bin of each column (0 if a categorical value is outside the
declared levels), so the L2 sensitivity of the joint vector is :math:`\sqrt d` and the release is
:math:`(\varepsilon_s, \delta_s)`-DP. (Under swap/replace-one the sensitivity would be
:math:`\sqrt{2d}`.)

What the accounting assumes is public: the column types, the categorical levels and the
standardisation (centre, scale) of each continuous column. Pass them as ``categories`` and
``scaling``; if omitted they are read from the data, as the paper does (appendix B.1), and that
read is **not** covered by the DP guarantee.

The released object is :class:`HistogramRarity`, a frozen record of the noisy counts. Scores of
any record are post-processing of it; the per-record scores of the *training* records are
functions of confidential data and are not part of the release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pseudopost._rng import SeedLike
from pseudopost._validation import (
    check_columns,
    check_finite_numeric,
    check_frame,
    check_positive,
    check_positive_int,
    check_probability,
)
from pseudopost.privacy.noise import Backend, gaussian_noise, gaussian_sigma, laplace_noise

__all__ = [
    "HistogramRarity",
    "dp_quantile",
    "release_histograms",
    "resolve_levels",
    "resolve_scaling",
]


def resolve_scaling(
    frame: pd.DataFrame, numeric: Sequence[str], scaling: Mapping[str, tuple[float, float]] | None
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Centre and scale per numeric column: the public ``scaling`` or the frame's mean and sd."""
    values = check_finite_numeric(frame, numeric)
    centre, scale = [], []
    for c in numeric:
        if scaling is not None and c in scaling:
            m, s = scaling[c]
            check_positive(s, f"scaling[{c!r}] scale")
        else:
            m, s = float(values[c].mean()), float(values[c].std())
            s = s if s > 0 else 1.0
        centre.append(float(m))
        scale.append(float(s))
    return tuple(centre), tuple(scale)


def resolve_levels(
    frame: pd.DataFrame, categorical: Sequence[str], categories: Mapping[str, Sequence] | None
) -> tuple[tuple[str, ...], ...]:
    """Levels per categorical column (as strings): the public ``categories`` or those observed."""
    out = []
    for c in categorical:
        if frame[c].isna().any():
            raise ValueError(
                f"Categorical column '{c}' has {int(frame[c].isna().sum())} missing value(s); "
                "drop them or fill them with an explicit level first."
            )
        if categories is not None and c in categories:
            levels = tuple(str(v) for v in categories[c])
        else:
            levels = tuple(sorted(frame[c].astype(str).unique()))
        if len(levels) == 0:
            raise ValueError(f"Categorical column '{c}' has no levels.")
        out.append(levels)
    return tuple(out)


@dataclass(frozen=True)
class HistogramRarity:
    """The Stage-1 release: noisy per-column histograms, and how records map to their bins.

    Attributes
    ----------
    numeric, categorical
        Column names; histograms are ordered numeric first, then categorical.
    centre, scale, bound, bins
        Standardisation of numeric columns, the clip bound (3) and bins per numeric column (16).
    levels
        Levels of each categorical column.
    noisy_counts
        One array of noisy counts per column.
    sigma, sensitivity, epsilon, delta
        Noise standard deviation, L2 sensitivity :math:`\\sqrt d`, and the DP budget spent.
    p_min
        Floor on probabilities inside the score's logarithm.
    backend
        Noise sampler used (``"numpy"`` reproducible, ``"opendp"`` floating-point safe).
    """

    numeric: tuple[str, ...]
    categorical: tuple[str, ...]
    centre: tuple[float, ...]
    scale: tuple[float, ...]
    bound: float
    bins: int
    levels: tuple[tuple[str, ...], ...]
    noisy_counts: tuple[np.ndarray, ...]
    sigma: float
    sensitivity: float
    epsilon: float
    delta: float
    p_min: float
    backend: str

    @property
    def columns(self) -> tuple[str, ...]:
        return self.numeric + self.categorical

    @property
    def probabilities(self) -> tuple[np.ndarray, ...]:
        r""":math:`\tilde p_{j,\cdot}`: clamped, normalised noisy counts (uniform if all <= 0)."""
        out = []
        for c in self.noisy_counts:
            pos = np.maximum(c, 0.0)
            tot = pos.sum()
            out.append(pos / tot if tot > 0 else np.full(c.size, 1.0 / c.size))
        return tuple(out)

    def bin_indices(self, frame: pd.DataFrame) -> np.ndarray:
        """``(n, d)`` bin index of each record in each column; -1 for a level outside ``levels``."""
        check_columns(frame, self.columns, "frame")
        values = check_finite_numeric(frame, self.numeric)
        idx = np.empty((len(frame), len(self.columns)), dtype=np.int64)
        for j, c in enumerate(self.numeric):
            z = np.clip((values[c] - self.centre[j]) / self.scale[j], -self.bound, self.bound)
            b = np.floor((z + self.bound) / (2 * self.bound) * self.bins).astype(np.int64)
            idx[:, j] = np.minimum(b, self.bins - 1)
        for k, c in enumerate(self.categorical):
            codes = pd.Index(self.levels[k]).get_indexer(frame[c].astype(str))
            idx[:, len(self.numeric) + k] = codes
        return idx

    @property
    def max_score(self) -> float:
        r"""Largest possible score, :math:`d\log(1/p_{\min})` (public)."""
        return len(self.columns) * float(-np.log(self.p_min))

    def _log_terms(self) -> list[np.ndarray]:
        return [-np.log(np.maximum(p, self.p_min)) for p in self.probabilities]

    def score(self, frame: pd.DataFrame) -> np.ndarray:
        r"""Rarity score :math:`\hat s` of each row of ``frame`` (post-processing)."""
        idx = self.bin_indices(frame)
        s = np.zeros(len(frame))
        floor = -np.log(self.p_min)
        for j, terms in enumerate(self._log_terms()):
            col = idx[:, j]
            s += np.where(col >= 0, terms[np.maximum(col, 0)], floor)
        return s


def dp_quantile(
    values: np.ndarray,
    q: float,
    *,
    epsilon: float,
    lower: float,
    upper: float,
    n: int | None = None,
    n_candidates: int = 256,
    seed: SeedLike = None,
    backend: Backend = "numpy",
) -> float:
    r"""An :math:`\varepsilon`-DP ``q``-quantile of ``values`` by report-noisy-max.

    Candidates :math:`c_k` are ``n_candidates`` evenly spaced points of the public interval
    [``lower``, ``upper``]; the utility of :math:`c_k` is
    :math:`u_k = -|\#\{i : v_i \le c_k\} - q n|`, and the release is
    :math:`\arg\max_k u_k + \text{Lap}(2/\varepsilon)` (Dwork & Roth 2014, section 3.3:
    report-noisy-max with scale :math:`2\Delta_u/\varepsilon` is :math:`\varepsilon`-DP for
    any utility of sensitivity :math:`\Delta_u`). Neighbouring relation: one value replaced by
    the null record (which holds no value) with public ``n`` (default ``len(values)``), so each
    count, hence each utility, moves by at most :math:`\Delta_u = 1`. Used for the hinge
    threshold :math:`t` of REPS on rarity scores, whose range :math:`[0, d\log(1/p_{\min})]`
    is public. The Laplace draws go through :func:`pseudopost.privacy.noise.laplace_noise`.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or not np.isfinite(v).all():
        raise ValueError("The 'values' argument must be a 1-d array of finite numbers.")
    q = check_probability(q, "q")
    eps = check_positive(epsilon, "epsilon")
    if not (np.isfinite(lower) and np.isfinite(upper) and lower < upper):
        raise ValueError(f"Need finite lower < upper. Got lower={lower!r}, upper={upper!r}.")
    n = len(v) if n is None else check_positive_int(n, "n")
    cand = np.linspace(lower, upper, check_positive_int(n_candidates, "n_candidates", minimum=2))
    counts = np.searchsorted(np.sort(v), cand, side="right")
    utility = -np.abs(counts - q * n)
    noisy = laplace_noise(utility, 2.0 / eps, seed, backend=backend)
    return float(cand[int(np.argmax(noisy))])


def release_histograms(
    frame: pd.DataFrame,
    *,
    numeric: Sequence[str],
    categorical: Sequence[str],
    epsilon: float,
    delta: float,
    bins: int = 16,
    bound: float = 3.0,
    scaling: Mapping[str, tuple[float, float]] | None = None,
    categories: Mapping[str, Sequence] | None = None,
    p_min: float = 1e-4,
    seed: SeedLike = None,
    backend: Backend = "numpy",
) -> HistogramRarity:
    r"""Release all :math:`d` histograms jointly with Gaussian noise (section 5.1, appendix B.2).

    Parameters
    ----------
    frame
        Training records (one row each); not modified.
    numeric, categorical
        Feature columns to histogram; :math:`d` is their total number.
    epsilon, delta
        Stage-1 budget :math:`(\varepsilon_s, \delta_s)`; the noise is
        :math:`\sigma_s = \sqrt d \sqrt{2\ln(1.25/\delta_s)}/\varepsilon_s` (classic Gaussian
        calibration, Dwork & Roth Thm A.1, as in the paper).
    bins, bound
        Uniform bins over :math:`[-\text{bound}, \text{bound}]` for standardised numeric columns.
    scaling, categories
        Public standardisation ``{col: (centre, scale)}`` and levels ``{col: levels}``; columns
        left out are read from ``frame`` (not covered by the DP guarantee, see module notes).
    p_min
        Probability floor inside the score's logarithm.
    seed, backend
        Randomness and noise sampler (:func:`pseudopost.privacy.noise.gaussian_noise`).

    Returns
    -------
    HistogramRarity
        The frozen release; ``.score(frame)`` gives :math:`\hat s_i`.
    """
    check_frame(frame, "frame")
    numeric, categorical = tuple(numeric), tuple(categorical)
    check_columns(frame, numeric + categorical, "frame")
    d = len(numeric) + len(categorical)
    if d == 0:
        raise ValueError("At least one numeric or categorical column is needed for rarity scoring.")
    eps = check_positive(epsilon, "epsilon")
    dl = check_probability(delta, "delta")
    bins = check_positive_int(bins, "bins", minimum=2)
    bound = check_positive(bound, "bound")
    p_min = check_probability(p_min, "p_min")
    centre, scale = resolve_scaling(frame, numeric, scaling)
    levels = resolve_levels(frame, categorical, categories)
    sensitivity = float(np.sqrt(d))
    sigma = gaussian_sigma(sensitivity, eps, dl)
    skeleton = HistogramRarity(
        numeric, categorical, centre, scale, bound, bins, levels,
        (), sigma, sensitivity, eps, dl, p_min, backend,
    )  # fmt: skip
    idx = skeleton.bin_indices(frame)
    sizes = [bins] * len(numeric) + [len(lv) for lv in levels]
    counts = [np.bincount(idx[idx[:, j] >= 0, j], minlength=b) for j, b in enumerate(sizes)]
    noisy = gaussian_noise(np.concatenate(counts).astype(float), sigma, seed, backend=backend)
    split = tuple(np.split(noisy, np.cumsum(sizes)[:-1]))
    return HistogramRarity(
        numeric, categorical, centre, scale, bound, bins, levels,
        split, sigma, sensitivity, eps, dl, p_min, backend,
    )  # fmt: skip
