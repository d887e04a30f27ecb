r"""Entropy-calibrated histogram release (REAEDP, Algorithm 1 lines 2-5, Theorem 3).

Two releases, each an :math:`(\varepsilon, \delta)`-DP measurement with its own budget (run
both and they compose to :math:`(\varepsilon_1 + \varepsilon_2, \delta_1 + \delta_2)`, Theorem 1):

1. :meth:`EntropyHistogram.release`: the bin counts :math:`c \in \mathbb{N}^K` plus Laplace or
   Gaussian noise, clipped at zero (post-processing), with the Shannon entropy of the released
   counts (post-processing, free). Sensitivity of the count vector:

   ============  ==========================  ==========================
   neighbours    :math:`\Delta_1` (Laplace)  :math:`\Delta_2` (Gaussian)
   ============  ==========================  ==========================
   replace-one   2                           :math:`\sqrt 2`
   add/remove    1                           1
   ============  ==========================  ==========================

   Laplace: :math:`\tilde c_i = c_i + \mathrm{Lap}(\Delta_1/\varepsilon)`, pure
   :math:`\varepsilon`-DP. Algorithm 1 line 4 uses :math:`\mathrm{Lap}(1/\varepsilon)`, which is
   right for add/remove but only :math:`2\varepsilon`-DP under the replace-one relation that
   Theorem 3 uses; the scale here follows the relation chosen. Gaussian: :math:`\sigma` from
   :func:`~pseudopost.privacy.noise.gaussian_sigma` (analytic by default; the classic formula
   is refused where the exact curve shows it does not deliver its budget).
2. :meth:`EntropyHistogram.release_entropy`: the entropy itself,
   :math:`H(c) + \mathrm{Lap}(\Delta_H/\varepsilon)` (or Gaussian), with :math:`\Delta_H` the
   Theorem 3 bound (eq. 4) at the public :math:`n`, or the Rényi bound of
   :func:`~pseudopost.privacy.entropy.renyi_entropy_sensitivity`; replace-one only (the bounds
   need :math:`n` fixed and public). The result is clipped to :math:`[0, \log_2 K]`.

Bin edges are fixed before seeing the data (``bins`` edges, or ``bins`` and public ``bounds``, or
integer category codes :math:`0..K-1`): data-dependent edges would leak. Values outside
``bounds`` are counted in the end bins, so every record is counted once.

Each release carries its ``privacy_statement``: global :math:`(\varepsilon, \delta)` for that
one release under the relation it was calibrated for (replace-one with :math:`n` public, or
add/remove for counts), the bins taken as public.

:meth:`EntropyHistogram.utility` compares a release with the confidential counts (entropy before
and after, absolute entropy error, count MAE): it reads the confidential data and is for
evaluation only, never for publication.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from pseudopost._cards import ReleaseCard
from pseudopost._rng import SeedLike, as_generator
from pseudopost._validation import check_positive, check_positive_int, check_probability
from pseudopost.privacy.entropy import (
    renyi_entropy,
    renyi_entropy_sensitivity,
    shannon_entropy,
    shannon_entropy_sensitivity,
)
from pseudopost.privacy.noise import (
    Backend,
    check_classic_gaussian,
    gaussian_noise,
    gaussian_sigma,
    laplace_noise,
    laplace_scale,
)
from pseudopost.privacy.statement import ADD_REMOVE, REPLACE_ONE, PrivacyStatement

__all__ = [
    "EntropyHistogram",
    "EntropyRelease",
    "HistogramRelease",
    "HistogramUtility",
    "count_sensitivity",
    "synthetic_counts",
]

Mechanism = Literal["laplace", "gaussian"]
Neighbouring = Literal["replace-one", "add-remove"]


def count_sensitivity(mechanism: Mechanism, neighbouring: Neighbouring) -> float:
    """L1 (Laplace) or L2 (Gaussian) sensitivity of a histogram's count vector (table above)."""
    _check_choice(mechanism, "mechanism", ("laplace", "gaussian"))
    _check_choice(neighbouring, "neighbouring", ("replace-one", "add-remove"))
    if neighbouring == "add-remove":
        return 1.0
    return 2.0 if mechanism == "laplace" else float(np.sqrt(2.0))


def _exact_noise_note(backend: str) -> tuple[str, ...]:
    """The floating-point assumption of a NumPy noise draw (none for OpenDP's samplers)."""
    if backend == "opendp":
        return ()
    return (
        "exact noise (NumPy's floating-point sampler is not hardened against floating-point "
        "attacks; backend='opendp' is)",
    )


def _check_choice(value: str, name: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"The '{name}' parameter must be one of {allowed}. Got {value!r}.")
    return value


