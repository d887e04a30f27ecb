"""A whole-file release from a spec: per-column declarations, rules and zeros as data, the
all-or-nothing folder with its report of code and spike shares and rule violations, SPSS
input written back with its labels, the accountant re-run, and the examples validated."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pseudopost.fitting.parts import HOW_DRAWN
from pseudopost.release import SpecError, account_release, load_spec, run_release, validate

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _frame(n=250, seed=1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(16, 80, n)
    employed = np.where(age < 18, "no", rng.choice(["yes", "no"], n, p=[0.7, 0.3]))
    wage = np.round(np.round(rng.lognormal(2.5, 0.5, n) / 0.25) * 0.25, 2)  # on a 0.25 grid
    wage = np.where(employed == "no", np.nan, wage)
    wage = np.where((employed == "yes") & (rng.random(n) < 0.1), -9.0, wage)
    region = rng.choice(["north", "south", "east"], n).astype(object)
    region[rng.random(n) < 0.1] = None
    return pd.DataFrame({"age": age, "region": region, "employed": employed, "wage": wage})


SPEC = """
[data]
path = "{data}"

[mechanism]
name = "whole_file"
weight_floor = 0.5
floor_cost = true

[file]
rules = ["wage is missing when employed == 'no'"]
structural_zeros = ["employed == 'yes' and age < 18"]

[file.columns.wage]
model = "lognormal"
codes = [-9]
grid = {{step = 0.25, digits = 2}}
heaps = [4]

[file.columns.age]
knots = [30, 50]

[sampling]
draws = 60
tune = 60
chains = 1
seed = 5

[release]
m = 2
out = "out"

[budget]
total_epsilon = 5000.0
max_epsilon = 1000.0
total_delta = 1e-4

