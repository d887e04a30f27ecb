"""A new mechanism is one adapter plus its registry line: a tiny adapter registered here runs
end to end through the command (spec, validate, run, ledger, privacy.json, report, CLI,
account), with nothing in run.py, cli.py or report.py knowing it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest

from pseudopost.cli import main
from pseudopost.privacy.statement import REPLACE_ONE, PrivacyStatement
from pseudopost.release import ADAPTERS, Ledger, MechanismAdapter, ReleaseError, run_release
from pseudopost.release.adapters import Produced
from pseudopost.release.measures import Measures, fully_synthetic, spec_args
from pseudopost.release.report import ReportParts, note
from pseudopost.release.schema import Schema, fail, pair

N = 22  # rows of the shipped fatigue data


@dataclass
class NoisyMean:
    """Each synthetic dataset is a fresh Laplace release of the clipped mean of one column
    (replace-one, n public: sensitivity (high - low) / n), repeated n times. Per dataset, so m
    datasets cost m epsilon."""

    column: str
    bounds: tuple[float, float]
    epsilon: float
    overspend: bool = False
    mean_: float = field(init=False, default=np.nan)
    n_: int = field(init=False, default=0)

    def fit(self, frame: pd.DataFrame) -> NoisyMean:
        lo, hi = self.bounds
        self.mean_ = float(np.clip(frame[self.column].to_numpy(float), lo, hi).mean())
        self.n_ = len(frame)
        return self

    @property
    def scale(self) -> float:
        return (self.bounds[1] - self.bounds[0]) / (self.n_ * self.epsilon)

    def sample(self, seed) -> pd.DataFrame:
        value = self.mean_ + np.random.default_rng(seed).laplace(scale=self.scale)
        return pd.DataFrame({self.column: np.full(self.n_, value)})

    @property
    def privacy_statement(self) -> PrivacyStatement:
        return PrivacyStatement(
            mechanism="noisy_mean",
            epsilon=self.epsilon * (3.0 if self.overspend else 1.0),
            delta=0.0,
            neighbouring=REPLACE_ONE,
            scope="global",
            unit="dataset",
            assumptions=("n is public", "the bounds are public"),
            source="the Laplace mechanism (Dwork et al. 2006)",
        )


@dataclass(frozen=True)
class Settings:
    column: str
    bounds: tuple[float, float]
    epsilon: float
    overspend: bool
    seed: int


class NoisyMeanAdapter(MechanismAdapter):
    name = "noisy_mean"
    sections: ClassVar[Mapping[str, Schema]] = {
        "mechanism": {"name": (True, "str"), "epsilon": (True, "posfloat")},
        "noisy_mean": {
            "column": (True, "str"),
            "bounds": (True, pair),
            "overspend": (False, "bool"),
        },
    }
    required = ("mechanism", "noisy_mean")
    release_keys: ClassVar[Schema] = {"seed": (True, "nonnegint")}
    release_required = True

    def parse(self, sections):
        sec = sections["noisy_mean"]
        return Settings(
            sec["column"],
            sec["bounds"],
            sections["mechanism"]["epsilon"],
            sec.get("overspend", False),
            sections["release"]["seed"],
        )

    def cap(self, spec):
        return spec.m * spec.settings.epsilon, 0.0

    def check_data(self, spec, frame):
        if spec.settings.column not in frame.columns:
            raise fail("noisy_mean.column", spec.settings.column, "a column of the data")

    def resolve(self, spec, frame):
        from dataclasses import replace

        col = spec.settings.column
        return replace(spec, released=(col,), disclosure_keys=(col,), disclosure_sensitive="")

    def fit(self, spec, data, progress=None):
        st = spec.settings
        return Produced(NoisyMean(st.column, st.bounds, st.epsilon, st.overspend).fit(data))

    def synthesize(self, spec, produced):
        seeds = np.random.SeedSequence(spec.seed).spawn(spec.m)
        return [produced.result.sample(s) for s in seeds]

    def measures(self, spec, data, synthetic) -> Measures:
        return fully_synthetic(data, synthetic, target=None, **spec_args(spec))

    def privacy_record(self, spec, produced) -> dict[str, Any]:
        return {"laplace_scale": produced.result.scale, "stages": []}

    def report_parts(self, spec, produced, privacy) -> ReportParts:
        return ReportParts(
            facts={"Laplace scale": f"{privacy['laplace_scale']:.4g}"},
            before=[note("The noisy mean of one column, released afresh for each dataset.")],
        )


SPEC = """
[data]
path = "fatigue.csv"

[mechanism]
name = "noisy_mean"
epsilon = 0.5

[noisy_mean]
column = "stress"
bounds = [0.0, 1.0]
{extra}

[release]
m = 3
seed = 11
out = "out"

