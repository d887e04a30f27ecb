"""The lighter releases (REPS, PRISM, entropy histogram) from their example specs: outputs,
privacy record, ledger with delta, reproducibility, and 'account' refusing them."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from pseudopost.cli import main
from pseudopost.release import Ledger
from pseudopost.release.run import sha256_file

FILES = {
    "synthetic-1.csv",
    "synthetic-2.csv",
    "privacy.json",
    "manifest.json",
    "report.html",
    "spec.toml",
}
DATA = {"reps": "breast_cancer_wdbc.csv", "prism": "german_credit.csv",
        "entropy": "breast_cancer_wdbc.csv"}  # fmt: skip
EPSILON = {"reps": 2.0, "prism": 2.0, "entropy": 1.0}
DELTA = {"reps": 1e-6, "prism": 1e-6, "entropy": 0.0}
COLUMNS = {
    "reps": ["mean_radius", "mean_texture", "mean_smoothness", "mean_concavity", "worst_area",
             "worst_symmetry", "diagnosis"],
    "prism": ["checking_status", "credit_history", "duration_months", "credit_amount",
              "savings", "age", "housing", "credit_risk"],
    "entropy": ["mean_radius", "mean_texture", "diagnosis"],
}  # fmt: skip
RELATION = {"reps": "null record", "prism": "replace-one", "entropy": "replace-one"}


def _privacy(out):
    return json.loads((out / "privacy.json").read_text())


@pytest.mark.parametrize("mechanism", list(DATA))
def test_example_release_is_complete(lighter_released, mechanism):
    out = lighter_released[mechanism]
    assert {p.name for p in out.iterdir()} == FILES  # no fit.nc: there is no posterior
    p = _privacy(out)
    assert p["mechanism"] == mechanism
    assert p["epsilon"] == pytest.approx(EPSILON[mechanism], rel=1e-12)
    assert p["delta"] == DELTA[mechanism]
    assert p["guarantee_kind"] == "global" and p["guarantee_type"].startswith("global")
    assert RELATION[mechanism] in p["neighbouring_relation"]
    # basic composition: the stages add up to the release's (epsilon, delta), m costs nothing
    assert sum(s["epsilon"] for s in p["stages"]) == pytest.approx(p["epsilon"], rel=1e-9)
    assert sum(s["delta"] for s in p["stages"]) <= p["delta"] * (1 + 1e-9)
    assert p["epsilon_total"] == p["epsilon"] and p["m"] == 2
    data = pd.read_csv(out.parent / "data" / DATA[mechanism])
    for j in (1, 2):
        syn = pd.read_csv(out / f"synthetic-{j}.csv")
        assert list(syn.columns) == COLUMNS[mechanism]
        assert syn.notna().all().all()
        assert len(syn) == len(data)  # n is public under these relations
    m = json.loads((out / "manifest.json").read_text())
    assert m["input"]["sha256"] == sha256_file(out.parent / "data" / DATA[mechanism])
    assert m["mechanism"] == mechanism and m["seed"] == 2026
    for name, digest in m["files"].items():
        assert sha256_file(out / name) == digest
    d = p["disclosure"][0]
    assert 0 <= d["unique_match_share"] <= 1 and 0 <= d["singled_out_share"] <= 1
    assert d["singled_out_share"] <= d["matched_share"]


def test_reps_reports_its_stages_and_per_statistic_budgets(lighter_released):
    p = _privacy(lighter_released["reps"])
    eps = [s["epsilon"] for s in p["stages"]]
    # 10 % scoring (half of it on the DP threshold), 90 % on the one Gaussian release
    assert eps == pytest.approx([0.1, 0.1, 0.0, 1.8, 0.0])
    stat = p["per_statistic_budgets"]
    assert stat["epsilon"] == pytest.approx(1.8) and stat["delta"] == pytest.approx(5e-7)
    assert {"weighted count", "mean of mean_radius", "second moment of worst_area"} <= {
        s["statistic"] for s in stat["statistics"]
    }
    assert stat["classes"] == ["B", "M"]
    models = p["utility"]["models"]
    assert all(0.5 <= r["TSTR AUROC"] <= 1 for r in models)  # the label is learnable


def test_prism_reports_its_pools(lighter_released):
    p = _privacy(lighter_released["prism"])
    pools = p["pools"]
    assert set(pools) <= {"sel", "mi", "task", "bg"} and {"sel", "task", "bg"} <= set(pools)
    assert sum(v["epsilon"] for v in pools.values()) == pytest.approx(2.0)
    assert pools["sel"]["epsilon"] == pytest.approx(0.2)  # 10 % for selecting k = 3 features
    assert len(p["prism"]["selected_features"]) == 3
    meas = p["prism"]["measurements"]
    assert sum(q["delta"] for q in meas) == pytest.approx(1e-6)


def test_entropy_reports_its_histogram(lighter_released):
    p = _privacy(lighter_released["entropy"])
    assert [s["epsilon"] for s in p["stages"]] == pytest.approx([0.9, 0.1, 0.0])
    h = p["histogram"]
    assert h["cells"] == 10 * 7 * 2
    ev = h["evaluation (reads the confidential counts)"]
    n = 569
    assert ev["theorem3_bound"] == pytest.approx((2 + 1 / math.log(2) + 2 * math.log2(n)) / n)
    assert 0 <= h["released_entropy_estimate_bits"] <= math.log2(140)


def test_ledger_records_epsilon_delta_and_guarantee(lighter_released, capsys):
    folder = lighter_released["reps"].parent
    content = Ledger(folder / "data" / "breast_cancer_wdbc.csv.ledger.json").read()
    assert content["format"] == "pseudopost-ledger/3" and content["total_delta"] == 1e-4
    by_mech = {e["mechanism"]: e for e in content["entries"]}
    assert by_mech["reps"]["charge"] == pytest.approx(2.0)
    assert by_mech["reps"]["delta_charge"] == 1e-6
    assert by_mech["entropy"]["delta_charge"] == 0.0
    assert {e["guarantee"] for e in content["entries"]} == {"global"}
    assert Ledger.spent(content) == pytest.approx(3.0)
    assert Ledger.spent_delta(content) == pytest.approx(1e-6)
    assert main(["ledger", str(folder / "data" / "breast_cancer_wdbc.csv")]) == 0
    shown = capsys.readouterr().out
    assert "total delta 0.0001; spent 1e-06" in shown and "global" in shown


@pytest.mark.parametrize("mechanism", list(DATA))
def test_same_seed_gives_byte_identical_synthetic_data(
    lighter_released, lighter_spec, tmp_path, mechanism
):
    spec = lighter_spec(tmp_path, mechanism)
    assert main(["synthesize", str(spec), "--out", str(tmp_path / "again")]) == 0
    for name in ("synthetic-1.csv", "synthetic-2.csv"):
        first = (lighter_released[mechanism] / name).read_bytes()
        assert (tmp_path / "again" / name).read_bytes() == first
    assert (tmp_path / "again" / "synthetic-1.csv").read_bytes() != (
        tmp_path / "again" / "synthetic-2.csv"
    ).read_bytes()  # m datasets are m different samples


def test_account_says_there_is_no_posterior(lighter_released, capsys):
    assert main(["account", str(lighter_released["prism"])]) == 2
    err = capsys.readouterr().err
    assert "no posterior to re-account" in err and err.count("\n") == 1


def test_delta_overspend_is_refused_before_any_work(lighter_released, lighter_spec, capsys):
    folder = lighter_released["reps"].parent
    ledger = folder / "data" / "breast_cancer_wdbc.csv.ledger.json"
    before = ledger.read_bytes()
    # epsilon fits (3 of 10 spent) but delta 9.995e-5 does not (1e-6 of 1e-4 spent)
    spec = lighter_spec(folder, "reps", "greedy.toml", mechanism={"delta": 9.995e-5})
    assert main(["synthesize", str(spec), "--out", str(folder / "greedy")]) == 3
    err = capsys.readouterr().err
    assert "budget refused" in err and "total delta" in err and err.count("\n") == 1
    assert not (folder / "greedy").exists() and ledger.read_bytes() == before
    spec = lighter_spec(folder, "entropy", "eps.toml", mechanism={"epsilon": 7.5})
    assert main(["validate", str(spec), "--out", str(folder / "x")]) == 3
    assert "only 7 of the total 10 remains" in capsys.readouterr().err
    spec = lighter_spec(folder, "reps", "other.toml", budget={"total_delta": 1e-3})
    assert main(["validate", str(spec), "--out", str(folder / "x")]) == 3
    assert "'budget.total_delta': expected the ledger's total 0.0001" in capsys.readouterr().err
    assert ledger.read_bytes() == before


def test_lighter_release_extends_an_old_pseudo_posterior_ledger(tmp_path, lighter_spec):
    """A format-1 ledger (no delta, no guarantee) is read, kept and upgraded by a commit."""
    spec = lighter_spec(tmp_path, "entropy")
    data = tmp_path / "data" / "breast_cancer_wdbc.csv"
    old = {
        "format": "pseudopost-ledger/1",
        "dataset_sha256": sha256_file(data),
        "total_epsilon": 10.0,
        "entries": [{"time": "2026-01-01T00:00:00+00:00", "out": "old", "m": 2,
                     "epsilon": 1.5, "charge": 3.0, "spec_sha256": "x",
                     "mechanism": "pseudo_posterior"}],
    }  # fmt: skip
    path = tmp_path / "data" / "breast_cancer_wdbc.csv.ledger.json"
    path.write_text(json.dumps(old))
    assert "not recorded" in Ledger(path).summary()
    assert main(["synthesize", str(spec), "--out", str(tmp_path / "out")]) == 0
    content = Ledger(path).read()
    assert content["format"] == "pseudopost-ledger/3" and content["total_delta"] == 1e-4
    assert content["entries"][0] == old["entries"][0]
    assert Ledger.spent(content) == pytest.approx(4.0)
    assert Ledger.spent_by_guarantee(content) == {"not recorded": 3.0, "global": 1.0}