[disclosure]
keys = ["age", "region"]
sensitive = "employed"
"""


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    folder = tmp_path_factory.mktemp("whole")
    _frame().to_csv(folder / "survey.csv", index=False)
    spec = folder / "spec.toml"
    spec.write_text(SPEC.format(data="survey.csv"))
    outcome = run_release(spec)
    return folder, outcome


def test_release_folder_privacy_record_and_report(released):
    folder, outcome = released
    out = folder / "out"
    assert {p.name for p in out.iterdir()} >= {
        "synthetic-1.csv", "synthetic-2.csv", "privacy.json", "fit.nc", "manifest.json",
        "report.html", "spec.toml",
    }  # fmt: skip
    p = json.loads((out / "privacy.json").read_text())
    assert p["mechanism"] == "whole_file" and p["weight_floor"] == 0.5
    raised = p["weights_raised_by_floor"]
    assert isinstance(raised, int) and 0 <= raised <= 2 * len(pd.read_csv(out / "synthetic-1.csv"))
    assert f"weights raised by the floor</th><td>{raised}<" in (out / "report.html").read_text()
    assert p["epsilon_per_dataset"] == pytest.approx(outcome.epsilon)
    assert {r["column"] for r in p["parts"]} == {"age", "region", "employed", "wage"}
    shares = p["utility"]["missing codes and spikes: real and synthetic shares"]
    wage = {(r["dataset"], r["status"]): r for r in shares if r["column"] == "wage"}
    assert {s for _, s in wage} == {"missing", "-9", "off the heaps", "multiple of 4 steps"}
    broken = p["utility"]["rules and structural zeros: synthetic records breaking them"]
    assert len(broken) == 4 and all(r["violations"] == 0 for r in broken)
    assert {"S_pMSE", "pMSE"} <= set(p["utility"]["propensity score (S_pMSE, CART)"][0])
    assert {"repU", "DiSCO"} <= set(p["disclosure"][0])
    page = (out / "report.html").read_text()
    assert "Columns and their parts" in page and "weight floor" in page
    # how each part was drawn: every part of the weighted fit named, by a sampler the
    # accountant can read (no approximate draws), in privacy.json and the report
    drawn = p["parts_drawn"]
    assert set(drawn["weighted"]) == set(drawn["risk"]) and len(drawn["weighted"]) >= 4
    assert set(drawn["weighted"].values()) <= {
        "exact", "imh", "nuts", "nuts low-rank", "nuts twice", "nuts twice unmixed"
    }  # fmt: skip
    assert set(drawn["risk"].values()) <= set(HOW_DRAWN)
    assert "How each part was drawn" in page and "weighted s" in page
    # the verdicts lead the measures: each beside its reference, the worst tables named
    assert page.index("<h2>Verdicts</h2>") < page.index("<h2>Utility</h2>")
    verdicts = {r["measure"]: r for r in p["verdicts"]}
    spmse = [r["S_pMSE (synthpop's null)"] for r in p["utility"]["propensity score (S_pMSE, CART)"]]
    assert float(verdicts["S_pMSE (CART propensity, synthpop's null)"]["value"]) == pytest.approx(
        np.mean(spmse), rel=1e-2
    )
    pairs = verdicts["worst pairs (two-way tables), S_pMSE"]["value"]
    assert pairs.count(":") == 3  # three pairs named as "a:b (S_pMSE)"
    assert verdicts["synthetic records breaking a declared rule or zero"]["value"] == "0"
    assert "Dorig" in verdicts["DiSCO (% of real records disclosed, correct)"]["reference"]
    syn = pd.read_csv(out / "synthetic-1.csv")
    assert syn.wage[syn.employed == "no"].isna().all()
    assert not ((syn.employed == "yes") & (syn.age < 18)).any()
    assert set(syn.wage.dropna()[syn.wage.dropna() < 0]) <= {-9.0}
    # the declared grid: every synthetic wage value on it, and the choices table says so
    w = syn.wage[syn.wage > 0]
    np.testing.assert_array_equal(np.round(np.rint(w / 0.25) * 0.25, 2), w)
    assert "round(k * 0.25, 2)" in page and "heaps at multiples of 4 grid steps" in page
    assert "wage.heap (bernoulli)" in page


def test_structure_stage_in_the_record_ledger_and_report(released):
    """The structure stage (default structure_epsilon = 1) is paid once and recorded: the
    statement and privacy.json carry its epsilon, the ledger charges m x epsilon + it, the
    report states it, and every synthetic age lies in its DP support."""
    folder, outcome = released
    out = folder / "out"
    p = json.loads((out / "privacy.json").read_text())
    se = p["structure_epsilon"]
    assert 0 < se <= 1.0 and p["statement"]["structure_epsilon"] == pytest.approx(se)
    assert p["structure"]["epsilon"] == pytest.approx(se) and p["structure"]["budget"] == 1.0
    # age (integers, no declared model) is free; wage (declared model and grid) is not
    assert set(p["structure"]["columns"]) == {"age"}
    age = p["structure"]["columns"]["age"]
    # over its integers, or binned when a small file's loose DP bounds hold over 201 of them
    assert age["model"] in ("grid_ordinal", "binned")
    assert age["integer"] and age["sources"]["support"].startswith("DP")
    assert p["stages"][0]["epsilon"] == pytest.approx(se)
    assert p["epsilon_total"] == pytest.approx(2 * outcome.epsilon + se)
    assert outcome.charge == pytest.approx(2 * outcome.epsilon + se)
    ledger = json.loads((folder / "survey.csv.ledger.json").read_text())
    entry = ledger["entries"][-1]
    assert entry["charge"] == pytest.approx(2 * entry["epsilon"] + se)
    assert entry["statement"]["structure_epsilon"] == pytest.approx(se)
    lo, hi = age["support"]
    for j in (1, 2):
        syn = pd.read_csv(out / f"synthetic-{j}.csv")
        assert lo <= syn.age.min() and syn.age.max() <= hi
        assert (syn.age == np.round(syn.age)).all()
    page = (out / "report.html").read_text()
    assert "Structure stage" in page and "structure stage epsilon (once per release)" in page
    assert "piles on the bound" in page and "coded to it" not in page


def test_structure_is_the_same_for_validate_fit_and_account(tmp_path):
    """Seeded from the spec: the same structure each call (validate, fit, account)."""
    from pseudopost.release.adapters import ADAPTERS

    _frame().to_csv(tmp_path / "survey.csv", index=False)
    (tmp_path / "spec.toml").write_text(SPEC.format(data="survey.csv"))
    spec = load_spec(tmp_path / "spec.toml")
    data = validate(spec)
    adapter = ADAPTERS["whole_file"]
    a, b = adapter.structure_for(spec, data), adapter.structure_for(spec, data)
    assert a.structure.to_dict() == b.structure.to_dict()
    pd.testing.assert_frame_equal(a.frame, b.frame)
    assert a.structure.columns["age"].support[0] >= 0
    age = a.structure.columns["age"]
    if age.model == "grid_ordinal":
        assert a.declarations["grid"]["age"]["bounds"] == list(age.support)
    else:
        assert a.declarations["bins"]["age"] == list(age.bins)
        assert a.declarations["grid"]["age"] == {"step": 1}


def test_declared_levels_cost_nothing_and_a_value_outside_them_is_refused(tmp_path):
    """``[file.columns.region] levels``, a codebook's answer categories: the column becomes a
    categorical of them, the structure stage selects nothing for it (no charge, no delta) and
    does not warn about it; the input file is untouched; a cell outside them is refused before
    any work, naming the column, the row and the value; a malformed list is a spec error."""
    from pseudopost.release.adapters import ADAPTERS

    frame = _frame()
    frame.to_csv(tmp_path / "survey.csv", index=False)
    before = (tmp_path / "survey.csv").read_bytes()
    adapter = ADAPTERS["whole_file"]
    base = SPEC.format(data="survey.csv")
    (tmp_path / "plain.toml").write_text(base)
    plain = load_spec(tmp_path / "plain.toml")
    s0 = adapter.structure_for(plain, validate(plain)).structure
    assert "region" in s0.levels and s0.levels["region"].epsilon > 0  # selected: charged
    declared = base.replace("[file.columns.age]", "[file.columns.region]\n"
                            'levels = ["east", "north", "south", "west"]\n\n[file.columns.age]')
    (tmp_path / "l.toml").write_text(declared)
    spec = load_spec(tmp_path / "l.toml")
    assert spec.settings.levels == {"region": ("east", "north", "south", "west")}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = adapter.structure_for(spec, validate(spec))
    assert "region" not in got.structure.levels
    assert any(c.name.startswith("region") for c in s0.charges)
    assert not any(c.name.startswith("region") for c in got.structure.charges)
    assert not any("'region'" in str(w.message) for w in caught)
    region = got.frame["region"]
    assert isinstance(region.dtype, pd.CategoricalDtype)
    assert list(region.cat.categories) == ["east", "north", "south", "west"]
    assert region.isna().sum() == frame["region"].isna().sum()
    assert (tmp_path / "survey.csv").read_bytes() == before
    (tmp_path / "m.toml").write_text(declared.replace('"east", ', ""))
    first = int(np.flatnonzero(frame["region"].to_numpy() == "east")[0])
    with pytest.raises(SpecError, match=rf"Column 'region', row {first}: value 'east' is not "
                                        r"among its declared levels \['north', 'south', 'west'\]"):
        validate(load_spec(tmp_path / "m.toml"))
    for bad in ('"east"', "[]", '["east", "east"]', "[true]"):
        (tmp_path / "x.toml").write_text(declared.replace(
            '["east", "north", "south", "west"]', bad))  # fmt: skip
        with pytest.raises(SpecError, match=r"file.columns.region.levels.*a non-empty list"):
            load_spec(tmp_path / "x.toml")


def test_declared_bounds_cost_nothing_and_none_is_flagged(tmp_path):
    from pseudopost.release.adapters import ADAPTERS

    _frame().to_csv(tmp_path / "survey.csv", index=False)
    adapter = ADAPTERS["whole_file"]
    bounded = SPEC.format(data="survey.csv").replace(
        "knots = [30, 50]", "knots = [30, 50]\nbounds = [16, 99]"
    )
    (tmp_path / "b.toml").write_text(bounded)
    spec = load_spec(tmp_path / "b.toml")
    assert spec.settings.bounds == {"age": (16.0, 99.0)}
    s = adapter.structure_for(spec, validate(spec)).structure
    assert s.columns["age"].sources["support"] == "declared"
    assert s.columns["age"].support == (16.0, 99.0) and s.columns["age"].epsilon == 0.0
    # a real value outside a declared range is an error naming it
    (tmp_path / "n.toml").write_text(bounded.replace("[16, 99]", "[20, 99]"))
    with pytest.raises(SpecError, match=r"outside its declared range \[20, 99\]"):
        validate(load_spec(tmp_path / "n.toml"))
    (tmp_path / "x.toml").write_text(bounded.replace("[16, 99]", "[99, 16]"))
    with pytest.raises(SpecError, match=r"file.columns.age.bounds"):
        load_spec(tmp_path / "x.toml")
    # one end open ("16 and over"): declared there, the other end DP and paid
    (tmp_path / "h.toml").write_text(bounded.replace("[16, 99]", "[16, inf]"))
    spec = load_spec(tmp_path / "h.toml")
    assert spec.settings.bounds == {"age": (16.0, float("inf"))}
    half = adapter.structure_for(spec, validate(spec)).structure.columns["age"]
    assert half.support[0] == 16.0 and half.epsilon > 0.0
    assert half.sources["support"].startswith("declared low end; the other DP (epsilon ")
    (tmp_path / "xx.toml").write_text(bounded.replace("[16, 99]", "[-inf, inf]"))
    with pytest.raises(SpecError, match=r"file.columns.age.bounds"):
        load_spec(tmp_path / "xx.toml")
    (tmp_path / "w.toml").write_text(
        SPEC.format(data="survey.csv").replace("heaps = [4]", "heaps = [4]\nbounds = [0, 99]")
    )
    with pytest.raises(SpecError, match=r"file.columns.wage.bounds"):
        load_spec(tmp_path / "w.toml")
    # structure_epsilon = "none": no stage, the statement flags it, bounds refused
    off = SPEC.format(data="survey.csv").replace("[file]\n", '[file]\nstructure_epsilon = "none"\n')
    (tmp_path / "o.toml").write_text(off)
    spec = load_spec(tmp_path / "o.toml")
    assert spec.settings.structure_epsilon is None
    assert adapter.cap(spec) == (2 * 1000.0, 0.0)
    data = validate(spec)
    assert adapter.structure_for(spec, data).structure is None
    (tmp_path / "of.toml").write_text(off.replace('"none"', "false"))
    assert load_spec(tmp_path / "of.toml").settings.structure_epsilon is None
    (tmp_path / "ob.toml").write_text(off.replace("knots = [30, 50]", "bounds = [16, 99]"))
    with pytest.raises(SpecError, match=r"structure_epsilon"):
        load_spec(tmp_path / "ob.toml")
    (tmp_path / "bad.toml").write_text(off.replace('"none"', "-1"))
    with pytest.raises(SpecError, match=r"file.structure_epsilon"):
        load_spec(tmp_path / "bad.toml")
    small = off.replace("draws = 60\ntune = 60", "draws = 30\ntune = 30").replace("m = 2", "m = 1")
    (tmp_path / "run.toml").write_text(small)
    outcome = run_release(tmp_path / "run.toml")
    assert outcome.statement.structure_epsilon == 0.0
    assert outcome.charge == pytest.approx(outcome.epsilon)
    assert any("not covered" in a for a in outcome.statement.assumptions)
    p = json.loads((outcome.out / "privacy.json").read_text())
    assert p["structure_epsilon"] == 0.0 and p["structure"]["covered"] is False
    assert "structure read from the data" in (outcome.out / "report.html").read_text()


def test_bounds_on_a_text_column_are_a_spec_error(tmp_path, capsys):
    """A ``bounds`` table for a text column was ignored in silence; refused, exit status 2."""
    from pseudopost.cli import main

    _frame().to_csv(tmp_path / "survey.csv", index=False)
    text = SPEC.format(data="survey.csv").replace(
        "[file.columns.age]", "[file.columns.region]\nbounds = [0, 1]\n\n[file.columns.age]"
    )
    (tmp_path / "t.toml").write_text(text)
    said = (r"spec key 'file.columns.region.bounds': expected the valid range of a numeric "
            r"column \(integer or float values\), but column 'region' is a text column")  # fmt: skip
    with pytest.raises(SpecError, match=said):
        validate(load_spec(tmp_path / "t.toml"))
    assert main(["validate", str(tmp_path / "t.toml")]) == 2
    assert "file.columns.region.bounds" in capsys.readouterr().err



def test_a_declared_text_code_stays_the_code_in_the_coded_records(tmp_path):
    """``codes = ["DK"]`` on a text column: the structure stage's coded records keep "DK" (a
    public code, no level of partition selection) rather than making it "(other)", as
    ``pp.synthesize`` does."""
    from pseudopost.release.adapters import ADAPTERS

    frame = _frame()
    rng = np.random.default_rng(2)
    frame.loc[rng.random(len(frame)) < 0.2, "region"] = "DK"
    frame.to_csv(tmp_path / "survey.csv", index=False)
    text = SPEC.format(data="survey.csv").replace(
        "[file.columns.age]", '[file.columns.region]\ncodes = ["DK"]\n\n[file.columns.age]'
    )
    (tmp_path / "t.toml").write_text(text)
    spec = load_spec(tmp_path / "t.toml")
    coded = ADAPTERS["whole_file"].structure_for(spec, validate(spec)).frame
    assert (coded["region"] == "DK").sum() == (frame["region"] == "DK").sum() > 0
    assert "(other)" not in set(coded["region"].dropna())

def test_account_recomputes_the_epsilon(released):
    """The replay agrees to 1e-9; it reads the raked parts' factors saved in fit.nc (part
    raking is on by default, and a status part's factors are below 1)."""
    import xarray as xr

    _, outcome = released
    acc = account_release(outcome.out)
    assert acc.agrees, (acc.epsilon, acc.saved_epsilon)
    p = json.loads((outcome.out / "privacy.json").read_text())
    assert p["raked_parts"] >= 1
    tree = xr.open_datatree(outcome.out / "fit.nc")
    factor = tree["weights"]["part_factor"].load()
    tree.close()
    assert factor.sizes["raked_part"] == p["raked_parts"]
    assert float(factor.min()) < 1.0


