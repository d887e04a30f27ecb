"""The exact-Hessian check shared by the part tests: central differences of the gradient."""

from __future__ import annotations

import numpy as np


def assert_hessian_matches_gradient(density, rng, scales=(0.3, 1.5)) -> None:
    """The density's exact Hessian against central differences of its gradient, at random
    points of each scale away from the mode; and symmetric."""
    for scale in scales:
        x = rng.normal(size=density.part.layout.size) * scale
        H = density.hessian(x)
        h = 1e-6
        fd = np.column_stack([
            (density.logp_grad(x + h * e)[1] - density.logp_grad(x - h * e)[1]) / (2 * h)
            for e in np.eye(x.size)
        ])  # fmt: skip
        np.testing.assert_allclose(H, fd, rtol=1e-5, atol=1e-5 * np.abs(H).max())
        np.testing.assert_allclose(H, H.T, rtol=1e-12, atol=1e-12)
