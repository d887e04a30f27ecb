"""Malformed specs and data files: exit status 2, one line naming the key and the fix, nothing
created. No sampling happens in this module."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pseudopost.cli import main
from pseudopost.release import SpecError, load_spec, validate


def _bad_data(frame_edit):
    def write(folder: Path) -> None:
        data = pd.read_csv(folder / "fatigue.csv")
        frame_edit(data).to_csv(folder / "fatigue.csv", index=False)

    return write


def _nan(d):
    d = d.astype({"cycle": float})
    d.loc[3, "cycle"] = np.nan
    return d


def _text(text):
    return lambda folder: (folder / "spec.toml").write_text(text)


def _file(name, content: bytes):
    return lambda folder: (folder / name).write_bytes(content)


# (id, spec overrides for make_spec, extra setup(folder) or None, expected message fragment)
CASES = [
    ("toml-syntax", None, _text("[data\npath = 1"), "is not valid TOML"),
    ("not-utf8", None, _file("spec.toml", b"\xff\xfe[data]"), "is not UTF-8"),
    ("missing-section", {"drop": ["model"]}, None, "spec section '[model]' is missing"),
    ("missing-data-path", {"drop": ["data.path"]}, None, "spec key 'data.path' is missing"),
    ("missing-seed", {"drop": ["sampling.seed"]}, None, "spec key 'sampling.seed' is missing"),
    (
        "missing-total",
        {"drop": ["budget.total_epsilon"]},
        None,
        "'budget.total_epsilon' is missing",
    ),
    (
        "unknown-section",
        {"extras": {"a": 1}},
        None,
        "spec key 'extras': expected one of the sections",
    ),
    ("section-not-table", None, _text('data = "x.csv"\n'), "spec key 'data': expected a table"),
    (
        "typo-key",
        {"sampling": {"draw": 10}},
        None,
        "spec key 'sampling.draw': expected one of the keys",
    ),
    (
        "data-not-found",
        {"data": {"path": "nowhere.csv"}},
        None,
        "spec key 'data.path': expected an existing data file",
    ),
    (
        "data-format",
        {"data": {"path": "fatigue.txt"}},
        _file("fatigue.txt", b"a,b\n1,2\n"),
        "spec key 'data.format'",
    ),
    (
        "empty-csv",
        {"data": {"path": "empty.csv"}},
        _file("empty.csv", b""),
        "could not be read as csv",
    ),
    (
        "bad-parquet",
        {"data": {"path": "bad.parquet"}},
        _file("bad.parquet", b"not parquet"),
        "could not be read as parquet",
    ),
    (
        "unknown-family",
        {"model": {"family": "gamma"}},
        None,
        "spec key 'model.family': expected one of ['normal'",
    ),
    (
        "unknown-mechanism",
        {"mechanism": {"name": "laplace"}},
        None,
        "spec key 'mechanism.name': expected one of ['pseudo_posterior', 'reps', 'prism', 'entropy', 'whole_file']",
    ),
    (
        "draws-string",
        {"sampling": {"draws": "100"}},
        None,
        "spec key 'sampling.draws': expected an integer >= 1, got '100'",
    ),
    (
        "draws-zero",
        {"sampling": {"draws": 0}},
        None,
        "spec key 'sampling.draws': expected an integer >= 1, got 0",
    ),
    (
        "chains-float",
        {"sampling": {"chains": 2.0}},
        None,
        "spec key 'sampling.chains': expected an integer >= 1",
    ),
    (
        "seed-negative",
        {"sampling": {"seed": -1}},
        None,
        "spec key 'sampling.seed': expected an integer >= 0",
    ),
    ("sampler", {"sampling": {"sampler": "stan"}}, None, "spec key 'sampling.sampler'"),
    (
        "epsilon-zero",
        {"budget": {"total_epsilon": 0}},
        None,
        "spec key 'budget.total_epsilon': expected a number > 0, got 0",
    ),
    (
        "epsilon-negative",
        {"budget": {"max_epsilon": -1.0}},
        None,
        "spec key 'budget.max_epsilon': expected a number > 0, got -1.0",
    ),
    (
        "target-epsilon-zero",
        {"mechanism": {"target_epsilon": 0.0}},
        None,
        "spec key 'mechanism.target_epsilon': expected a number > 0",
    ),
    (
        "overspend-cap",
        {"budget": {"total_epsilon": 10.0, "max_epsilon": 8.0}},
        None,
        "m x max_epsilon <= budget.total_epsilon",
    ),
    (
        "scale-negative",
        {"mechanism": {"scale": -0.5}},
        None,
        "spec key 'mechanism.scale': expected a number >= 0",
    ),
    (
        "reweight-string",
        {"mechanism": {"reweight": "yes"}},
        None,
        "spec key 'mechanism.reweight': expected true or false",
    ),
    (
        "normalisation",
        {"mechanism": {"normalisation": "rank"}},
        None,
        "spec key 'mechanism.normalisation'",
    ),
    (
        "exclude-quantile",
        {"mechanism": {"exclude_quantile": 1.5}},
        None,
        "spec key 'mechanism.exclude_quantile': expected a number in (0, 1]",
    ),
    (
        "sensitive-range",
        {"mechanism": {"sensitive_range": [1.2, 0.4]}},
        None,
        "spec key 'mechanism.sensitive_range'",
    ),
    (
        "range-method",
        {"mechanism": {"sensitive_range": [0.5, 2.0], "range_method": "x"}},
        None,
        "spec key 'mechanism.range_method'",
    ),
    (
        "censor-and-target",
        {"mechanism": {"censor_epsilon": 4.0, "target_epsilon": 3.0}},
        None,
        "cannot be combined",
    ),
    ("range-method-alone", {"mechanism": {"range_method": "truncated"}}, None, "range_method"),
    (
        "censor-above-cap",
        {"mechanism": {"censor_epsilon": 150.0}},
        None,
        "spec key 'mechanism.censor_epsilon': expected at most budget.max_epsilon = 100.0",
    ),
    (
        "rtol-too-big",
        {"mechanism": {"target_epsilon": 5.0, "rtol": 1.5}},
        None,
        "spec key 'mechanism.rtol': expected a number in (0, 1)",
    ),
    (
        "refits-without-target",
        {"mechanism": {"max_refits": 3}},
        None,
        "'mechanism.max_refits' needs 'mechanism.target_epsilon'",
    ),
    (
        "predictors-not-list",
        {"model": {"predictors": "stress"}},
        None,
        "spec key 'model.predictors': expected a list of strings",
    ),
    (
        "outcome-is-predictor",
        {"model": {"predictors": ["stress", "cycle"]}},
        None,
        "columns other than the outcome 'cycle'",
    ),
    (
        "outcome-column-missing",
        {"model": {"outcome": "cycles"}},
        None,
        "spec key 'model.outcome': expected a column of fatigue.csv",
    ),
    (
        "predictor-column-missing",
        {"model": {"predictors": ["load"]}},
        None,
        "spec key 'model.predictors': expected a column of fatigue.csv",
    ),
    ("disclosure-key", {"disclosure": {"keys": ["load"]}}, None, "spec key 'disclosure.keys'"),
    (
        "m-too-large",
        {"release": {"m": 500}},
        None,
        "spec key 'release.m': expected at most the 240 kept posterior draws",
    ),
    ("no-out", {"drop": ["release.out"]}, None, "'release.out' is missing and no --out"),
    (
        "nonpositive-lognormal",
        None,
        _bad_data(lambda d: d.assign(cycle=-d.cycle)),
        "Column 'cycle' must be strictly positive",
    ),
    ("nan-in-data", None, _bad_data(_nan), "Column 'cycle' must hold finite values"),
    (
        "text-column",
        None,
        _bad_data(lambda d: d.assign(stress="high")),
        "Column 'stress' must be numeric",
    ),
    ("one-row", None, _bad_data(lambda d: d.iloc[:1]), "must have at least 2 rows"),
]


@pytest.mark.parametrize(
    ("overrides", "setup", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
@pytest.mark.parametrize("command", ["validate", "synthesize"])
def test_malformed_spec_exits_2_with_one_line(
    tmp_path, capsys, make_spec, copy_fatigue, command, overrides, setup, expected
):
    copy_fatigue(tmp_path)
    spec = make_spec(tmp_path, **(overrides or {}))
    if setup is not None:
        setup(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    status = main([command, str(spec)])
    err = capsys.readouterr().err.strip()
    assert status == 2
    assert err.count("\n") == 0, err
    assert err.startswith("pseudopost: error: ")
    assert expected in err
    assert "Fix:" in err or "expected" in err
    after = sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock"))
    assert after == before  # no output folder, no ledger


def test_missing_spec_file(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "absent.toml")]) == 2
    assert "not found" in capsys.readouterr().err


def test_existing_output_folder_is_refused(workdir, capsys, make_spec):
    (workdir / "release").mkdir()
    assert main(["synthesize", str(make_spec(workdir))]) == 2
    assert "already exists" in capsys.readouterr().err


def test_valid_spec_passes_and_resolves_paths(workdir, capsys, make_spec, base_spec):
    path = make_spec(workdir)
    assert main(["validate", str(path)]) == 0
    assert "spec OK" in capsys.readouterr().out
    spec = load_spec(path)
    assert spec.data_path == workdir / "fatigue.csv"
    assert spec.ledger_path == workdir / "fatigue.csv.ledger.json"
    assert spec.out == workdir / "release"
    assert spec.m == base_spec["release"]["m"]
    assert spec.settings.tune == base_spec["sampling"]["tune"]
    assert len(validate(spec)) == 22
    assert not spec.out.exists() and not spec.ledger_path.exists()


def test_out_flag_overrides_and_parquet_reads(workdir, capsys, make_spec):
    pd.read_csv(workdir / "fatigue.csv").to_parquet(workdir / "fatigue.parquet")
    path = make_spec(workdir, data={"path": "fatigue.parquet"}, drop=["release.out"])
    spec = load_spec(path, out=workdir / "elsewhere")
    assert spec.out == workdir / "elsewhere" and spec.data_format == "parquet"
    assert main(["validate", str(path), "--out", str(workdir / "x")]) == 0


def test_spec_error_is_a_value_error():
    assert issubclass(SpecError, ValueError)


EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.toml"))


def test_examples_are_shipped():
    assert {p.name for p in EXAMPLES} >= {
        "fatigue.toml",
        "fatigue_range.toml",
        "breast_cancer_reps.toml",
        "german_credit_prism.toml",
        "breast_cancer_entropy.toml",
    }


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_specs_validate(example, tmp_path, capsys):
    import shutil
    import tomllib

    from pseudopost.datasets import DATA_DIR

    # the examples' layout (examples/ beside data/) rebuilt in a scratch folder
    (tmp_path / "examples").mkdir()
    (tmp_path / "data").mkdir()
    spec = tmp_path / "examples" / example.name
    spec.write_text(example.read_text())
    data = Path(tomllib.loads(example.read_text())["data"]["path"]).name
    shutil.copyfile(DATA_DIR / data, tmp_path / "data" / data)
    assert main(["validate", str(spec), "--out", str(tmp_path / "out")]) == 0
    assert "spec OK" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "examples"]
    assert [p.name for p in (tmp_path / "data").iterdir()] == [data]
