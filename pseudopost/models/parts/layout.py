r"""A part's free parameters: :class:`Param` (a constrained shape, its transform from the
unconstrained scale, ``none``, ``log``, ``ordered``, ``ordered_mid`` or ``simplex``, and its
prior) and :class:`Layout`, the ordered parameters of a part with ``pack``/``unpack`` between
the unconstrained vector and constrained values, the log-Jacobians and the chain rule of their
gradients and Hessians."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import special

from pseudopost.models.parts import _transforms

__all__ = ["Layout", "Param"]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_TRANSFORMS = ("none", "log", "ordered", "ordered_mid", "simplex")


@dataclass(frozen=True)
class Param:
    """One free parameter: ``name``, constrained ``shape``, ``transform`` and ``prior``.

    Priors: ``("normal", mu, sd)`` (``mu`` a float or a tuple of the parameter's size),
    ``("halfnormal", s)``, ``("gamma", a, b)`` (shape a, rate b), ``("dirichlet", a)``.
    """

    name: str
    shape: tuple[int, ...]
    transform: str = "none"
    prior: tuple = ("normal", 0.0, 1.0)

    def __post_init__(self) -> None:
        if self.transform not in _TRANSFORMS:
            raise ValueError(f"'transform' must be one of {_TRANSFORMS}; got {self.transform!r}.")

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def free_size(self) -> int:
        """Unconstrained size (one less for a simplex)."""
        return self.size - 1 if self.transform == "simplex" else self.size

    @property
    def value_name(self) -> str:
        """PyMC's name of the unconstrained value variable."""
        return self.name if self.transform == "none" else f"{self.name}_{self.transform}__"

    @property
    def support_point(self) -> np.ndarray:
        """PyMC's default start (constrained): the prior's support point."""
        kind = self.prior[0]
        if kind == "normal":
            return np.broadcast_to(np.asarray(self.prior[1], np.float64), self.shape).copy()
        if kind == "halfnormal":
            return np.full(self.shape, float(self.prior[1]))
        if kind == "gamma":
            return np.full(self.shape, self.prior[1] / self.prior[2])
        a = np.broadcast_to(np.asarray(self.prior[1], np.float64), self.shape)
        return a / a.sum()

    # -- transforms ----------------------------------------------------------------------
    @property
    def anchor(self) -> int:
        """The free coordinate that is a cutpoint itself under ``ordered_mid`` (the middle)."""
        return (self.size - 1) // 2

    def backward(self, x: np.ndarray) -> np.ndarray:
        """Constrained value from the unconstrained ``x`` (..., free_size)."""
        lead = x.shape[:-1]
        if self.transform == "log":
            v = np.exp(x)
        elif self.transform == "ordered":
            v = np.cumsum(np.concatenate([x[..., :1], np.exp(x[..., 1:])], axis=-1), axis=-1)
        elif self.transform == "ordered_mid":
            a = self.anchor
            e = np.exp(x)
            up = x[..., a : a + 1] + np.cumsum(e[..., a + 1 :], axis=-1)
            down = x[..., a : a + 1] - np.cumsum(e[..., :a][..., ::-1], axis=-1)[..., ::-1]
            v = np.concatenate([down, x[..., a : a + 1], up], axis=-1)
        elif self.transform == "simplex":
            z = np.concatenate([x, -x.sum(axis=-1, keepdims=True)], axis=-1)
            v = special.softmax(z, axis=-1)
        else:
            v = x
        return v.reshape((*lead, *self.shape))

    def forward(self, value: np.ndarray) -> np.ndarray:
        """Unconstrained ``(..., free_size)`` from the constrained value."""
        v = np.asarray(value, dtype=np.float64)
        lead = v.shape[: v.ndim - len(self.shape)]
        v = v.reshape((*lead, self.size))
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.transform == "log":
                return np.log(v)
            if self.transform == "ordered":
                return np.concatenate([v[..., :1], np.log(np.diff(v, axis=-1))], axis=-1)
            if self.transform == "ordered_mid":
                a = self.anchor
                gaps = np.log(np.diff(v, axis=-1))  # gap k: c_{k+1} - c_k
                return np.concatenate([gaps[..., :a], v[..., a : a + 1], gaps[..., a:]], axis=-1)
            if self.transform == "simplex":
                lv = np.log(v)
                return lv[..., :-1] - lv.mean(axis=-1, keepdims=True)
        return v

    def log_prior_grad(self, v: np.ndarray) -> tuple[float, np.ndarray]:
        """Log prior density at the constrained value and its gradient (same shape)."""
        kind = self.prior[0]
        if kind == "normal":
            mu = np.asarray(self.prior[1], np.float64)
            mu = mu.reshape(self.shape) if mu.ndim else float(mu)
            sd = float(self.prior[2])
            d = (v - mu) / sd
            lp = -0.5 * float(np.sum(d * d)) - self.size * (math.log(sd) + _HALF_LOG_2PI)
            return lp, -d / sd
        if kind == "halfnormal":
            s = float(self.prior[1])
            lp = self.size * (0.5 * math.log(2.0 / math.pi) - math.log(s))
            return lp - 0.5 * float(np.sum(v * v)) / s**2, -v / s**2
        if kind == "gamma":
            a, b = float(self.prior[1]), float(self.prior[2])
            const = a * math.log(b) - math.lgamma(a)
            with np.errstate(divide="ignore"):
                lv = np.log(v)
            return self.size * const + float(np.sum((a - 1.0) * lv - b * v)), (a - 1.0) / v - b
        a = np.broadcast_to(np.asarray(self.prior[1], np.float64), self.shape)
        with np.errstate(divide="ignore"):
            lv = np.log(v)
        lp = special.gammaln(a.sum()) - special.gammaln(a).sum() + float(np.sum((a - 1.0) * lv))
        return float(lp), (a - 1.0) / v

    def chain(self, x: np.ndarray, v: np.ndarray, g: np.ndarray) -> tuple[float, np.ndarray]:
        """(log-Jacobian, gradient on x) from the gradient ``g`` on the constrained value."""
        g = np.asarray(g, np.float64).reshape(-1)
        if self.transform == "log":
            return float(x.sum()), v.reshape(-1) * g + 1.0
        if self.transform == "ordered":
            tail = np.cumsum(g[::-1])[::-1]  # sum_{j >= k} dL/dc_j
            out = tail.copy()
            out[1:] = np.exp(x[1:]) * tail[1:] + 1.0
            return float(x[1:].sum()), out
        if self.transform == "ordered_mid":
            a = self.anchor
            e = np.exp(x)
            out = np.empty_like(g)
            out[a] = g.sum()
            above = np.cumsum(g[::-1])[::-1]  # sum_{j >= i} dL/dc_j
            below = np.cumsum(g)  # sum_{j <= i} dL/dc_j
            out[a + 1 :] = e[a + 1 :] * above[a + 1 :] + 1.0
            out[:a] = -e[:a] * below[:a] + 1.0
            return float(x.sum() - x[a]), out
        if self.transform == "simplex":
            p = v.reshape(-1)
            k = p.size
            pg = p * g
            dz = pg - p * pg.sum() + (1.0 - k * p)  # softmax chain + d log|J| / dz
            with np.errstate(divide="ignore"):
                lj = math.log(k) + float(np.log(p).sum())
            return lj, dz[:-1] - dz[-1]
        return 0.0, g


@dataclass(frozen=True)
class Layout:
    """The free parameters of a part, in a fixed order (the ready model's declaration order).

    The unconstrained vector is the parameters' unconstrained values in that order. Parameters
    without a transform and with a normal prior (coefficients) are handled together in one
    vector operation per gradient; the others (sigma, phi, cutpoints, p) one by one.
    """

    params: tuple[Param, ...]

    def __post_init__(self) -> None:
        slices, start = [], 0
        for p in self.params:
            slices.append(slice(start, start + p.free_size))
            start += p.free_size
        plain = [
            (p, sl) for p, sl in zip(self.params, slices, strict=True)
            if p.transform == "none" and p.prior[0] == "normal"
        ]  # fmt: skip
        idx = np.concatenate([np.arange(sl.start, sl.stop) for _, sl in plain] or [np.zeros(0)])
        mu = np.concatenate(
            [np.broadcast_to(np.asarray(p.prior[1], np.float64), p.shape).ravel() for p, _ in plain]
            or [np.zeros(0)]
        )
        sd = np.concatenate([np.full(p.size, float(p.prior[2])) for p, _ in plain] or [np.zeros(0)])
        object.__setattr__(self, "_slices", slices)
        object.__setattr__(self, "_size", start)
        object.__setattr__(self, "_plain_idx", idx.astype(np.int64))
        object.__setattr__(self, "_plain_mu", mu)
        object.__setattr__(self, "_plain_ivar", 1.0 / sd**2 if sd.size else sd)
        object.__setattr__(self, "_plain_const", -float(np.sum(np.log(sd) + _HALF_LOG_2PI)))
        object.__setattr__(
            self,
            "_others",
            [(p, sl) for p, sl in zip(self.params, slices, strict=True) if (p, sl) not in plain],
        )
        object.__setattr__(self, "_compiled", _encode(self.params, slices))

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.params]

    @property
    def shapes(self) -> list[tuple[int, ...]]:
        return [p.shape for p in self.params]

    @property
    def transforms(self) -> list[str]:
        return [p.transform for p in self.params]

    @property
    def size(self) -> int:
        """Length of the unconstrained vector."""
        return self._size

    @property
    def encoded(self) -> tuple | None:
        """The layout as the compiled transforms' arrays (code, start, end, anchor, prior,
        const, p1, p2; ``pseudopost.models.parts._transforms``), None where a transform or
        prior has no kernel."""
        return self._compiled

    @property
    def slices(self) -> dict[str, slice]:
        return {p.name: sl for p, sl in zip(self.params, self._slices, strict=True)}

    def __getitem__(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def unpack(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """Constrained values by name from unconstrained ``x`` of shape (..., size)."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape[-1:] != (self._size,):
            raise ValueError(
                f"Expected a vector of length {self._size} (last axis); got {x.shape}."
            )
        lead = x.shape[:-1]
        if not lead and self._compiled is not None:
            v = _transforms.backward(x, *self._compiled[:4])
            return {p.name: v[sl].reshape(p.shape)
                    for p, sl in zip(self.params, self._slices, strict=True)}  # fmt: skip
        out = {}
        for p, sl in zip(self.params, self._slices, strict=True):
            if p.transform == "none":
                out[p.name] = x[..., sl].reshape((*lead, *p.shape))
            else:
                out[p.name] = p.backward(x[..., sl])
        return out

    def pack(self, values: Mapping[str, np.ndarray]) -> np.ndarray:
        """The unconstrained vector (..., size) of constrained ``values`` (inverse of unpack)."""
        missing = [n for n in self.names if n not in values]
        if missing:
            raise ValueError(f"'values' lacks parameter(s) {missing}; expected {self.names}.")
        parts = [p.forward(values[p.name]) for p in self.params]
        return np.concatenate(parts, axis=-1) if parts else np.zeros(0)

    def log_prior_jacobian(
        self, x: np.ndarray, values: Mapping[str, np.ndarray], grads: Mapping[str, np.ndarray]
    ) -> tuple[float, np.ndarray]:
        """(log prior + log-Jacobian, gradient on x) given the log-likelihood's gradient on the
        constrained values (``grads``; a missing name counts as 0). Compiled
        (``pseudopost.models.parts._transforms``) where the layout's transforms and priors
        allow, the NumPy code below otherwise (and as the reference)."""
        if self._compiled is not None and x.ndim == 1:
            g = np.zeros(self._size)
            for p, sl in zip(self.params, self._slices, strict=True):
                if p.name in grads:
                    g[sl] = np.reshape(grads[p.name], -1)
            v = np.concatenate([np.reshape(values[p.name], -1) for p in self.params])
            return _transforms.prior_jacobian(x, v, g, *self._compiled)
        return self._log_prior_jacobian(x, values, grads)

    def _log_prior_jacobian(
        self, x: np.ndarray, values: Mapping[str, np.ndarray], grads: Mapping[str, np.ndarray]
    ) -> tuple[float, np.ndarray]:
        """:meth:`log_prior_jacobian` in NumPy (every transform and prior)."""
        out = np.empty(self._size)
        idx = self._plain_idx
        d = x[idx] - self._plain_mu
        out[idx] = -d * self._plain_ivar
        total = self._plain_const - 0.5 * float(d @ (d * self._plain_ivar))
        for p, sl in zip(self.params, self._slices, strict=True):
            if p.transform == "none" and p.name in grads:
                out[sl] += np.reshape(grads[p.name], -1)
        for p, sl in self._others:
            v = values[p.name]
            lp, gp = p.log_prior_grad(v)
            g = gp + grads[p.name] if p.name in grads else gp
            lj, gx = p.chain(x[sl], v, g)
            total += lp + lj
            out[sl] = gx
        return total, out

    def hessian(
        self,
        x: np.ndarray,
        values: Mapping[str, np.ndarray],
        grads: Mapping[str, np.ndarray],
        hess: np.ndarray,
    ) -> np.ndarray:
        r"""Hessian (size, size) of log-likelihood + log prior + log-Jacobian at unconstrained
        ``x``, from the log-likelihood's gradient ``grads`` and Hessian ``hess`` on the
        constrained values (flattened in layout order).

        With :math:`v = T(x)` (blockwise), :math:`G = \nabla_v(\ell + \log\pi)` and
        :math:`H_v = \nabla_v^2(\ell + \log\pi)`,

        .. math::
            \nabla_x^2 = J^\top H_v J + \sum_k G_k \nabla_x^2 v_k
            + \nabla_x^2 \log|J|,

        :math:`J = \partial v/\partial x`. Transforms: none (:math:`J = I`), ``log``
        (:math:`v = e^x`: :math:`J = \mathrm{diag}(e^x)`, :math:`\nabla^2 v_k = e^{x_k}` on
        the diagonal), ``ordered`` (:math:`c_k = x_0 + \sum_{1 \le i \le k} e^{x_i}`:
        :math:`J_{k0} = 1`, :math:`J_{ki} = e^{x_i}` for :math:`1 \le i \le k`, and
        :math:`\partial^2 c_k / \partial x_i^2 = e^{x_i}` for :math:`1 \le i \le k`) and
        ``ordered_mid`` (anchored at the middle a: :math:`c_a = x_a`, :math:`c_k = c_a +
        \sum_{a < i \le k} e^{x_i}` above, :math:`c_k = c_a - \sum_{k \le i < a} e^{x_i}`
        below; the same terms with signs); all log-Jacobians are linear in x. Priors: normal (:math:`-1/s^2`), half-normal
        (:math:`-1/s^2`), gamma (:math:`-(a-1)/v^2`), all diagonal. Simplex parameters raise
        ``NotImplementedError``.
        """
        d = self._size
        hv = np.array(hess, dtype=np.float64, copy=True).reshape(d, d)
        G = np.zeros(d)
        jac = np.zeros((d, d))
        second = np.zeros(d)
        identity = True
        for p, sl in zip(self.params, self._slices, strict=True):
            if p.transform == "simplex":
                raise NotImplementedError("No analytic Hessian under the simplex transform.")
            v = np.asarray(values[p.name], np.float64).reshape(-1)
            _, gp = p.log_prior_grad(values[p.name])
            g = np.reshape(gp, -1) + (np.reshape(grads[p.name], -1) if p.name in grads else 0.0)
            G[sl] = g
            kind = p.prior[0]
            if kind == "normal":
                hp = np.full(p.size, -1.0 / float(p.prior[2]) ** 2)
            elif kind == "halfnormal":
                hp = np.full(p.size, -1.0 / float(p.prior[1]) ** 2)
            elif kind == "gamma":
                hp = -(float(p.prior[1]) - 1.0) / v**2
            else:
                raise NotImplementedError(f"No analytic Hessian of the {kind} prior.")
            idx = np.arange(sl.start, sl.stop)
            hv[idx, idx] += hp
            xs = x[sl]
            if p.transform == "none":
                jac[idx, idx] = 1.0
            elif p.transform == "log":
                identity = False
                jac[idx, idx] = v
                second[idx] = v * g
            elif p.transform == "ordered_mid":  # gaps hang off the middle cutpoint
                identity = False
                a, m = p.anchor, xs.size
                e = np.exp(xs)
                rows = np.arange(m)[:, None]
                cols = np.arange(m)[None, :]
                block = np.where((cols > a) & (rows >= cols), e[None, :], 0.0)
                block = block - np.where((cols < a) & (rows <= cols), e[None, :], 0.0)
                block[:, a] = 1.0
                jac[sl, sl] = block
                above = np.cumsum(g[::-1])[::-1]
                below = np.cumsum(g)
                sec = np.zeros(m)
                sec[a + 1 :] = e[a + 1 :] * above[a + 1 :]
                sec[:a] = -e[:a] * below[:a]
                second[idx] = sec
            else:  # ordered
                identity = False
                e = np.exp(xs)
                block = np.tril(np.broadcast_to(e, (xs.size, xs.size)))
                block[:, 0] = 1.0
                jac[sl, sl] = block
                tail = np.cumsum(g[::-1])[::-1]  # sum_{k >= i} G_k
                second[idx[1:]] = e[1:] * tail[1:]
        if identity:
            return hv
        out = jac.T @ hv @ jac
        out[np.arange(d), np.arange(d)] += second
        return 0.5 * (out + out.T)

    def check_draws(self, draws: Mapping[str, np.ndarray], label: str = "") -> dict:
        """Draws by name as float64 with a common leading draw axis, shapes checked."""
        out, n_draws = {}, None
        for p in self.params:
            key = f"{label}{p.name}"
            if key not in draws:
                raise ValueError(f"The draws lack '{key}'; they have {sorted(draws)}.")
            a = np.asarray(draws[key], dtype=np.float64)
            if a.shape[1:] != p.shape:
                raise ValueError(
                    f"Draws of '{key}' must have shape (draws, *{p.shape}); got {a.shape}."
                )
            if n_draws is None:
                n_draws = a.shape[0]
            elif a.shape[0] != n_draws:
                raise ValueError(f"Draws of '{key}' have {a.shape[0]} draws, not {n_draws}.")
            out[p.name] = a
        return out


def _encode(params: tuple[Param, ...], slices: list[slice]) -> tuple | None:
    """The layout as the arrays of ``pseudopost.models.parts._transforms`` (code, start,
    end, anchor, prior, const, p1, p2), or None when a transform or prior has no kernel."""
    if not params or any(
        p.transform not in _transforms.CODES or p.prior[0] not in _transforms.PRIORS
        for p in params
    ):
        return None
    size = slices[-1].stop
    p1, p2, const = np.zeros(size), np.ones(size), np.zeros(len(params))
    for j, (p, sl) in enumerate(zip(params, slices, strict=True)):
        kind = p.prior[0]
        if kind == "normal":
            sd = float(p.prior[2])
            p1[sl] = np.broadcast_to(np.asarray(p.prior[1], np.float64), p.shape).ravel()
            p2[sl] = sd
            const[j] = -p.size * (math.log(sd) + _HALF_LOG_2PI)
        elif kind == "halfnormal":
            s = float(p.prior[1])
            p1[sl] = s
            const[j] = p.size * (0.5 * math.log(2.0 / math.pi) - math.log(s))
        else:  # gamma
            a, b = float(p.prior[1]), float(p.prior[2])
            p1[sl], p2[sl] = a, b
            const[j] = p.size * (a * math.log(b) - math.lgamma(a))
    code = np.array([_transforms.CODES[p.transform] for p in params], dtype=np.int64)
    start = np.array([sl.start for sl in slices], dtype=np.int64)
    end = np.array([sl.stop for sl in slices], dtype=np.int64)
    anchor = np.array([p.anchor for p in params], dtype=np.int64)
    prior = np.array([_transforms.PRIORS[p.prior[0]] for p in params], dtype=np.int64)
    return code, start, end, anchor, prior, const, p1, p2