def test_spec_errors_name_the_declaration(tmp_path):
    _frame().to_csv(tmp_path / "survey.csv", index=False)
    bad_key = SPEC.format(data="survey.csv").replace("codes = [-9]", "codez = [-9]")
    (tmp_path / "a.toml").write_text(bad_key)
    with pytest.raises(SpecError, match=r"spec key 'file.columns.wage.codez': expected one of"):
        load_spec(tmp_path / "a.toml")
    bad_rule = SPEC.format(data="survey.csv").replace("== 'no'\"]", "= 'no'\"]")
    (tmp_path / "b.toml").write_text(bad_rule)
    with pytest.raises(SpecError, match=r"spec section '\[file\]': Cannot parse rule"):
        load_spec(tmp_path / "b.toml")
    bad_grid = SPEC.format(data="survey.csv").replace("step = 0.25,", "step = -1,")
    (tmp_path / "d.toml").write_text(bad_grid)
    with pytest.raises(SpecError, match=r"'wage': A grid's 'step' must be a finite number > 0"):
        load_spec(tmp_path / "d.toml")
    bad_bins = SPEC.format(data="survey.csv").replace("knots = [30, 50]", "bins = [30, 20, 90]")
    (tmp_path / "e.toml").write_text(bad_bins)
    with pytest.raises(SpecError, match=r"bins of column 'age' must be at least 3 finite"):
        load_spec(tmp_path / "e.toml")
    bounded = SPEC.format(data="survey.csv").replace(
        "knots = [30, 50]", "grid = {step = 1, bounds = [10, 90]}"
    )
    (tmp_path / "f.toml").write_text(bounded)
    assert load_spec(tmp_path / "f.toml").settings.declarations["grid"]["age"]["bounds"] == [10, 90]
    listed = SPEC.format(data="survey.csv").replace(
        "knots = [30, 50]", "grid = {values = [20, 35, 50]}"
    )
    (tmp_path / "g.toml").write_text(listed)
    assert load_spec(tmp_path / "g.toml").settings.declarations["grid"]["age"] == {
        "values": [20, 35, 50]
    }
    shift = listed.replace("grid = {values", "shift_only = true\ngrid = {values")
    (tmp_path / "s.toml").write_text(shift)
    assert load_spec(tmp_path / "s.toml").settings.declarations["shift_only"] == ("age",)
    (tmp_path / "t.toml").write_text(shift.replace("shift_only = true", 'shift_only = "yes"'))
    with pytest.raises(SpecError, match=r"file.columns.age.shift_only.*true or false"):
        load_spec(tmp_path / "t.toml")
    uniform = SPEC.format(data="survey.csv").replace("knots = [30, 50]", "uniform_in_bins = true")
    (tmp_path / "u.toml").write_text(uniform)
    assert load_spec(tmp_path / "u.toml").settings.declarations["uniform_in_bins"] == ("age",)
    (tmp_path / "v.toml").write_text(uniform.replace("uniform_in_bins = true", "uniform_in_bins = 1"))
    with pytest.raises(SpecError, match=r"file.columns.age.uniform_in_bins.*true or false"):
        load_spec(tmp_path / "v.toml")
    parent = SPEC.format(data="survey.csv").replace("knots = [30, 50]", "knots = [30, 50]\n\n"
                                                    "[file.columns.region]\nparent = 'employed'")
    (tmp_path / "p.toml").write_text(parent)
    assert load_spec(tmp_path / "p.toml").settings.declarations["hierarchy"] == {
        "region": "employed"
    }
    (tmp_path / "q.toml").write_text(parent.replace("parent = 'employed'", "parent = 2"))
    with pytest.raises(SpecError, match=r"file.columns.region.parent.*a column name"):
        load_spec(tmp_path / "q.toml")
    (tmp_path / "h.toml").write_text(listed.replace("values = [20, 35, 50]", "values = [20]"))
    with pytest.raises(SpecError, match=r"'age': A grid's 'values' must be at least 2 distinct"):
        load_spec(tmp_path / "h.toml")
    listed_knots = SPEC.format(data="survey.csv").replace(
        "knots = [30, 50]", 'knots = {at = [30, 50], columns = ["hours"]}'
    )
    (tmp_path / "k.toml").write_text(listed_knots)
    assert load_spec(tmp_path / "k.toml").settings.declarations["knots"] == {
        "age": {"at": [30.0, 50.0], "columns": ["hours"]}
    }
    (tmp_path / "l.toml").write_text(listed_knots.replace("columns = [", "in = ["))
    with pytest.raises(SpecError, match=r"knots of column 'age', given as a table, need exactly"):
        load_spec(tmp_path / "l.toml")
    contradicted = SPEC.format(data="survey.csv").replace(
        "wage is missing when employed == 'no'", "wage is missing when employed == 'yes'"
    )
    (tmp_path / "c.toml").write_text(contradicted)
    with pytest.raises(SpecError, match=r"is contradicted by the data"):
        validate(load_spec(tmp_path / "c.toml"))


