"""Agency file formats: SPSS and Stata files with value labels and missing-value definitions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyreadstat
import pytest
from pandas.io.stata import StataMissingValue

from pseudopost.formats import STATA_MISSING, Codebook, MissingRange, read_file, write_file
from pseudopost.models.status import join_status, split_status

SAV_LABELS = {
    "income": {-8: "not applicable", -9: "refused"},
    "sex": {1: "male", 2: "female", 9: "refused"},
    "edu": {1: "low", 2: "mid", 3: "high"},
}
SAV_MISSING = {"income": [{"lo": -9, "hi": -7}, -1], "sex": [9], "name": ["NA"]}
SAV_MEASURE = {"income": "scale", "sex": "nominal", "edu": "ordinal"}
SAV_VARLABELS = {"income": "Annual income", "sex": "Sex of respondent"}


@pytest.fixture
def sav(tmp_path):
    raw = pd.DataFrame(
        {
            "income": [100.0, -8, -9, 250, np.nan, -7.5, 0.0],
            "sex": [1.0, 2, 1, 2, 9, 1, 2],
            "name": ["ann", "bo", "", "zed", "xi", "NA", "al"],
            "edu": [1.0, 2, 3, 1, 2, 3, np.nan],
        }
    )
    path = tmp_path / "survey.sav"
    pyreadstat.write_sav(
        raw,
        path,
        file_label="test survey",
        column_labels=SAV_VARLABELS,
        variable_value_labels=SAV_LABELS,
        missing_ranges=SAV_MISSING,
        variable_measure=SAV_MEASURE,
    )
    return path


def test_stata_missing_doubles_match_pandas_table():
    table = StataMissingValue.MISSING_VALUES
    for letter, value in STATA_MISSING.items():
        assert table[value] == f".{letter}"
    assert sorted(STATA_MISSING) == [chr(c) for c in range(ord("a"), ord("z") + 1)]
    assert min(STATA_MISSING.values()) > 8.98846567431158e307  # above Stata's '.'


def test_read_sav_labels_categories_and_codes(sav):
    frame, cb = read_file(sav)
    assert isinstance(cb, Codebook) and cb.format == "sav" and cb.file_label == "test survey"
    # codes stay in the frame as the values the file holds; empty cells are NaN
    assert frame["income"].tolist()[:3] == [100.0, -8.0, -9.0]
    assert np.isnan(frame["income"].iloc[4])
    assert cb.missing_codes == {
        "income": [-9.0, -8.0, -7.5, -1.0],  # declared -1, the range's labelled and held values
        "sex": ["refused"],
        "name": ["NA"],
    }
    assert cb.code_labels["income"] == {
        -9.0: "refused",
        -8.0: "not applicable",
        -7.5: None,
        -1.0: None,
    }
    assert cb.variables["income"].missing_ranges == (MissingRange(-9.0, -7.0),)
    assert cb.variables["income"].missing_values == (-1.0,)
    # labelled categorical columns become categories (ordinal -> ordered), codes last
    assert list(frame["sex"].cat.categories) == ["male", "female", "refused"]
    assert not frame["sex"].cat.ordered
    assert frame["sex"].tolist() == [
        "male",
        "female",
        "male",
        "female",
        "refused",
        "male",
        "female",
    ]
    assert list(frame["edu"].cat.categories) == ["low", "mid", "high"] and frame["edu"].cat.ordered
    assert pd.isna(frame["edu"].iloc[6])
    assert frame["name"].tolist()[2] == ""  # an empty string is kept for the synthesizer
    assert cb.variable_labels == SAV_VARLABELS
    assert cb.variables["income"].measure == "scale" and cb.variables["income"].format == "F8.2"


def _changed(frame: pd.DataFrame) -> pd.DataFrame:
    """A 'synthetic' frame: other rows, other values, codes where the real file had none."""
    out = frame.iloc[::-1].reset_index(drop=True).copy()
    out["income"] = [-9.0, 515.25, -8.0, -8.0, np.nan, -7.5, 42.0]
    out["sex"] = pd.Categorical(
        ["refused", "male", "male", "female", "female", "refused", "male"],
        dtype=frame["sex"].dtype,
    )
    return out


@pytest.mark.parametrize("suffix", [".sav", ".zsav"])
def test_sav_round_trip_keeps_labels_and_missing_definitions(sav, tmp_path, suffix):
    frame, cb = read_file(sav)
    synthetic = _changed(frame)
    out = tmp_path / f"synthetic{suffix}"
    before = synthetic.copy()
    write_file(synthetic, out, cb)
    pd.testing.assert_frame_equal(synthetic, before)
    assert out.read_bytes()[:4] == (b"$FL3" if suffix == ".zsav" else b"$FL2")  # zlib or not
    _, m0 = pyreadstat.read_sav(sav, metadataonly=True, user_missing=True)
    data, m1 = pyreadstat.read_sav(out, user_missing=True)
    assert m1.column_labels == m0.column_labels
    assert m1.variable_value_labels == m0.variable_value_labels
    assert m1.missing_ranges == m0.missing_ranges
    assert m1.variable_measure == m0.variable_measure
    assert m1.file_label == "test survey"
    # values written back as the file's numbers; codes as codes
    assert data["income"].tolist()[:4] == [-9.0, 515.25, -8.0, -8.0]
    assert data["sex"].tolist() == [9.0, 1.0, 1.0, 2.0, 2.0, 9.0, 1.0]
    # SPSS itself treats the written codes as missing (read without user-missing values)
    plain, _ = pyreadstat.read_sav(out)
    assert plain["income"].isna().tolist() == [True, False, True, True, True, True, False]
    assert plain["sex"].isna().tolist() == [True, False, False, False, False, True, False]
    assert synthetic["name"].tolist()[1] == "NA" and pd.isna(plain["name"].iloc[1])
    back, cb2 = read_file(out)
    pd.testing.assert_frame_equal(back, synthetic)
    assert cb2 == cb


@pytest.fixture
def dta(tmp_path):
    raw = pd.DataFrame(
        {
            "income": pd.Series([100.0, "a", "b", 250.0, np.nan, 7.0], dtype=object),
            "sex": pd.Series([1, 2, "a", 2, 1, 1], dtype=object),
            "region": [1.0, 2.0, 3.0, 1.0, 2.0, 3.0],
        }
    )
    path = tmp_path / "survey.dta"
    pyreadstat.write_dta(
        raw,
        path,
        column_labels={"income": "Annual income", "sex": "Sex"},
        variable_value_labels={
            "sex": {1: "male", 2: "female", "a": "refused"},
            "income": {"a": "refused"},
        },
        missing_user_values={"income": ["a", "b"], "sex": ["a"]},
    )
    return path


def test_dta_extended_missing_become_codes_and_round_trip(dta, tmp_path):
    frame, cb = read_file(dta)
    a, b = STATA_MISSING["a"], STATA_MISSING["b"]
    assert frame["income"].dtype == np.float64
    assert frame["income"].tolist()[:4] == [100.0, a, b, 250.0]
    assert cb.missing_codes == {"income": [a, b], "sex": ["refused"]}
    assert cb.code_labels["income"] == {a: "refused", b: None}
    assert list(frame["sex"].cat.categories) == ["male", "female", "refused"]
    assert frame["region"].dtype == np.float64  # unlabelled: stays numeric
    synthetic = frame.copy()
    synthetic["income"] = [b, 12.5, a, np.nan, 99.0, b]
    synthetic["sex"] = pd.Categorical(
        ["refused", "refused", "male", "female", "male", "female"], dtype=frame["sex"].dtype
    )
    out = tmp_path / "synthetic.dta"
    write_file(synthetic, out, cb)
    data, m1 = pyreadstat.read_dta(out, user_missing=True)
    _, m0 = pyreadstat.read_dta(dta, metadataonly=True)
    assert m1.column_labels == m0.column_labels
    assert m1.variable_value_labels == m0.variable_value_labels
    assert data["income"].tolist()[:3] == ["b", 12.5, "a"]
    assert data["sex"].tolist()[:3] == ["a", "a", 1]
    assert m1.readstat_variable_types["sex"] == m0.readstat_variable_types["sex"]  # int kept
    back, cb2 = read_file(out)
    pd.testing.assert_frame_equal(back, synthetic)
    assert cb2 == cb


def test_stata_integer_column_with_codes_and_empty_cells_keeps_its_values(tmp_path):
    """pyreadstat writes an empty cell of an integer column holding letters as 0; such a column
    is written as double, so the empty cell stays empty."""
    raw = pd.DataFrame({"n": pd.Series([1, 2, "a", 3], dtype=object)})
    path = tmp_path / "n.dta"
    pyreadstat.write_dta(raw, path, missing_user_values={"n": ["a"]})
    _, cb = read_file(path)
    synthetic = pd.DataFrame({"n": [np.nan, STATA_MISSING["a"], 4.0, 1.0]})
    write_file(synthetic, tmp_path / "out.dta", cb)
    back, _ = read_file(tmp_path / "out.dta")
    pd.testing.assert_frame_equal(back, synthetic)


def test_codebook_codes_feed_the_status_encoding(sav, dta):
    for path, column in [(sav, "income"), (dta, "income"), (sav, "sex"), (sav, "name")]:
        frame, cb = read_file(path)
        codes = cb.missing_codes[column]
        status, values, info = split_status(frame[column], codes)
        for j, code in enumerate(codes):
            held = frame[column].astype(object).to_numpy() == code
            assert np.array_equal(status == 2 + j, held)
        back = join_status(status, values, info, index=frame.index)
        pd.testing.assert_series_equal(back, frame[column])


def test_unlabelled_values_and_ambiguous_labels(tmp_path):
    raw = pd.DataFrame({"grp": [1.0, 2, 3], "dup": [1.0, 2, 1], "opinion": [1.0, 2, 5]})
    path = tmp_path / "x.sav"
    pyreadstat.write_sav(
        raw,
        path,
        variable_value_labels={
            "grp": {1: "one", 2: "two"},
            "dup": {1: "yes", 2: "yes"},
            "opinion": {1: "agree", 2: "disagree"},
        },
        variable_measure={"grp": "nominal", "dup": "nominal"},
    )
    frame, cb = read_file(path)
    # nominal with an unlabelled value: that value's text is its category
    assert list(frame["grp"].cat.categories) == ["one", "two", "3"]
    # two values share a label: not a category (the labels stay in the codebook)
    assert frame["dup"].dtype == np.float64 and cb.value_labels["dup"] == {1.0: "yes", 2.0: "yes"}
    # no measure and an unlabelled value held: numeric
    assert frame["opinion"].dtype == np.float64
    write_file(frame, tmp_path / "y.sav", cb)
    back, cb2 = read_file(tmp_path / "y.sav")
    pd.testing.assert_frame_equal(back, frame)
    assert cb2 == cb


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_plain_formats_round_trip(tmp_path, suffix):
    frame = pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"], "c": [0.5, np.nan, 2.0]})
    path = tmp_path / f"f{suffix}"
    write_file(frame, path)
    back, cb = read_file(path)
    pd.testing.assert_frame_equal(back, frame)
    assert cb.format == suffix[1:] and set(cb.variables) == {"a", "b", "c"}
    assert cb.missing_codes == {}


def test_bad_input_is_refused_before_writing(sav, tmp_path):
    frame, cb = read_file(sav)
    target = tmp_path / "out.sav"
    target.write_bytes(b"previous release")
    bad = frame.copy()
    bad["sex"] = bad["sex"].cat.add_categories(["other"])
    bad.loc[3, "sex"] = "other"
    with pytest.raises(ValueError, match=r"Column 'sex' holds 'other' \(row 3\)"):
        write_file(bad, target, cb)
    assert target.read_bytes() == b"previous release"  # untouched: written whole or not at all
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []
    with pytest.raises(ValueError, match=r"suffix '\.xlsx'"):
        write_file(frame, tmp_path / "x.xlsx", cb)
    with pytest.raises(ValueError, match=r"suffix '\.txt'"):
        read_file(tmp_path / "x.txt")
    with pytest.raises(FileNotFoundError):
        read_file(tmp_path / "absent.sav")
    with pytest.raises(TypeError, match="'frame' argument must be a pandas DataFrame"):
        write_file(frame.to_numpy(), target, cb)
    with pytest.raises(TypeError, match="'codebook' argument must be a Codebook"):
        write_file(frame, target, {"income": {}})


def test_date_columns_pass_through(tmp_path):
    import datetime

    raw = pd.DataFrame(
        {"born": [datetime.date(1990, 1, 2), datetime.date(2001, 5, 6)], "x": [1.0, -9.0]}
    )
    path = tmp_path / "d.sav"
    pyreadstat.write_sav(raw, path, missing_ranges={"x": [-9]})
    frame, cb = read_file(path)
    assert frame["born"].tolist() == raw["born"].tolist()
    assert cb.variables["born"].codes == {} and cb.missing_codes == {"x": [-9.0]}
    write_file(frame, tmp_path / "e.sav", cb)
    back, cb2 = read_file(tmp_path / "e.sav")
    pd.testing.assert_frame_equal(back, frame)
    assert cb2 == cb
