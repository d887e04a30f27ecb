r"""Private mean of functional data in the Wiener-kernel RKHS (REAEDP §III-D, §V-D, Fig. 2).

Sample paths :math:`X_1, \dots, X_N` are observed on a grid :math:`0 < t_1 < \dots < t_T`. The
Wiener kernel :math:`K(s, t) = \min(s, t)` (Brownian-motion covariance,
:math:`K = \sum_i \lambda_i \psi_i \otimes \psi_i`
with :math:`\lambda_i = ((i - \tfrac12)\pi)^{-2}`,
:math:`\psi_i(t) = \sqrt2 \sin((i-\tfrac12)\pi t)`) defines the RKHS :math:`\mathbb H` with norm
:math:`\lVert f\rVert_{\mathbb H}^2 = \int_0^1 f'(t)^2\,dt`; on the grid this is
:math:`f^\top K^{-1} f` with :math:`K_{jl} = \min(t_j, t_l)` (the Cameron-Martin norm of the
piecewise-linear interpolant). The release follows Hall, Rinaldo & Wasserman (2013) and
Mirshani, Reimherr & Slavković (2019), which the paper's Wiener-kernel mechanism instantiates:

1. clip each path to the public :math:`L^2` ball, :math:`\lVert X_i\rVert_{L^2} \le \tau`
   (:math:`\lVert x\rVert_{L^2}^2 = h\sum_j x_j^2`, :math:`h` the grid spacing weight);
2. penalised mean, penalty :math:`\rho` (the paper's penalty parameter):

   .. math::

       \hat\mu = \arg\min_\mu\ h\lVert \bar X - \mu\rVert^2 + \rho\,\mu^\top K^{-1}\mu
               = K (K + (\rho/h) I)^{-1} \bar X;

3. release :math:`\tilde\mu = \hat\mu + \sigma Z` with :math:`Z \sim \mathcal N(0, K)`, a Wiener
   process on the grid, and :math:`\sigma` the Gaussian-mechanism noise for
   :math:`(\varepsilon, \delta)` at sensitivity :math:`\Delta_{\mathbb H}`. By the Cameron-Martin
   theorem the privacy loss between :math:`\mathcal N(\hat\mu, \sigma^2 K)` and
   :math:`\mathcal N(\hat\mu', \sigma^2 K)` is that of a scalar Gaussian mechanism with
   sensitivity :math:`\lVert \hat\mu - \hat\mu'\rVert_{\mathbb H}`.

Sensitivity under replace-one neighbours (:math:`N` public, one path replaced). With
:math:`K = V\,\mathrm{diag}(\lambda)V^\top` and :math:`\rho' = \rho/h`,
:math:`\hat\mu - \hat\mu' = K(K + \rho' I)^{-1}(x_i - x_i')/N` and
:math:`\lVert x_i - x_i'\rVert_2 \le 2\tau/\sqrt h`, so exactly

.. math::

    \Delta_{\mathbb H} = \frac{2\tau}{N\sqrt h}\max_j \frac{\sqrt{\lambda_j}}{\lambda_j + \rho'}
    \ \le\ \frac{\tau}{N\sqrt\rho}

(the supremum is attained by :math:`x_i = -x_i'` along the maximising eigenvector; the upper
bound is AM-GM). Larger :math:`\rho` lowers the noise (:math:`\propto \rho^{-1/2}`) but shrinks
:math:`\hat\mu` towards zero: that is the trade-off of Fig. 2. The whole release spends
:math:`(\varepsilon, \delta)` once; step 1 is per record and costs nothing.

Privacy statement (:attr:`WienerMean.privacy_statement`, the same on every
:class:`WienerMeanRelease`): global :math:`(\varepsilon, \delta)` per release under replace-one
neighbours, with :math:`N`, :math:`\tau`, :math:`\rho` and the grid public.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from pseudopost._cards import ReleaseCard
from pseudopost._rng import SeedLike
from pseudopost._validation import check_positive, check_positive_int, check_probability
from pseudopost.privacy.noise import (
    Backend,
    check_classic_gaussian,
    gaussian_noise,
    gaussian_sigma,
)
from pseudopost.privacy.statement import REPLACE_ONE, PrivacyStatement

__all__ = ["WienerMean", "WienerMeanRelease", "wiener_kernel", "wiener_statement"]


def wiener_kernel(grid: np.ndarray) -> np.ndarray:
    r"""Gram matrix :math:`K_{jl} = \min(t_j, t_l)` of the Wiener kernel on ``grid``."""
    g = np.asarray(grid, dtype=float)
    return np.minimum.outer(g, g)


def wiener_statement(epsilon: float, delta: float, backend: str) -> PrivacyStatement:
    """The guarantee of one Wiener-mean release: global (epsilon, delta), replace-one."""
    return PrivacyStatement(
        mechanism="wiener_mean",
        epsilon=epsilon,
        delta=delta,
        neighbouring=REPLACE_ONE,
        scope="global",
        unit="release",
        assumptions=(
            "the number of paths N is public",
            "the norm bound tau, the penalty rho and the grid are public",
            *(
                ()
                if backend == "opendp"
                else (
                    "exact Gaussian noise (NumPy's floating-point sampler is not hardened "
                    "against floating-point attacks; backend='opendp' is)",
                )
            ),
        ),
        source="REAEDP section III-D (Wiener kernel); Gaussian mechanism in an RKHS, Hall, "
        "Rinaldo & Wasserman (2013), with the exact replace-one sensitivity of step 3",
    )


@dataclass(frozen=True, repr=False)
class WienerMeanRelease(ReleaseCard):
    """Released private mean; every field is safe to publish."""

    mean: np.ndarray
    grid: np.ndarray
    sigma: float
    sensitivity: float
    rho: float
    norm_bound: float
    n_paths: int
    epsilon: float
    delta: float
    backend: str

    @property
    def privacy_statement(self) -> PrivacyStatement:
        """Global (epsilon, delta)-DP of this release under replace-one neighbours."""
        return wiener_statement(self.epsilon, self.delta, self.backend)

    def _card_details(self) -> list[tuple[str, str]]:
        return [("released", f"the mean of {self.n_paths} paths on {np.size(self.grid)} grid "
                             f"points (Gaussian sigma {self.sigma:.4g})")]  # fmt: skip


@dataclass
class WienerMean:
    r"""Private RKHS mean of functional data with Wiener-process noise (module docstring).

    Parameters
    ----------
    epsilon, delta
        Budget of the release (replace-one neighbours, the number of paths public).
    rho
        Penalty :math:`\rho > 0` on the RKHS norm of the mean.
    norm_bound
        Public :math:`\tau`: paths are scaled down to :math:`L^2` norm at most :math:`\tau`.
    grid
        Observation times in :math:`(0, 1]`, strictly increasing; default :math:`t_j = j/T`.
    gaussian_method
        ``"analytic"`` (default, exact for any epsilon) or ``"classic"`` calibration.
    backend
        Noise backend of the shared noise module.
    """

    epsilon: float
    delta: float
    rho: float
    norm_bound: float
    grid: np.ndarray | None = None
    gaussian_method: Literal["classic", "analytic"] = "analytic"
    backend: Backend = "numpy"

    def __post_init__(self) -> None:
        check_positive(self.epsilon, "epsilon")
        check_probability(self.delta, "delta")
        check_positive(self.rho, "rho")
        check_positive(self.norm_bound, "norm_bound")
        if self.gaussian_method not in ("classic", "analytic"):
            raise ValueError(
                f"The 'gaussian_method' parameter must be 'classic' or 'analytic'. "
                f"Got {self.gaussian_method!r}."
            )
        if self.backend not in ("numpy", "opendp"):
            raise ValueError(
                f"The 'backend' parameter must be 'numpy' or 'opendp'. Got {self.backend!r}."
            )
        if self.gaussian_method == "classic":
            check_classic_gaussian(self.epsilon, self.delta, "the Wiener-mean release")
        if self.grid is not None:
            self._check_grid(np.asarray(self.grid, dtype=float))

    @property
    def privacy_statement(self) -> PrivacyStatement:
        """What each call of :meth:`release` costs: global (epsilon, delta)-DP under replace-one
        neighbours (N public); calls compose (Theorem 1)."""
        return wiener_statement(float(self.epsilon), float(self.delta), self.backend)

    @staticmethod
    def _check_grid(g: np.ndarray) -> np.ndarray:
        if g.ndim != 1 or g.size < 2 or not np.isfinite(g).all():
            raise ValueError("The 'grid' parameter must be a 1-D array of at least 2 finite times.")
        if g[0] <= 0 or g[-1] > 1 or (np.diff(g) <= 0).any():
            raise ValueError(
                "The 'grid' must be strictly increasing in (0, 1] (the Wiener kernel is singular "
                f"at t = 0). Got values in [{g[0]}, {g[-1]}]."
            )
        return g

    def grid_for(self, n_points: int) -> np.ndarray:
        """The observation grid for paths with ``n_points`` values."""
        if self.grid is None:
            return np.arange(1, n_points + 1) / n_points
        g = self._check_grid(np.asarray(self.grid, dtype=float))
        if g.size != n_points:
            raise ValueError(f"'paths' have {n_points} points but 'grid' has {g.size}.")
        return g

    def _paths(self, paths: np.ndarray) -> np.ndarray:
        x = np.asarray(paths)
        if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 2:
            raise ValueError(
                f"The 'paths' argument must be 2-D (n_paths >= 1, n_points >= 2). Got shape "
                f"{x.shape}."
            )
        if not np.issubdtype(x.dtype, np.number):
            raise TypeError(f"The 'paths' argument must be numeric. Got dtype {x.dtype}.")
        x = x.astype(float)  # a copy: the caller's array is never modified
        if not np.isfinite(x).all():
            raise ValueError("The 'paths' argument must hold finite values only.")
        return x

    @staticmethod
    def _weight(grid: np.ndarray) -> float:
        return 1.0 / grid.size  # quadrature weight h of the discrete L2 norm

    def clip(self, paths: np.ndarray) -> np.ndarray:
        r"""Scale each path to :math:`L^2` norm at most ``norm_bound`` (step 1)."""
        x = self._paths(paths)
        norms = np.sqrt(self._weight(self.grid_for(x.shape[1])) * (x**2).sum(axis=1))
        factor = np.minimum(1.0, self.norm_bound / np.maximum(norms, 1e-300))
        return x * factor[:, None]

    def _eigen(self, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        lam, vec = np.linalg.eigh(wiener_kernel(grid))
        return np.clip(lam, 0.0, None), vec

    def penalised_mean(self, paths: np.ndarray) -> np.ndarray:
        r"""Non-private :math:`\hat\mu = K(K + (\rho/h)I)^{-1}\bar X` of the clipped paths."""
        x = self.clip(paths)
        grid = self.grid_for(x.shape[1])
        lam, vec = self._eigen(grid)
        shrink = lam / (lam + self.rho / self._weight(grid))
        return vec @ (shrink * (vec.T @ x.mean(axis=0)))

    def sensitivity(self, n_paths: int, n_points: int) -> float:
        r"""Exact :math:`\Delta_{\mathbb H}` (replace-one) for ``n_paths`` paths on the grid."""
        n_paths = check_positive_int(n_paths, "n_paths")
        grid = self.grid_for(check_positive_int(n_points, "n_points", minimum=2))
        h = self._weight(grid)
        lam, _ = self._eigen(grid)
        peak = np.max(np.sqrt(lam) / (lam + self.rho / h))
        return float(2.0 * self.norm_bound / (n_paths * np.sqrt(h)) * peak)

    def sensitivity_bound(self, n_paths: int) -> float:
        r"""Grid-free upper bound :math:`\tau/(N\sqrt\rho)` on :math:`\Delta_{\mathbb H}`."""
        return float(self.norm_bound / (check_positive_int(n_paths, "n_paths") * np.sqrt(self.rho)))

    def release(self, paths: np.ndarray, seed: SeedLike = None) -> WienerMeanRelease:
        """Release the private mean of ``paths`` (shape ``(N, T)``); spends (epsilon, delta)."""
        x = self._paths(paths)
        grid = self.grid_for(x.shape[1])
        mu = self.penalised_mean(x)
        sens = self.sensitivity(x.shape[0], x.shape[1])
        sigma = gaussian_sigma(sens, self.epsilon, self.delta, method=self.gaussian_method)
        # Z ~ N(0, K): standard normal draws from the shared noise module, coloured by chol(K)
        white = gaussian_noise(np.zeros(grid.size), 1.0, seed=seed, backend=self.backend)
        noise = np.linalg.cholesky(wiener_kernel(grid)) @ white
        return WienerMeanRelease(
            mean=mu + sigma * noise,
            grid=grid.copy(),
            sigma=sigma,
            sensitivity=sens,
            rho=float(self.rho),
            norm_bound=float(self.norm_bound),
            n_paths=x.shape[0],
            epsilon=float(self.epsilon),
            delta=float(self.delta),
            backend=self.backend,
        )