def test_spss_input_is_written_back_with_its_labels(tmp_path):
    pyreadstat = pytest.importorskip("pyreadstat")
    rng = np.random.default_rng(2)
    n = 150
    raw = pd.DataFrame(
        {
            "sex": rng.choice([1.0, 2.0], n),
            "income": np.where(rng.random(n) < 0.15, -8.0, np.round(rng.lognormal(7, 0.5, n))),
        }
    )
    labels = {"sex": {1.0: "female", 2.0: "male"}, "income": {-8.0: "not applicable"}}
    pyreadstat.write_sav(
        raw, str(tmp_path / "s.sav"), variable_value_labels=labels,
        missing_ranges={"income": [-8.0]}, variable_measure={"sex": "nominal", "income": "scale"},
    )  # fmt: skip
    text = SPEC.format(data="s.sav")
    text = text[: text.index("[file]")] + text[text.index("[sampling]") :]
    text = text.replace('keys = ["age", "region"]', 'keys = ["sex"]').replace(
        'sensitive = "employed"', 'sensitive = "income"'
    )
    (tmp_path / "spec.toml").write_text(text)
    outcome = run_release(tmp_path / "spec.toml")
    written = outcome.out / "synthetic-1.sav"
    assert written.is_file()
    _, meta = pyreadstat.read_sav(str(written), user_missing=True)
    _, meta0 = pyreadstat.read_sav(str(tmp_path / "s.sav"), user_missing=True)
    assert meta.variable_value_labels == meta0.variable_value_labels
    assert meta.missing_ranges == meta0.missing_ranges


