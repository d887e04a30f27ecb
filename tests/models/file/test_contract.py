"""The model contract (:func:`pseudopost.checks.check_model`) on the whole-file model, the model
behind ``pp.synthesize``: its capabilities are ``"parts"`` and ``"levels"`` (no joint PyMC
model, so no ``build``), each is checked, and each of its checks can fail. The mechanism asks
for the capability, not the class."""

from __future__ import annotations

import numpy as np
import pytest

from pseudopost import PseudoPosterior
from pseudopost.checks import (
    CHECKS,
    BuiltModel,
    LevelsModel,
    ModelCheckError,
    PartsModel,
    capabilities,
    check_model,
)
from pseudopost.models import NormalRegression, SynthModel
from pseudopost.models.file import FileModel

from .conftest import survey

RULE = "wage is missing when employed == 'no'"
ZERO = "employed == 'yes' and age < 18"


def _declared() -> FileModel:
    """Codes, a rule, a structural zero (a masked part), a spike, a kept and a dropped column."""
    return FileModel(
        missing_codes={"wage": [-9]}, rules=[RULE], structural_zeros=[ZERO], spikes={"hours": [0]},
        keep=["sex"], drop=["gains"],
    )  # fmt: skip


def _assert_complete(report):
    assert report.capabilities == ("parts", "levels")
    assert set(report.passed) == set(CHECKS) - {"ranges"}
    assert "single outcome" in report.skipped["ranges"]
    assert np.isfinite(report.epsilon) and report.epsilon > 0


def test_capabilities_split_the_protocol():
    model = FileModel()
    assert capabilities(model) == ("parts", "levels")
    assert isinstance(model, PartsModel) and isinstance(model, LevelsModel)
    assert not isinstance(model, BuiltModel) and not hasattr(model, "build")
    assert capabilities(NormalRegression("y")) == ("pymc",)


def test_file_model_passes_the_contract_on_random_points(frame):
    _assert_complete(check_model(_declared(), frame, draws="points", seed=3))


def test_file_model_passes_the_contract_through_the_mechanism():
    """Both fits, risk, weights, the parts' accountant and synthesis; twice with one seed."""
    _assert_complete(check_model(FileModel(), survey(120), seed=3))


# -- every check of a parts model can fail ------------------------------------------------------
class _ShiftedLevels(FileModel):
    def level_groups(self, prepared):
        return {k: np.where(g >= 0, g + 1, g) for k, g in super().level_groups(prepared).items()}


class _OtherIteration(FileModel):
    def iter_part_data(self, prepared):
        pairs = list(super().iter_part_data(prepared))
        return iter([pairs[-1], *pairs[:-1]])


class _Unseeded(FileModel):
    def simulate(self, prepared, base, posterior, chosen, seed):
        return super().simulate(
            prepared, base, posterior, chosen, np.random.default_rng().integers(2**62)
        )


@pytest.mark.parametrize(
    ("broken", "check", "capability"),
    [(_ShiftedLevels, "validation", "levels"), (_OtherIteration, "validation", "parts"),
     (_Unseeded, "seed", None)],
)  # fmt: skip
def test_a_broken_file_model_fails_the_check_it_breaks(frame, broken, check, capability):
    with pytest.raises(ModelCheckError, match=rf"^\[{check}\] ") as err:
        check_model(broken(), frame, draws="points")
    assert (err.value.check, err.value.capability) == (check, capability)


def test_broken_machinery_fails_its_check(frame, monkeypatch):
    """The statistics the mechanism fits and its fused record function wrong in turn."""
    from pseudopost import checks

    statistics_data = checks.statistics_data
    monkeypatch.setattr(checks, "statistics_data", lambda p, d, w: statistics_data(p, d, w**2))
    with pytest.raises(ModelCheckError, match=r"^\[weighting\] .*\(capability 'parts'\)"):
        check_model(FileModel(), frame, draws="points")
    monkeypatch.undo()

    class _Scaled(checks.PartAccountant):
        def __call__(self, draws, *a, **k):
            return 1.001 * super().__call__(draws, *a, **k)

    monkeypatch.setattr(checks, "PartAccountant", _Scaled)
    with pytest.raises(ModelCheckError, match=r"^\[loglik\] .*\(capability 'parts'\)"):
        check_model(FileModel(), frame, draws="points")


def test_options_a_parts_model_cannot_honour_are_refused(frame):
    n = len(frame)
    for kw in ({"reference": lambda d: None}, {"ranges": (np.zeros(n), np.ones(n))}):
        with pytest.raises(ValueError, match=r"fitted by parts \(capability 'parts'\)"):
            check_model(FileModel(), frame, draws="points", **kw)


# -- the mechanism asks for the capability, not the class ---------------------------------------
class _Delegating(SynthModel):
    """A whole-file model by delegation (not a FileModel): the same capabilities."""

    def __init__(self) -> None:
        self.inner = FileModel()

    @property
    def observed(self):
        return self.inner.observed

    @property
    def columns(self):
        return self.inner.columns

    def prepare(self, data):
        return self.inner.prepare(data)

    def to_frame(self, prepared, predictive):
        return self.inner.to_frame(prepared, predictive)

    def simulate(self, prepared, base, posterior, chosen, seed):
        return self.inner.simulate(prepared, base, posterior, chosen, seed)

    def parts(self, prepared):
        return self.inner.parts(prepared)

    def part_data(self, prepared):
        return self.inner.part_data(prepared)

    def iter_part_data(self, prepared):
        return self.inner.iter_part_data(prepared)

    def level_groups(self, prepared):
        return self.inner.level_groups(prepared)


def test_a_parts_model_of_another_class_takes_the_parts_path(frame):
    model = _Delegating()
    assert capabilities(model) == ("parts", "levels")
    PseudoPosterior(model, risk_fit="laplace", weighted_fit="imh")  # parts-only options
    with pytest.raises(ValueError, match="not available for it"):
        PseudoPosterior(model, likelihood="full")
    _assert_complete(check_model(model, frame, draws="points", seed=3))


def test_prepare_never_changes_the_model(frame):
    """One model serves any number of frames: preparing one leaves the model as it was, and
    each prepared frame carries its own visit order and columns."""
    import copy

    model = FileModel(keep=["region"])
    before = copy.deepcopy(vars(model))
    first = model.prepare(frame)
    second = model.prepare(frame.drop(columns=["health"]))
    assert vars(model).keys() == before.keys()
    assert model.declarations == before["declarations"]
    assert (model.observed, model.columns) == ((), ["region"])
    assert "health" in first.plan.order and "health" not in second.plan.order
    assert "region" in first.plan.kept
