"""The one family table: every family's facets in one row, the other tables its views, and a
ready model's synthetic draws its family part's (one implementation).

The log-likelihood of each part against its ready model's PyMC graph is checked in
``tests/models/parts/test_density.py`` (``test_logp_grad_equals_pymc``)."""

from __future__ import annotations

import numpy as np
import pytest

from pseudopost.models import families
from pseudopost.models.families import FAMILIES, family
from pseudopost.models.file.choice import VALUE_FAMILIES
from pseudopost.models.file.declarations import FILE_MODELS, Declarations
from pseudopost.models.mixture import FAMILIES as MIXTURE_COMPONENTS
from pseudopost.models.parts import FAMILIES as PART_FAMILIES
from pseudopost.models.registry import (
    CATEGORICAL_FAMILIES,
    LOG_SCALE,
    MODEL_NAMES,
    categorical_spec,
    model_class,
)
from pseudopost.privacy import fused
from pseudopost.privacy.kernels import glm

WITH_BOTH = [f.name for f in FAMILIES.values() if f.model is not None and f.part is not None]


def test_every_family_names_a_real_model_and_part():
    for f in FAMILIES.values():
        if f.model is not None:
            cls = MODEL_NAMES[f.name]
            assert cls.__name__ == f.model
            if f.name != "mixture":  # a mixture's family is its component's, per instance
                assert cls.family == f.name
        if f.part is not None:
            assert f.part in PART_FAMILIES
    assert family("NB").name == "negative_binomial"
    assert family("log_normal").name == "lognormal"
    assert family("no such family") is None
    assert family(3) is None


def test_the_other_tables_are_views_of_the_one():
    rows = FAMILIES.values()
    assert set(MODEL_NAMES) == {f.name for f in rows if f.model is not None}
    assert LOG_SCALE == {"lognormal", "hurdle_lognormal"}
    assert CATEGORICAL_FAMILIES == {"logistic", "categorical", "dirichlet_categorical", "ordinal"}
    assert VALUE_FAMILIES == {
        "normal": "normal",
        "lognormal": "lognormal",
        "poisson": "poisson",
        "negative_binomial": "negative_binomial",
        "hurdle_lognormal": "lognormal",
        "hurdle_count": "zero_truncated_negative_binomial",
        "grid_ordinal": "cumulative",
        "binned": "binned",
    }
    assert set(FILE_MODELS) == {f.name for f in rows if f.part is not None} | {"auto"}
    assert "mixture" not in FILE_MODELS
    assert MIXTURE_COMPONENTS == ("normal", "lognormal")
    kernels = {k: v for k, v in fused._FAMILIES.items() if k in FAMILIES}
    assert kernels == {
        "normal": glm.CONT,
        "lognormal": glm.CONT,
        "poisson": glm.POISSON,
        "negative_binomial": glm.NEGBIN,
    }
    assert fused._FAMILIES["negbin"] == glm.NEGBIN  # aliases too
    for name in MODEL_NAMES:
        assert categorical_spec(name) == FAMILIES[name].categorical
    assert model_class("NegBin") is MODEL_NAMES["negative_binomial"]


def test_a_whole_file_accepts_the_aliases_and_refuses_a_family_without_a_part():
    assert Declarations.from_arguments(models={"x": "NB"}).models == {"x": "negative_binomial"}
    with pytest.raises(ValueError, match="has no column part"):
        Declarations.from_arguments(models={"x": "mixture"})
    with pytest.raises(ValueError, match="Unknown model name 'gamma'"):
        Declarations.from_arguments(models={"x": "gamma"})


def _params(name: str, p: int, rng) -> dict:
    """One draw's parameters of the ready model ``name`` with p predictors."""
    beta = rng.normal(scale=0.3, size=p)
    if name in ("normal", "lognormal", "hurdle_lognormal"):
        out = {"intercept": 0.5, "beta": beta, "sigma": 0.8}
    elif name in ("poisson", "logistic"):
        out = {"intercept": 0.5, "beta": beta}
    elif name in ("negative_binomial", "hurdle_count"):
        out = {"intercept": 0.5, "beta": beta, "phi": 3.0}
    elif name == "categorical":
        out = {"intercept": np.array([0.2, -0.4]), "beta": rng.normal(scale=0.3, size=(p, 2))}
    elif name == "ordinal":
        out = {"cutpoints": np.array([-0.5, 0.7]), "beta": beta}
    elif name == "dirichlet_categorical":
        out = {"p": np.array([0.2, 0.5, 0.3])}
    else:
        raise AssertionError(name)
    if name.startswith("hurdle"):
        out |= {"psi_intercept": 0.3, "psi_beta": rng.normal(scale=0.3, size=p)}
    return {k: np.asarray(v, dtype=float) for k, v in out.items()}


@pytest.mark.parametrize("name", WITH_BOTH)
def test_a_ready_models_draws_are_its_family_parts(name, monkeypatch):
    """The ready model synthesizes through its family's part: the same draws, and the part's
    ``sample`` is the one that runs (replacing it changes the ready model's draws)."""
    rng = np.random.default_rng(5)
    cls = MODEL_NAMES[name]
    p = 0 if name == "dirichlet_categorical" else 2
    model = cls("y") if p == 0 else cls("y", ["a", "b"])
    params = _params(name, p, rng)
    n = 400
    X = rng.normal(size=(n, p))
    u = rng.uniform(size=(n, model.uniforms_per_record))
    predictors = {"a": X[:, 0], "b": X[:, 1]} if p else {}
    got = model.sample_outcome(params, predictors, u)
    part = model.family_part(params)
    assert part.family == FAMILIES[name].part
    want = part.sample(params, X, u[:, -1])
    if name.startswith("hurdle"):
        assert ((got == 0) | (got == want)).all() and (got == 0).any() and (got > 0).any()
    else:
        np.testing.assert_array_equal(got, want)
    part_cls = type(part)
    monkeypatch.setattr(part_cls, "sample", lambda self, params, X, u: np.full(u.size, 7.0))
    again = model.sample_outcome(params, predictors, u)
    assert set(np.unique(again)) <= {0.0, 7.0} and (again == 7.0).any()


def test_the_table_imports_nothing_of_the_package():
    source = families.__file__
    with open(source) as fh:
        text = fh.read()
    assert "import pseudopost" not in text and "from pseudopost" not in text