@pytest.mark.parametrize("name", ["slid_file.toml", "adult_file.toml"])
def test_examples_validate(name):
    spec = load_spec(EXAMPLES / name, out="/nonexistent-release")
    frame = validate(spec)
    assert spec.mechanism == "whole_file" and len(frame) > 0


def test_the_shipped_slid_example_releases_end_to_end(tmp_path):
    """``pseudopost synthesize examples/slid_file.toml`` as shipped (its draws, seed and
    declarations; the data copied to a temporary folder, where output and ledger go) writes
    every file, ``account`` agrees with it, and no synthetic value leaves its column's
    support. It stopped after the fit once (a bool attribute in ``fit.nc``), with every other
    test passing."""
    import shutil

    text = (EXAMPLES / "slid_file.toml").read_text()
    assert 'path = "../data/slid.csv"' in text
    data = tmp_path / "slid.csv"  # a copy: the ledger is written beside the data
    shutil.copyfile(EXAMPLES / "../data/slid.csv", data)
    (tmp_path / "slid_file.toml").write_text(text.replace('"../data/slid.csv"', '"slid.csv"'))
    outcome = run_release(tmp_path / "slid_file.toml", out=tmp_path / "out")
    names = {p.name for p in outcome.out.iterdir()}
    assert names >= {"synthetic-1.csv", "synthetic-2.csv", "privacy.json", "fit.nc",
                     "report.html", "manifest.json", "spec.toml"}  # fmt: skip
    assert account_release(outcome.out).agrees
    p = json.loads((outcome.out / "privacy.json").read_text())
    assert p["epsilon_per_dataset"] == pytest.approx(outcome.epsilon)
    real = pd.read_csv(data)
    columns = p["structure"]["columns"]
    for name in ("synthetic-1.csv", "synthetic-2.csv"):
        syn = pd.read_csv(outcome.out / name)
        assert list(syn.columns) == list(real.columns) and len(syn) == len(real)
        for c, facts in columns.items():
            lo, hi = facts["support"]
            values = syn[c].dropna()
            assert values.between(lo, hi).all(), (name, c, values.min(), values.max(), lo, hi)
            if facts["integer"]:
                assert (values % 1 == 0).all(), (name, c)
    assert "How each part was drawn" in (outcome.out / "report.html").read_text()



