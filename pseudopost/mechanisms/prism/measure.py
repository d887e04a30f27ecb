r"""Gaussian measurement of marginal probability vectors (PRISM section 5.5, appendix A.3).

For a clique :math:`C` with cells :math:`\Omega_C`, the query is the empirical probability vector
:math:`\hat p_C(\omega) = \frac1n \sum_i 1\{x_{i,C} = \omega\}`. Under replace-one neighbours
(same n, one record changed) one cell loses :math:`1/n` and another gains :math:`1/n`, so

.. math:: \Delta_2 = \sqrt{(1/n)^2 + (1/n)^2} = \sqrt2 / n.

The release is :math:`\tilde p_C = \hat p_C + \mathcal N(0, \sigma_C^2 I)` with

* ``"approx"`` accounting: :math:`\sigma_C` calibrated to :math:`(\varepsilon_C, \delta_C)` by
  :func:`pseudopost.privacy.noise.gaussian_sigma` (``"classic"``:
  :math:`\Delta_2\sqrt{2\ln(1.25/\delta_C)}/\varepsilon_C`, the paper's form; ``"analytic"``:
  Balle & Wang's exact curve, valid for every epsilon);
* ``"zcdp"`` accounting: :math:`\sigma_C = \Delta_2/\sqrt{2\rho_C}`, :math:`\rho_C`-zCDP.

Each measurement is a frozen record (like mbi's ``LinearMeasurement``): clique, noisy vector,
sigma and the budget it spent, so every downstream estimate can be rebuilt from the release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pseudopost._rng import SeedLike
from pseudopost._validation import check_positive_int
from pseudopost.privacy.noise import gaussian_noise, gaussian_rho

__all__ = ["MarginalMeasurement", "marginal_probabilities", "measure_marginal", "replace_one_l2"]


def replace_one_l2(n: int) -> float:
    r""":math:`\ell_2` sensitivity :math:`\sqrt2/n` of a probability vector under replace-one."""
    return float(np.sqrt(2.0) / check_positive_int(n, "n", minimum=1))


def marginal_probabilities(
    codes: Mapping[str, np.ndarray], clique: Sequence[str], sizes: Mapping[str, int]
) -> np.ndarray:
    """Flattened (C order over ``clique``) empirical probability vector of the clique."""
    cols = [np.asarray(codes[c]) for c in clique]
    shape = tuple(int(sizes[c]) for c in clique)
    flat = np.ravel_multi_index(tuple(cols), shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).astype(float) / cols[0].size


@dataclass(frozen=True)
class MarginalMeasurement:
    """A released noisy marginal: what was measured, how noisily, and at what cost."""

    clique: tuple[str, ...]
    shape: tuple[int, ...]
    noisy: np.ndarray
    sigma: float
    epsilon: float
    delta: float
    rho: float
    pool: str
    weight: float = 1.0

    @property
    def cells(self) -> int:
        """:math:`|\\Omega_C|`."""
        return int(np.prod(self.shape))

    def table(self) -> np.ndarray:
        """The noisy vector reshaped to the clique's axes."""
        return self.noisy.reshape(self.shape)


def measure_marginal(
    codes: Mapping[str, np.ndarray],
    clique: Sequence[str],
    sizes: Mapping[str, int],
    sigma: float,
    *,
    epsilon: float,
    delta: float,
    pool: str,
    weight: float = 1.0,
    seed: SeedLike = None,
) -> MarginalMeasurement:
    """Measure one marginal with Gaussian noise of standard deviation ``sigma``.

    ``epsilon``/``delta`` are recorded as the approximate-DP cost the caller calibrated
    ``sigma`` to (0 under zCDP planning); the zCDP cost :math:`\\Delta_2^2/(2\\sigma^2)` is
    computed here from the replace-one sensitivity.
    """
    clique = tuple(clique)
    p = marginal_probabilities(codes, clique, sizes)
    n = int(np.asarray(codes[clique[0]]).size)
    noisy = gaussian_noise(p, sigma, seed)
    noisy.setflags(write=False)
    return MarginalMeasurement(
        clique=clique,
        shape=tuple(int(sizes[c]) for c in clique),
        noisy=noisy,
        sigma=float(sigma),
        epsilon=float(epsilon),
        delta=float(delta),
        rho=gaussian_rho(sigma, replace_one_l2(n)),
        pool=pool,
        weight=float(weight),
    )