@dataclass(frozen=True, repr=False)
class HistogramRelease(ReleaseCard):
    """A released histogram: everything in it is safe to publish.

    Attributes
    ----------
    counts
        Noisy counts clipped at zero, one per bin.
    edges
        Bin edges (``None`` for categorical codes).
    entropy
        Shannon entropy (bits) of ``counts`` (post-processing); ``nan`` if all counts are 0.
    entropy_bound
        Theorem 3 bound :math:`\\Delta_H` at the public ``n`` (replace-one), else ``None``.
    n
        Number of records, public under replace-one; ``None`` under add/remove.
    """

    counts: np.ndarray
    edges: np.ndarray | None
    entropy: float
    entropy_bound: float | None
    n: int | None
    mechanism: str
    scale: float
    sensitivity: float
    neighbouring: str
    epsilon: float
    delta: float
    backend: str

    def _card_details(self) -> list[tuple[str, str]]:
        return [
            ("released", f"{np.size(self.counts)} noisy counts ({self.mechanism}, scale "
                         f"{self.scale:.4g}); entropy {self.entropy:.4g} bits"),
        ]  # fmt: skip

    @property
    def privacy_statement(self) -> PrivacyStatement:
        """Global (epsilon, delta)-DP of this one count release (Algorithm 1 lines 2-4: Laplace
        pure epsilon, or Gaussian), under the neighbouring relation it was calibrated for."""
        replace = self.neighbouring == "replace-one"
        return PrivacyStatement(
            mechanism="entropy_histogram",
            epsilon=self.epsilon,
            delta=self.delta,
            neighbouring=REPLACE_ONE if replace else ADD_REMOVE,
            scope="global",
            unit="release",
            assumptions=(
                *(("n is public",) if replace else ()),
                "the bins are public (fixed before seeing the data)",
                *_exact_noise_note(self.backend),
            ),
            source=f"REAEDP, Algorithm 1 lines 2-4 ({self.mechanism} mechanism, "
            f"sensitivity {self.sensitivity:g})",
        )


@dataclass(frozen=True, repr=False)
class EntropyRelease(ReleaseCard):
    """A released entropy value :math:`\\tilde H`, clipped to :math:`[0, \\log_2 K]`."""

    entropy: float
    order: float | None
    sensitivity: float
    n: int
    mechanism: str
    scale: float
    epsilon: float
    delta: float
    backend: str

    def _card_details(self) -> list[tuple[str, str]]:
        return [("released", f"entropy {self.entropy:.4g} bits of {self.n} records "
                             f"({self.mechanism})")]  # fmt: skip

    @property
    def privacy_statement(self) -> PrivacyStatement:
        r"""Global (epsilon, delta)-DP of this one entropy release: noise calibrated to Theorem 3's
        bound :math:`\Delta_H(n)` (eq. 4) or the Renyi bound, replace-one with n public."""
        bound = "Theorem 3, eq. 4" if self.order is None else f"Renyi order {self.order:g} bound"
        return PrivacyStatement(
            mechanism="entropy_value",
            epsilon=self.epsilon,
            delta=self.delta,
            neighbouring=REPLACE_ONE,
            scope="global",
            unit="release",
            assumptions=(
                "n is public",
                "the bins are public (fixed before seeing the data)",
                *_exact_noise_note(self.backend),
            ),
            source=f"REAEDP, Algorithm 1 line 5 ({bound}, sensitivity {self.sensitivity:.4g})",
        )


@dataclass(frozen=True)
class HistogramUtility:
    """Utility of a release against the confidential counts (evaluation only, not private)."""

    entropy_original: float
    entropy_released: float
    entropy_error: float
    entropy_bound: float
    count_mae: float
    original_counts: np.ndarray = field(repr=False)