[budget]
total_epsilon = 4.0
"""


@pytest.fixture
def dummy(monkeypatch):
    """The adapter registered for the test only."""
    monkeypatch.setitem(ADAPTERS, "noisy_mean", NoisyMeanAdapter())


def _spec(folder, extra=""):
    path = folder / "spec.toml"
    path.write_text(SPEC.format(extra=extra))
    return path


def test_a_registered_adapter_runs_end_to_end(dummy, workdir, capsys):
    spec = _spec(workdir)
    assert main(["validate", str(spec)]) == 0
    out = capsys.readouterr().out
    assert "spec OK: noisy_mean release of 1 columns on fatigue.csv (22 rows), m = 3" in out
    assert "up to epsilon 1.5 from ledger" in out  # m x epsilon: a statement per dataset

    outcome = run_release(spec)
    files = {p.name for p in outcome.out.iterdir()}
    assert files == {
        "synthetic-1.csv",
        "synthetic-2.csv",
        "synthetic-3.csv",
        "privacy.json",
        "manifest.json",
        "report.html",
        "spec.toml",
    }
    # the seed flows: dataset j is the clipped mean plus the Laplace draw of child j
    data = pd.read_csv(workdir / "fatigue.csv")
    mean = float(np.clip(data["stress"], 0.0, 1.0).mean())
    scale = 1.0 / (N * 0.5)
    for j, s in enumerate(np.random.SeedSequence(11).spawn(3), start=1):
        syn = pd.read_csv(outcome.out / f"synthetic-{j}.csv")
        assert len(syn) == N and syn["stress"].nunique() == 1
        expected = mean + np.random.default_rng(s).laplace(scale=scale)
        assert syn["stress"].iloc[0] == pytest.approx(expected, rel=1e-12)

    # privacy.json: the adapter's record, the statement, the measures
    p = json.loads((outcome.out / "privacy.json").read_text())
    assert p["mechanism"] == "noisy_mean" and p["m"] == 3
    assert p["laplace_scale"] == pytest.approx(scale)
    assert p["guarantee_kind"] == "global"
    assert PrivacyStatement.from_dict(p["statement"]).unit == "dataset"
    assert len(p["utility"]["marginals"]) == 3 and len(p["disclosure"]) == 3

    # the ledger charges statement.charge(m) = (3 x 0.5, 0) and keeps the statement
    (entry,) = Ledger(workdir / "fatigue.csv.ledger.json").read()["entries"]
    assert entry["charge"] == pytest.approx(1.5) and entry["delta_charge"] == 0.0
    assert entry["epsilon"] == 0.5 and entry["guarantee"] == "global"
    assert entry["statement"] == p["statement"]
    assert outcome.charge == pytest.approx(1.5) and outcome.statement.mechanism == "noisy_mean"

    page = (outcome.out / "report.html").read_text()
    for text in ("Laplace scale", "released afresh", "Disclosure risk", "global 0.5-DP"):
        assert text in page

    # the command reads the unit, not the numbers: m = 1 charges epsilon, still per dataset
    one = workdir / "one.toml"
    one.write_text(SPEC.format(extra="").replace("m = 3", "m = 1").replace('"out"', '"one"'))
    assert main(["synthesize", str(one)]) == 0
    shown = capsys.readouterr().out
    assert "epsilon per dataset = 0.5 (global); charged = 0.5" in shown

    # 'account' asks the adapter, which has no posterior to re-account
    assert main(["account", str(outcome.out)]) == 2
    err = capsys.readouterr().err
    assert "holds a noisy_mean release: there is no posterior to re-account" in err
    assert "global 0.5-DP per synthetic dataset" in err and err.count("\n") == 1


def test_its_spec_keys_are_checked_by_the_one_loader(dummy, workdir, capsys):
    for extra, message in (
        ("colour = 1", "spec key 'noisy_mean.colour': expected one of the keys"),
        ("overspend = 2", "spec key 'noisy_mean.overspend': expected true or false, got 2"),
    ):
        assert main(["validate", str(_spec(workdir, extra))]) == 2
        assert message in capsys.readouterr().err
    bounds = _spec(workdir).read_text().replace("[0.0, 1.0]", "[1.0, 0.0]")
    (workdir / "spec.toml").write_text(bounds)
    assert main(["validate", str(workdir / "spec.toml")]) == 2
    assert "spec key 'noisy_mean.bounds': expected a list [low, high]" in capsys.readouterr().err


def test_a_statement_above_the_cap_is_refused_after_the_fit(dummy, workdir, capsys):
    ledger = workdir / "fatigue.csv.ledger.json"
    spec = _spec(workdir, "overspend = true")
    assert main(["synthesize", str(spec)]) == 4
    err = capsys.readouterr().err
    assert "the noisy_mean release charges (epsilon, delta) = (4.5, 0)" in err
    assert "above its declared cap (1.5, 0)" in err
    assert not (workdir / "out").exists() and not ledger.exists()
    with pytest.raises(ReleaseError):
        run_release(spec)
