"""Malformed specs of the lighter releases: exit status 2, one line naming the key and the fix,
nothing created. No release runs in this module."""

from __future__ import annotations

import pandas as pd
import pytest

from pseudopost.cli import main
from pseudopost.release import load_spec, validate
from pseudopost.release.spec import resolve


def _bad_column(name, edit):
    def setup(folder):
        path = folder / "data" / name
        edit(pd.read_csv(path)).to_csv(path, index=False)

    return setup


# (id, mechanism, overrides for lighter_spec, setup(folder) or None, expected fragment)
CASES = [
    # REPS
    ("reps-no-label", "reps", {"drop": ["reps.label"]}, None, "spec key 'reps.label' is missing"),
    ("reps-label-absent", "reps", {"reps": {"label": "grade"}}, None,
     "spec key 'reps.label': expected a column of the data"),
    ("reps-feature-absent", "reps", {"reps": {"features": ["mean_radius", "radius"]}}, None,
     "spec key 'reps.features': expected a column of the data"),
    ("reps-label-as-feature", "reps", {"reps": {"features": ["mean_radius", "diagnosis"]}},
     None, "columns other than the label 'diagnosis'"),
    ("reps-delta-one", "reps", {"mechanism": {"delta": 1.0}}, None,
     "spec key 'mechanism.delta': expected a number in (0.0, 1.0), got 1.0"),
    ("reps-epsilon-zero", "reps", {"mechanism": {"epsilon": 0}}, None,
     "spec key 'mechanism.epsilon': expected a number > 0, got 0"),
    ("reps-epsilon-string", "reps", {"mechanism": {"epsilon": "2"}}, None,
     "spec key 'mechanism.epsilon': expected a number > 0, got '2'"),
    ("reps-unknown-key", "reps", {"reps": {"gama": 2.0}}, None,
     "spec key 'reps.gama': expected one of the keys"),
    ("reps-weight-map", "reps", {"reps": {"weight_map": "log"}}, None,
     "spec key 'reps.weight_map': expected one of ['hinge_exp'"),
    ("reps-targeted", "reps", {"reps": {"weight_map": "targeted"}}, None,
     "spec key 'reps.epsilon_out' is missing"),
    ("reps-model-section", "reps", {"model": {"family": "normal"}}, None,
     "the reps release has no [model]: its structure goes under [reps]"),
    ("reps-sampling-section", "reps", {"sampling": {"seed": 1}}, None,
     "put seed under [release]"),
    ("reps-max-epsilon", "reps", {"budget": {"max_epsilon": 2.0}}, None,
     "spec key 'budget.max_epsilon': expected one of the keys"),
    ("reps-no-total-delta", "reps", {"drop": ["budget.total_delta"]}, None,
     "spec key 'budget.total_delta' is missing"),
    ("reps-no-seed", "reps", {"drop": ["release.seed"]}, None,
     "spec key 'release.seed' is missing"),
    ("reps-over-total", "reps", {"mechanism": {"epsilon": 12.0}}, None,
     "spec key 'mechanism.epsilon': expected at most budget.total_epsilon = 10.0"),
    ("reps-missing-values", "reps", None,
     _bad_column("breast_cancer_wdbc.csv", lambda d: d.assign(mean_radius=None)),
     "column 'mean_radius' has 569 missing value(s)"),
    # PRISM
    ("prism-no-parents", "prism", {"prism": {"regime": "causal"}, "drop": ["prism.k"]}, None,
     "spec key 'prism.parents' is missing: regime = \"causal\" needs it"),
    ("prism-parents-absent", "prism",
     {"prism": {"regime": "causal", "parents": ["income"]}, "drop": ["prism.k"]}, None,
     "spec key 'prism.parents': expected a released feature column"),
    ("prism-k-too-large", "prism", {"prism": {"k": 9}}, None,
     "spec key 'prism.k': expected at most the number of features d = 7, got 9"),
    ("prism-dag-outside", "prism",
     {"prism": {"regime": "graphical", "dag": {"credit_risk": ["job"]}}, "drop": ["prism.k"]},
     None, "spec key 'prism.dag': expected a DAG whose Markov blanket"),
    ("prism-k-with-parents", "prism", {"prism": {"parents": ["age"]}}, None,
     "spec key 'prism.parents': expected no 'parents' with regime = \"predictive\""),
    ("prism-target-absent", "prism", {"prism": {"target": "risk"}}, None,
     "spec key 'prism.target': expected a column of the data"),
    ("prism-backend", "prism", {"prism": {"backend": "ctgan"}}, None,
     "spec key 'prism.backend': expected one of ['pgm', 'naive_bayes']"),
    ("prism-pools", "prism", {"prism": {"pools": {"sel": 0.5, "mi": 0.5, "task": 0.5, "bg": 0}}},
     None, "spec key 'prism.pools': expected fractions"),
    ("prism-dp-bins-unbounded", "prism", {"prism": {"bins": {"age": 5}}}, None,
     "spec key 'prism.bins.age' asks for 5 DP bins, which need public bounds"),
    ("prism-bad-edges", "prism", {"prism": {"bins": {"age": [80, 18]}}}, None,
     "spec key 'prism.bins.age': expected a bin count >= 2 or a list of >= 2 increasing edges"),
    ("prism-too-many-levels", "prism", {"prism": {"bins": {"age": [18, 80]}}}, None,
     "Column 'credit_amount' has 921 distinct values (> max_levels=100); give it bins"),
    ("prism-text-levels", "prism", None,
     _bad_column("german_credit.csv", lambda d: d.assign(housing=[f"h{i}" for i in range(1000)])),
     "Column 'housing' has 1000 distinct values"),
    # entropy
    ("entropy-no-bins", "entropy", {"entropy": {"columns": ["mean_radius", "mean_texture", "diagnosis", "mean_area"]}}, None,
     "spec key 'entropy.bins.mean_area' is missing: numeric column 'mean_area' needs public"),
    ("entropy-column-absent", "entropy", {"entropy": {"columns": ["mean_radius", "mean_texture", "diagnosis", "radius"]}},
     None, "spec key 'entropy.columns': expected a column of the data"),
    ("entropy-gaussian-no-delta", "entropy", {"entropy": {"noise": "gaussian"}}, None,
     "spec key 'mechanism.delta' is missing: entropy.noise = \"gaussian\" needs delta"),
    ("entropy-laplace-delta", "entropy", {"mechanism": {"delta": 1e-6}}, None,
     "spec key 'mechanism.delta': expected no delta with Laplace noise"),
    ("entropy-share-add-remove", "entropy", {"entropy": {"neighbouring": "add-remove"}}, None,
     "spec key 'entropy.entropy_share': expected 0 under add/remove neighbours"),
    ("entropy-too-many-cells", "entropy", {"entropy": {"max_cells": 100}}, None,
     "has 140 cells, more than max_cells = 100"),
    ("entropy-count-no-bounds", "entropy", {"entropy": {"bounds": {"mean_texture": [0, 40]}}},
     None, "spec key 'entropy.bins.mean_radius' is a bin count and needs public bounds"),
    ("entropy-level-outside", "entropy", {"entropy": {"domain": {"diagnosis": ["B"]}}}, None,
     "Column 'diagnosis' holds value(s) ['M'] outside its declared domain"),
    ("entropy-disclosure-key", "entropy", {"disclosure": {"keys": ["mean_area"]}}, None,
     "spec key 'disclosure.keys': expected one of the released columns"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mechanism", "overrides", "setup", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_malformed_lighter_spec_exits_2_with_one_line(
    tmp_path, capsys, lighter_spec, mechanism, overrides, setup, expected
):
    spec = lighter_spec(tmp_path, mechanism, **(overrides or {}))
    if setup is not None:
        setup(tmp_path)
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    status = main(["synthesize", str(spec), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert status == 2, err
    assert err.count("\n") == 0, err
    assert err.startswith("pseudopost: error: ")
    assert expected in err
    assert "Fix:" in err
    after = sorted(
        str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if not p.name.endswith(".lock")
    )
    assert after == before  # no output folder, no ledger


@pytest.mark.parametrize("mechanism", ["reps", "prism", "entropy"])
def test_example_spec_resolves(tmp_path, lighter_spec, mechanism):
    spec = load_spec(lighter_spec(tmp_path, mechanism), out=tmp_path / "out")
    assert spec.mechanism == mechanism and spec.settings.epsilon > 0
    data = validate(spec)
    full = resolve(spec, data)
    assert full.columns and all(c in data.columns for c in full.columns)
    assert full.disclosure_sensitive not in full.disclosure_keys
    if mechanism != "entropy":
        assert full.settings.target in full.columns
    assert not spec.out.exists() and not spec.ledger_path.exists()


def test_reps_delta_defaults_to_one_over_n_squared(tmp_path, lighter_spec):
    spec = load_spec(lighter_spec(tmp_path, "reps", drop=["mechanism.delta"]), out=tmp_path / "o")
    assert spec.settings.delta is None
    assert resolve(spec, validate(spec)).settings.delta == pytest.approx(1 / 569**2)
