r"""Logistic regression fitted as R's ``glm(family = binomial)`` fits it, and its design rank.

synthpop's logit propensity score is ``glm(t ~ .^(maxorder + 1), family = "binomial",
control = list(maxit = maxit))``. For fitted probabilities that compare with synthpop's, the fit
follows ``glm.fit``: start from :math:`\mu_0 = (y + 1/2)/2`, iterate weighted least squares on
the working response :math:`z = \eta + (y - \mu)/\mu'(\eta)` with weights
:math:`\mu'(\eta)^2/\{\mu(1-\mu)\}`, and stop when the deviance changes by less than
:math:`10^{-8}(|D| + 0.1)` or after ``maxit`` iterations; R's logit link clamps
:math:`|\eta| > 30`. Aliased columns (R's ``NA`` coefficients) are dropped first: the rank of
the design is found by a pivoted QR of its unit-norm columns, and the fitted values depend only
on the column space, so which of two collinear columns is dropped does not matter. Under
complete separation the iterations run to ``maxit`` as R's do and the probabilities approach 0
and 1.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

__all__ = ["design_rank_columns", "fit_logistic"]

_THRESH = 30.0
_EPS = np.finfo(float).eps


def design_rank_columns(design: np.ndarray, tol: float = 1e-9) -> np.ndarray:
    """Indices of a maximal set of linearly independent columns of ``design``.

    Columns are scaled to unit norm (all-zero columns are aliased at once) and a column is
    dependent when its pivoted-QR diagonal is below ``tol`` (relative to the unit norm).
    """
    norms = np.linalg.norm(design, axis=0)
    nonzero = np.flatnonzero(norms > 0)
    if nonzero.size == 0:
        return nonzero
    scaled = design[:, nonzero] / norms[nonzero]
    _, r, piv = scipy.linalg.qr(scaled, mode="economic", pivoting=True)
    diag = np.abs(np.diag(r))
    rank = int(np.sum(diag > tol))
    return np.sort(nonzero[piv[:rank]])


def _linkinv(eta: np.ndarray) -> np.ndarray:
    tmp = np.where(eta < -_THRESH, _EPS, np.where(eta > _THRESH, 1.0 / _EPS, np.exp(eta)))
    return tmp / (1.0 + tmp)


def _mu_eta(eta: np.ndarray) -> np.ndarray:
    opexp = 1.0 + np.exp(np.clip(eta, -_THRESH - 1, _THRESH + 1))
    out = np.exp(np.clip(eta, -_THRESH - 1, _THRESH + 1)) / (opexp * opexp)
    return np.where(np.abs(eta) > _THRESH, _EPS, out)


def _deviance(y: np.ndarray, mu: np.ndarray) -> float:
    return float(np.sum(np.where(y > 0, -2.0 * np.log(mu), -2.0 * np.log1p(-mu))))


def fit_logistic(
    design: np.ndarray, y: np.ndarray, *, maxit: int = 200, epsilon: float = 1e-8
) -> tuple[np.ndarray, bool]:
    """Fitted probabilities of a full-rank design and whether IRLS converged (``glm.fit``).

    Parameters
    ----------
    design : numpy.ndarray
        (n, p) full-rank design, intercept included.
    y : numpy.ndarray
        0/1 responses.
    maxit, epsilon
        ``glm.control`` parameters.
    """
    y = np.asarray(y, dtype=float)
    mu = (y + 0.5) / 2.0
    eta = np.log(mu / (1.0 - mu))
    devold = _deviance(y, mu)
    converged = False
    for _ in range(maxit):
        d = _mu_eta(eta)
        z = eta + (y - mu) / d
        w = np.sqrt(d * d / (mu * (1.0 - mu)))
        coef, *_ = np.linalg.lstsq(design * w[:, None], z * w, rcond=None)
        eta = design @ coef
        mu = _linkinv(eta)
        dev = _deviance(y, mu)
        if abs(dev - devold) / (abs(dev) + 0.1) < epsilon:
            converged = True
            break
        devold = dev
    return mu, converged