@dataclass
class EntropyHistogram:
    r"""Entropy-calibrated DP histogram release (REAEDP Algorithm 1, Theorem 3).

    Parameters
    ----------
    epsilon
        Budget spent by *each* call of :meth:`release`, :meth:`release_counts` or
        :meth:`release_entropy`.
    bins
        Number of bins :math:`K` (the paper's :math:`m`; with ``bounds``, or for integer codes
        :math:`0..K-1`), or an increasing sequence of :math:`K + 1` edges.
    mechanism
        ``"laplace"`` (pure :math:`\varepsilon`-DP) or ``"gaussian"`` (needs ``delta``).
    delta
        :math:`\delta \in (0, 1)` for the Gaussian mechanism; must be ``None`` for Laplace.
    backend
        ``"numpy"`` (reproducible from ``seed``) or ``"opendp"`` (floating-point-safe, not
        reproducible), passed to the shared noise module.
    bounds
        Public ``(low, high)`` range for ``bins`` equal-width bins over numeric data.
    neighbouring
        ``"replace-one"`` (default; the relation of Theorem 3) or ``"add-remove"`` (counts only).
    gaussian_method
        ``"analytic"`` (Balle & Wang 2018, default) or ``"classic"`` calibration of sigma.
    """

    epsilon: float
    bins: int | np.ndarray | list[float]
    mechanism: Mechanism = "laplace"
    delta: float | None = None
    backend: Backend = "numpy"
    bounds: tuple[float, float] | None = None
    neighbouring: Neighbouring = "replace-one"
    gaussian_method: Literal["classic", "analytic"] = "analytic"

    def __post_init__(self) -> None:
        check_positive(self.epsilon, "epsilon")
        _check_choice(self.mechanism, "mechanism", ("laplace", "gaussian"))
        _check_choice(self.neighbouring, "neighbouring", ("replace-one", "add-remove"))
        _check_choice(self.backend, "backend", ("numpy", "opendp"))
        _check_choice(self.gaussian_method, "gaussian_method", ("classic", "analytic"))
        if self.mechanism == "gaussian":
            if self.delta is None:
                raise ValueError("The Gaussian mechanism needs 'delta' in (0, 1). Got None.")
            check_probability(self.delta, "delta")
            if self.gaussian_method == "classic":
                check_classic_gaussian(self.epsilon, self.delta, "the histogram release")
        elif self.delta not in (None, 0, 0.0):
            raise ValueError(
                "The Laplace mechanism is pure epsilon-DP: 'delta' must be None. "
                f"Got {self.delta!r}."
            )
        self._edges()  # validates bins / bounds before any data is seen

    # ------------------------------------------------------------------ binning
    def _edges(self) -> np.ndarray | None:
        if np.ndim(self.bins) == 0:
            k = check_positive_int(self.bins, "bins")
            if self.bounds is None:
                return None
            lo, hi = (float(b) for b in self.bounds)
            if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
                raise ValueError(
                    f"The 'bounds' parameter must be finite (low, high) with low < high. "
                    f"Got {self.bounds!r}."
                )
            return np.linspace(lo, hi, k + 1)
        edges = np.asarray(self.bins, dtype=float)
        if edges.ndim != 1 or edges.size < 2 or not np.isfinite(edges).all():
            raise ValueError(
                f"The 'bins' parameter must be a positive int or at least 2 finite edges. "
                f"Got {self.bins!r}."
            )
        if (np.diff(edges) <= 0).any():
            raise ValueError("The 'bins' edges must be strictly increasing.")
        if self.bounds is not None:
            raise ValueError("Give either 'bins' edges or 'bounds', not both.")
        return edges

    @property
    def n_bins(self) -> int:
        """Number of bins :math:`K` (the paper's :math:`m`; in pseudopost m counts datasets)."""
        edges = self._edges()
        return int(self.bins) if edges is None else edges.size - 1

    def counts(self, data: np.ndarray | list[float]) -> np.ndarray:
        """Confidential histogram :math:`(c_1, \\dots, c_m)` of ``data`` (not private)."""
        x = np.asarray(data)
        if x.ndim != 1:
            raise ValueError(f"The 'data' argument must be 1-D. Got shape {x.shape}.")
        if x.size == 0:
            raise ValueError("The 'data' argument is empty: a histogram needs at least one record.")
        if not np.issubdtype(x.dtype, np.number) or np.issubdtype(x.dtype, np.bool_):
            raise TypeError(f"The 'data' argument must be numeric. Got dtype {x.dtype}.")
        x = x.astype(float)
        if not np.isfinite(x).all():
            raise ValueError("The 'data' argument must hold finite values only.")
        edges = self._edges()
        k = self.n_bins
        if edges is None:
            if (x != np.round(x)).any() or x.min() < 0 or x.max() > k - 1:
                raise ValueError(
                    f"Without 'bounds' or edges, 'data' must hold integer category codes in "
                    f"0..{k - 1} (bins={k}). Got values in [{x.min()}, {x.max()}]."
                )
            return np.bincount(x.astype(int), minlength=k).astype(float)
        clipped = np.clip(x, edges[0], edges[-1])
        return np.histogram(clipped, bins=edges)[0].astype(float)

    # ------------------------------------------------------------------ calibration
    def _scale(self, sensitivity: float) -> float:
        if self.mechanism == "laplace":
            return laplace_scale(sensitivity, self.epsilon)
        return gaussian_sigma(sensitivity, self.epsilon, self.delta, method=self.gaussian_method)

    def _noisy(self, values: np.ndarray, scale: float, seed: SeedLike) -> np.ndarray:
        if self.mechanism == "laplace":
            return laplace_noise(values, scale, seed=seed, backend=self.backend)
        return gaussian_noise(values, scale, seed=seed, backend=self.backend)

    @property
    def _delta(self) -> float:
        return 0.0 if self.mechanism == "laplace" else float(self.delta)

    # ------------------------------------------------------------------ releases
    def release(self, data: np.ndarray | list[float], seed: SeedLike = None) -> HistogramRelease:
        """Release the noisy, zero-clipped histogram of ``data``; spends (epsilon, delta)."""
        return self.release_counts(self.counts(data), seed=seed, edges=self._edges())

    def release_counts(
        self,
        counts: np.ndarray | list[float],
        seed: SeedLike = None,
        *,
        edges: np.ndarray | None = None,
    ) -> HistogramRelease:
        """Release a confidential count vector (one entry per bin); spends (epsilon, delta)."""
        c = np.asarray(counts, dtype=float)
        if c.ndim != 1 or c.size != self.n_bins:
            raise ValueError(f"'counts' must be 1-D with {self.n_bins} bins. Got shape {c.shape}.")
        if not np.isfinite(c).all() or (c < 0).any() or (c != np.round(c)).any():
            raise ValueError("'counts' must hold non-negative integers.")
        if c.sum() == 0:
            raise ValueError("'counts' is empty (total 0): a histogram needs at least one record.")
        sens = count_sensitivity(self.mechanism, self.neighbouring)
        scale = self._scale(sens)
        noisy = np.clip(self._noisy(c, scale, seed), 0.0, None)  # clip: post-processing
        n = int(c.sum()) if self.neighbouring == "replace-one" else None
        return HistogramRelease(
            counts=noisy,
            edges=None if edges is None else edges.copy(),
            entropy=shannon_entropy(noisy) if noisy.sum() > 0 else float("nan"),
            entropy_bound=None if n is None else shannon_entropy_sensitivity(n),
            n=n,
            mechanism=self.mechanism,
            scale=scale,
            sensitivity=sens,
            neighbouring=self.neighbouring,
            epsilon=float(self.epsilon),
            delta=self._delta,
            backend=self.backend,
        )

    def entropy_sensitivity(self, n: int, order: float | None = None) -> float:
        """:math:`\\Delta_H(n)` (Theorem 3, eq. 4) or the Rényi bound of order ``order`` at
        :math:`K` bins."""
        if order is None:
            return shannon_entropy_sensitivity(n)
        return renyi_entropy_sensitivity(n, order, bins=self.n_bins)

    def release_entropy(
        self, data: np.ndarray | list[float], seed: SeedLike = None, *, order: float | None = None
    ) -> EntropyRelease:
        """Release :math:`H(c)` (or :math:`H_\\alpha`) with noise calibrated by the bound.

        Replace-one only; spends (epsilon, delta). ``order=None`` is Shannon (Theorem 3).
        """
        if self.neighbouring != "replace-one":
            raise ValueError(
                "release_entropy needs neighbouring='replace-one': the entropy bounds hold for a "
                "fixed, public number of records n (Theorem 3)."
            )
        c = self.counts(data)
        n = int(c.sum())
        sens = self.entropy_sensitivity(n, order)
        h = shannon_entropy(c) if order is None else renyi_entropy(c, order)
        scale = self._scale(sens)
        noisy = float(self._noisy(np.array([h]), scale, seed)[0])
        return EntropyRelease(
            entropy=float(np.clip(noisy, 0.0, np.log2(self.n_bins))),
            order=order,
            sensitivity=sens,
            n=n,
            mechanism=self.mechanism,
            scale=scale,
            epsilon=float(self.epsilon),
            delta=self._delta,
            backend=self.backend,
        )

    def utility(
        self, data: np.ndarray | list[float], release: HistogramRelease
    ) -> HistogramUtility:
        """Entropy before/after, entropy error and count MAE (reads confidential data)."""
        c = self.counts(data)
        h0 = shannon_entropy(c)
        return HistogramUtility(
            entropy_original=h0,
            entropy_released=release.entropy,
            entropy_error=abs(h0 - release.entropy),
            entropy_bound=shannon_entropy_sensitivity(int(c.sum())),
            count_mae=float(np.mean(np.abs(c - release.counts))),
            original_counts=c,
        )


def synthetic_counts(release: HistogramRelease, n: int, seed: SeedLike = None) -> np.ndarray:
    """DP-synthetic baseline (Fig. 5): ``n`` records drawn from the released distribution.

    Post-processing of ``release``: :math:`\\tilde c / \\sum \\tilde c` normalised, then a
    multinomial sample of size ``n`` (a public size). No extra budget.
    """
    n = check_positive_int(n, "n")
    total = release.counts.sum()
    if total <= 0:
        p = np.full(release.counts.size, 1.0 / release.counts.size)
    else:
        p = release.counts / total
    return as_generator(seed).multinomial(n, p).astype(float)