def test_the_shipped_adult_example_releases_end_to_end(tmp_path):
    """``pseudopost synthesize examples/adult_file.toml`` as shipped (a 2,000-record sample,
    about a minute): every file written, ``account`` agreeing, no structure stage warning,
    capital gains and losses inside their declared five-digit range with many distinct
    non-zero amounts (the release once coded every loss to 1 and capped gains at 9,999) and
    modelled shift-only without a declaration, the codebook's answer categories kept (no
    "(other)"), and the codebook's rules and zeros hold."""
    import shutil

    text = (EXAMPLES / "adult_file.toml").read_text()
    assert 'path = "../data/adult_train.csv"' in text
    data = tmp_path / "adult_train.csv"  # a copy: the ledger is written beside the data
    shutil.copyfile(EXAMPLES / "../data/adult_train.csv", data)
    (tmp_path / "adult_file.toml").write_text(
        text.replace('"../data/adult_train.csv"', '"adult_train.csv"')
    )
    outcome = run_release(tmp_path / "adult_file.toml", out=tmp_path / "out")
    assert account_release(outcome.out).agrees
    p = json.loads((outcome.out / "privacy.json").read_text())
    assert not any("no cell passed" in str(f.get("sources", {}).get("support", ""))
                   for f in p["structure"]["columns"].values())  # fmt: skip
    # the amounts' value parts shift-only by the stage's count, with no declaration (with a
    # log-spread coefficient per feature the largest bound ran to 1e17: refused at max_epsilon)
    assert "shift_only" not in text and p["epsilon_per_dataset"] <= 1000
    parts = {r["column"]: r for r in p["parts"]}
    for c in ("capital-gain", "capital-loss"):
        assert f"{c}.value (binned)," in parts[c]["parts"]
        assert f"{c}.value shift-only: about" in parts[c]["reason"]
        # as pp.synthesize's choices say: the stage's model and bins (DP), not "declared"
        assert parts[c]["reason"].startswith("the structure stage: a histogram density")
        assert "(declared)" not in parts[c]["reason"] and "bins from" in parts[c]["reason"]
    syn = pd.read_csv(outcome.out / "synthetic-1.csv")
    assert len(syn) == 2000
    for c in ("capital-gain", "capital-loss"):
        amounts = syn.loc[syn[c] > 0, c]
        assert syn[c].between(0, 99999).all() and amounts.nunique() >= 10, (c, amounts.nunique())
    assert not ((syn["capital-gain"] > 0) & (syn["capital-loss"] > 0)).any()
    # the codebook's answer categories declared (levels): no cell merged into "(other)"
    for c in ("workclass", "marital-status", "occupation", "relationship", "native-country"):
        assert "(other)" not in set(syn[c].dropna()), c
    assert syn["occupation"].nunique() >= 10
    real = pd.read_csv(data)  # its 16 rules: education-num a one-to-one code of education
    codes = real.groupby(real["education"].str.strip())["education-num"].first()
    assert (syn["education-num"] == syn["education"].str.strip().map(codes)).all()

