r"""A nutpie model of a part's whitened posterior whose gradient nutpie calls as compiled code.

:func:`callback_model` is :func:`~pseudopost.fitting.parts.preconditioned_model` for the parts
with a compiled callback (:func:`~pseudopost.models.parts.callback.has_callback`): the same
density in the same variables :math:`z` (:math:`x = x_0 + L z`), the same shared data swapped
by ``with_data`` (the statistics' arrays and the whitening), the same expanded draws, but
nutpie's Rust threads call the Numba C callback of
:mod:`pseudopost.models.parts.callback` directly, as they call a PyMC model nutpie compiled
with Numba, instead of a Python function: no interpreter, no GIL, so the chains and the parts
fitted at once run side by side. The sampler and its draws are unchanged (the callback equals
:meth:`Part.logp_grad <pseudopost.models.parts.base.Part.logp_grad>` to rounding; tested).

It is nutpie's own ``CompiledPyMCModel`` with the callbacks and the table of array addresses
as ``user_data``; nutpie keeps a reference to the model, and so to its arrays, while it
samples. It relies on the fields of nutpie 0.16's ``CompiledPyMCModel`` (``user_data``,
``shape_info``, the callbacks' ``address``), which ``pyproject.toml`` pins (``<0.17``); a nutpie
upgrade must pass ``tests/models/parts/test_callback.py``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from nutpie.compile_pymc import CompiledPyMCModel

from pseudopost.models.parts import Part
from pseudopost.models.parts.callback import (
    callback_arrays,
    expand_callback,
    logp_callback,
    table,
)

__all__ = ["CallbackModel", "callback_model"]

#: shared-data names of the whitening beside the statistics' arrays (as
#: :func:`~pseudopost.fitting.parts.preconditioned_model`'s)
X0, L_ = "__laplace_x0", "__laplace_L"


@dataclasses.dataclass(frozen=True)
class CallbackModel(CompiledPyMCModel):
    """nutpie's compiled model on the callback; ``with_data`` takes the statistics' arrays and
    the whitening (``__laplace_x0``, ``__laplace_L``) by name, as the Python model does."""

    part: Part | None = dataclasses.field(default=None, kw_only=True)

    def with_data(self, **updates):
        data = {**self.shared_data["inputs"], **updates}
        return _built(self, self.part, data)


def _built(base: CallbackModel | None, part: Part, data: dict[str, np.ndarray]):
    arrays = {k: v for k, v in data.items() if k not in (X0, L_)}
    cb = callback_arrays(part, arrays, data[X0], data[L_])
    tab = table(cb)
    shared = {"inputs": data, "callback": cb, "table": tab}
    if base is not None:
        return dataclasses.replace(base, shared_data=shared, user_data=tab)
    layout = part.layout
    d = layout.size

    def initial(seed):
        return np.random.default_rng(seed).uniform(-1.0, 1.0, d)

    names = list(layout.names)
    shapes = [tuple(s) for s in layout.shapes]
    return CallbackModel(
        dims=part.dims(),
        _n_dim=d,
        _coords=part.coords(),
        _shapes=dict(zip(names, shapes, strict=True)),
        compiled_logp_func=logp_callback(),
        compiled_expand_func=expand_callback(),
        initial_point_func=initial,
        shared_data=shared,
        shared_var_keys={},
        user_data=tab,
        n_expanded=d,
        shape_info=(names, [layout.slices[n] for n in names], shapes),
        logp_func=None,
        expand_func=None,
        part=part,
    )


def callback_model(part: Part, arrays: dict[str, np.ndarray]) -> CallbackModel:
    """The nutpie model of the part's posterior given its statistics' ``arrays``
    (:func:`~pseudopost.fitting.parts.shared_data`) in whitened variables (the identity
    whitening until ``with_data`` passes one)."""
    d = part.layout.size
    return _built(None, part, {**arrays, X0: np.zeros(d), L_: np.eye(d)})