def test_report_flags_columns_whose_synthetic_range_exceeds_the_real_one():
    from pseudopost.release.adapters.whole_file import _beyond_real_range

    real = pd.DataFrame({"age": [20, 30, 40], "g": ["a", "b", "a"], "x": [1.0, 2.0, 3.0]})
    syn = [pd.DataFrame({"age": [19, 30, 41], "g": ["a", "a", "b"], "x": [1.5, 2.0, 3.0]})]
    flags = _beyond_real_range(real, syn)
    assert len(flags) == 1
    assert "'age'" in flags[0] and "above the real maximum" in flags[0]
    assert "below the real minimum" in flags[0]
    assert _beyond_real_range(real, [real]) == []


def test_the_release_flags_after_synthesis(monkeypatch):
    """The flags are computed on the m synthetic files once they exist (the fit has none) and
    reach the report through the produced warnings."""
    from pseudopost.release.adapters import ADAPTERS
    from pseudopost.release.adapters.pseudo_posterior import PseudoPosteriorAdapter
    from pseudopost.release.adapters.whole_file import WholeFileProduced

    syn = [pd.DataFrame({"age": [15, 50], "x": [1.0, 2.0]})]
    monkeypatch.setattr(PseudoPosteriorAdapter, "synthesize", lambda self, spec, produced: syn)
    produced = WholeFileProduced(None, {}, real_ranges={"age": (16.0, 95.0), "x": (0.0, 3.0)})
    assert ADAPTERS["whole_file"].synthesize(None, produced) is syn
    assert len(produced.warnings) == 1
    assert "'age'" in produced.warnings[0] and "below the real minimum" in produced.warnings[0]


def test_verdicts_read_each_measure_against_its_reference():
    from pseudopost.release.verdicts import CLOSE, SYNTHPOP_CART_SPMSE, verdicts

    tables = pd.DataFrame({"S_pMSE": [1.2, 40.0, 7.0, 2.0]}, index=["a:b", "a:c", "b:c", "c:d"])
    ones = pd.DataFrame({"S_pMSE": [0.5, 1.0]}, index=["a", "b"])
    top = max(SYNTHPOP_CART_SPMSE.values())
    for value, word in ((CLOSE / 2, "close"), ((CLOSE + top) / 2, "within"), (top * 2, "beyond")):
        t = verdicts([value, value], ones, tables, [], 0).set_index("measure")
        assert t.loc["S_pMSE (CART propensity, synthpop's null)", "verdict"].startswith(word)
    t = verdicts([20.0], ones, tables, ["age"], 3).set_index("measure")
    assert t.loc["worst pairs (two-way tables), S_pMSE", "value"].startswith("a:c (40), b:c (7)")
    assert t.loc["worst columns (one-way tables), S_pMSE", "verdict"] == "close"
    assert t.loc["columns beyond the real range", "value"] == "age"
    assert "defect" in t.loc["synthetic records breaking a declared rule or zero", "verdict"]


def test_fit_file_holds_the_attributes_a_fit_carries(tmp_path):
    """``fit.nc`` is written whatever attributes the parts' trees carry: a Laplace draw's
    ``laplace_resampled`` (a bool), IMH's per-chain flags, None. Writing a bool attribute made
    h5netcdf refuse, and ``pseudopost synthesize examples/slid_file.toml`` stopped after the fit
    (its risk step's first part drawn from a Laplace approximation)."""
    import xarray as xr

    from pseudopost.release.adapters.pseudo_posterior import save_fit

    z = np.zeros((2, 5))
    post = xr.Dataset({"a::p": (("chain", "draw"), z)})
    post.attrs = {"laplace_resampled": True, "laplace_khat": 0.3, "note": None}
    stats = xr.Dataset({"diverging": (("chain", "draw"), z.astype(bool))})
    stats.attrs = {"flags": [True, False], "acceptance_rate": [0.6, 0.7], "samplers": "{}"}
    stats["diverging"].attrs["mixed"] = np.bool_(False)
    tree = xr.DataTree.from_dict({"posterior": post, "sample_stats": stats})
    with pytest.raises(Exception, match="boolean"):
        tree.to_netcdf(tmp_path / "raw.nc", engine="h5netcdf")
    save_fit(tree, tmp_path / "fit.nc")
    back = xr.open_datatree(tmp_path / "fit.nc", engine="h5netcdf")
    assert back["posterior"].attrs["laplace_resampled"] == 1
    assert back["posterior"].attrs["laplace_khat"] == 0.3 and back["posterior"].attrs["note"] == ""
    assert list(back["sample_stats"].attrs["flags"]) == [1, 0]
    assert list(back["sample_stats"].attrs["acceptance_rate"]) == [0.6, 0.7]
    assert back["sample_stats"]["diverging"].attrs["mixed"] == 0
    assert not back["sample_stats"]["diverging"].to_numpy().any()
    # the tree is not modified
    assert tree["posterior"].attrs["laplace_resampled"] is True
    assert isinstance(tree["sample_stats"]["diverging"].attrs["mixed"], np.bool_)



def test_a_support_the_structure_stage_only_guessed_is_said_and_reported(tmp_path, capsys):
    """A spike column whose few non-zero amounts no cell of the DP support locates: the
    release says so before the fit, as the fit's warnings are said, and its report lists it."""
    rng = np.random.default_rng(2)
    gain = np.zeros(200)
    gain[:8] = rng.uniform(2000, 9000, 8).round()
    pd.DataFrame({"age": rng.integers(18, 80, 200), "gain": gain}).to_csv(
        tmp_path / "f.csv", index=False
    )
    spec = SPEC.split("[file]")[0].format(data="f.csv") + (
        "[file.columns.gain]\nspikes = [0]\n\n[sampling]\ndraws = 40\ntune = 40\nchains = 1\n"
        'seed = 3\n\n[release]\nm = 1\nout = "out"\n\n[budget]\ntotal_epsilon = 5000.0\n'
        "max_epsilon = 1000.0\ntotal_delta = 1e-4\n\n[disclosure]\nkeys = [\"age\"]\n"
        'sensitive = "gain"\n'
    )
    (tmp_path / "run.toml").write_text(spec)
    outcome = run_release(tmp_path / "run.toml")
    said = capsys.readouterr()
    assert "warning: Column 'gain': no cell of its support reached the threshold" in (
        said.out + said.err
    )
    report = (Path(outcome.out) / "report.html").read_text()
    assert "Column &#x27;gain&#x27;: no cell of its support" in report


CENSORED_SPEC = """
[data]
path = "{data}"

[mechanism]
name = "whole_file"
shift = 1.0
censor_epsilon = {eps}
{extra}

[file.columns.a]
levels = ["n", "y"]

[file.columns.b]
levels = ["p", "q", "r"]

[sampling]
draws = 60
tune = 60
chains = 2
seed = 5

[release]
out = "out"

[budget]
total_epsilon = 50.0
max_epsilon = 10.0

[disclosure]
keys = ["a"]
sensitive = "b"
"""


def test_a_censored_whole_file_release_states_its_global_epsilon(tmp_path):
    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.choice(["n", "y"], 40), "b": rng.choice(["p", "q", "r"], 40)}).to_csv(
        tmp_path / "f.csv", index=False
    )
    spec = tmp_path / "spec.toml"
    spec.write_text(CENSORED_SPEC.format(data="f.csv", eps=4.0, extra=""))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome = run_release(spec)
    assert outcome.epsilon == pytest.approx(4.0)
    p = json.loads((tmp_path / "out" / "privacy.json").read_text())
    assert p["decomposition"] == "censored" and p["global_epsilon"] == 4.0
    assert p["guarantee_kind"] == "global given the weights"  # given the model plan
    assert "model plan" in p["guarantee"] and p["weights_raised_by_floor"] == 0
    assert p["epsilon_per_dataset"] == 4.0 + p["structure_epsilon"]
    assert p["local_epsilon"] <= 4.0 + 1e-9
    spec.write_text(CENSORED_SPEC.format(data="f.csv", eps=4.0, extra="target_epsilon = 3.0"))
    with pytest.raises(SpecError, match=r"mechanism\.censor_epsilon"):
        load_spec(spec)
