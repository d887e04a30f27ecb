"""The contract every mechanism adapter keeps (scikit-learn style: one suite, every adapter):
its spec keys refused with a message naming ``section.key``, the value and what was expected;
a fit and m synthetic datasets with a privacy statement held to the adapter's cap; the ledger
charging ``statement.charge(m)``; and ``account`` refused unless the mechanism has something
to re-account."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from pseudopost.models.registry import MODEL_NAMES
from pseudopost.privacy.statement import PrivacyStatement
from pseudopost.release import (
    ADAPTERS,
    MECHANISMS,
    Ledger,
    MechanismAdapter,
    SpecError,
    load_spec,
    resolve,
    validate,
)
from pseudopost.release.schema import EXPECTED

BUILT_IN = ["pseudo_posterior", "reps", "prism", "entropy", "whole_file"]

#: a value of the wrong kind for each kind, and what the message then says is expected
WRONG = {
    "str": (1, EXPECTED["str"]),
    "list[str]": ("x", EXPECTED["list[str]"]),
    "posfloat": (0, EXPECTED["posfloat"]),
    "nonnegfloat": (-1.0, EXPECTED["nonnegfloat"]),
    "float": ("x", EXPECTED["float"]),
    "bool": ("yes", EXPECTED["bool"]),
    "posint": (0, EXPECTED["posint"]),
    "nonnegint": (-1, EXPECTED["nonnegint"]),
    "table": (1, "a non-empty table"),
}


def test_registry_names_every_adapter_once():
    assert list(ADAPTERS) == BUILT_IN and MECHANISMS == tuple(BUILT_IN)
    for name, adapter in ADAPTERS.items():
        assert isinstance(adapter, MechanismAdapter) and adapter.name == name
        assert adapter.sections["mechanism"]["name"] == (True, "str")
        assert set(adapter.required) <= set(adapter.sections)


def test_model_families_come_from_the_model_registry(tmp_path, write_spec):
    pp = ADAPTERS["pseudo_posterior"]
    assert set(pp.families) <= set(MODEL_NAMES)
    with pytest.raises(SpecError, match=r"expected one of \['normal', 'lognormal', 'poisson'"):
        load_spec(write_spec(tmp_path, "pseudo_posterior", model={"family": "gamma"}))
    with pytest.raises(SpecError) as err:  # a model name the release does not support
        load_spec(write_spec(tmp_path, "pseudo_posterior", model={"family": "logistic"}))
    assert str(err.value).startswith(
        "spec key 'model.family': expected a family the pseudo posterior release supports "
        "['normal', 'lognormal', 'poisson', 'negative_binomial'], got 'logistic'. Fix:"
    )


def _kind_cases():
    for name in BUILT_IN:
        for section, keys in ADAPTERS[name].sections.items():
            yield pytest.param(name, section, "bogus", None, id=f"{name}-{section}-unknown")
            for key, (_, kind) in keys.items():
                if key != "name" and isinstance(kind, str):
                    yield pytest.param(name, section, key, kind, id=f"{name}-{section}.{key}")


@pytest.mark.parametrize(("name", "section", "key", "kind"), list(_kind_cases()))
def test_bad_keys_are_refused_naming_the_key(tmp_path, write_spec, name, section, key, kind):
    if kind is None:
        value, expected = 1, f"one of the keys {sorted(ADAPTERS[name].sections[section])}"
    else:
        value, expected = WRONG[kind]
    spec = write_spec(tmp_path, name, **{section: {key: value}})
    with pytest.raises(SpecError) as err:
        load_spec(spec, out=tmp_path / "out")
    message = str(err.value)
    assert message.startswith(f"spec key '{section}.{key}': expected {expected}"), message
    assert f"got {value!r}" in message and "Fix:" in message and "\n" not in message


SMALL = {
    "pseudo_posterior": {"sampling": {"draws": 60, "tune": 60, "chains": 1, "seed": 3}},
    "reps": {},
    "prism": {},
    "entropy": {},
    "whole_file": {},
}


@pytest.fixture(scope="module", params=BUILT_IN)
def produced(request, tmp_path_factory, write_spec):
    """(adapter, resolved spec, data as read, a copy of it, what fit + synthesize produced)."""
    name = request.param
    spec = load_spec(write_spec(tmp_path_factory.mktemp(name), name, **SMALL[name]))
    data = validate(spec)
    spec = resolve(spec, data)
    before = data.copy()
    adapter = ADAPTERS[name]
    made = adapter.fit(spec, data, progress=False)
    made.synthetic = adapter.synthesize(spec, made)
    return adapter, spec, data, before, made


def test_produce_gives_m_datasets_of_the_released_columns(produced):
    adapter, spec, data, before, made = produced
    pd.testing.assert_frame_equal(data, before)  # the input is never modified
    assert len(made.synthetic) == spec.m == 2
    for frame in made.synthetic:
        assert list(frame.columns) == spec.columns and len(frame) == made.rows
        if not adapter.missing_cells:  # a whole file keeps its empty cells
            assert frame.notna().all().all()
    assert not made.synthetic[0].equals(made.synthetic[1])  # two draws, not one twice
    again = adapter.synthesize(spec, made)  # same seed, same datasets
    for a, b in zip(again, made.synthetic, strict=True):
        pd.testing.assert_frame_equal(a, b)


def test_the_statement_is_held_to_the_cap(produced):
    adapter, spec, _, _, made = produced
    st = made.statement
    assert isinstance(st, PrivacyStatement) and st.epsilon > 0
    eps, delta = st.charge(spec.m)
    cap, delta_cap = adapter.cap(spec)
    assert eps <= cap * (1 + 1e-9) and delta <= delta_cap * (1 + 1e-9) + 1e-15
    one = st.charge(1)
    if st.unit == "dataset":  # m datasets compose: m epsilon, plus a structure stage once
        assert (eps, delta) == pytest.approx(
            (
                spec.m * st.epsilon + st.structure_epsilon,
                spec.m * st.delta + st.structure_delta,
            )
        )
        assert one == pytest.approx(
            (st.epsilon + st.structure_epsilon, st.delta + st.structure_delta)
        )
    else:  # m samples of one release: charged once
        assert (eps, delta) == one and cap == spec.settings.epsilon


def test_privacy_record_and_report_parts(produced):
    adapter, spec, data, _, made = produced
    record = adapter.privacy_record(spec, made)
    assert {"description", "stages", "budget", "neighbouring_relation", "guarantee_type"} <= set(
        record
    )
    assert record["epsilon_total"] == pytest.approx(made.statement.charge(spec.m)[0])
    assert record["budget"]["charge"] == pytest.approx(made.statement.charge(spec.m)[0])
    json.dumps(record, default=float)  # JSON-ready apart from NumPy scalars
    measures = adapter.measures(spec, data, made.synthetic)
    assert len(measures.disclosure) == spec.m and measures.utility
    parts = adapter.report_parts(spec, made, record)
    assert parts.facts and parts.before


@pytest.mark.parametrize("name", ["reps", "prism", "entropy"])
def test_account_is_refused_without_a_posterior(tmp_path, name):
    (tmp_path / "privacy.json").write_text(
        json.dumps(
            {
                "statement": PrivacyStatement(
                    name, 2.0, 1e-6, "replace one record", "global", "release"
                ).as_dict()
            }
        )
    )
    with pytest.raises(SpecError) as err:
        ADAPTERS[name].check_accountable(tmp_path)
    message = str(err.value)
    assert f"holds a {name} release: there is no posterior to re-account" in message
    assert "global (2, 1e-06)-DP for the whole release" in message and "\n" not in message


def test_account_refusal_reads_an_older_privacy_record(tmp_path):
    (tmp_path / "privacy.json").write_text(json.dumps({"epsilon": 2.0, "delta": 1e-6}))
    with pytest.raises(SpecError, match=r"\(epsilon, delta\) = \(2\.0, 1e-06\)"):
        ADAPTERS["reps"].check_accountable(tmp_path)


def test_account_needs_the_saved_fit(tmp_path):
    with pytest.raises(SpecError, match=r"has no fit\.nc"):
        ADAPTERS["pseudo_posterior"].check_accountable(tmp_path)


def test_the_ledger_charges_each_statement(released, lighter_released):
    ledgers = [released / "fatigue.csv.ledger.json"]
    folder = lighter_released["reps"].parent / "data"
    ledgers += [
        folder / "breast_cancer_wdbc.csv.ledger.json",
        folder / "german_credit.csv.ledger.json",
        folder / "slid.csv.ledger.json",
    ]
    seen = set()
    for path in ledgers:
        for e in Ledger(path).read()["entries"]:
            st = PrivacyStatement.from_dict(e["statement"])
            assert (e["charge"], e["delta_charge"]) == st.charge(e["m"])
            assert (e["epsilon"], e["delta"]) == (st.epsilon, st.delta)
            assert e["guarantee"] == st.scope and e["neighbouring"] == st.neighbouring
            p = json.loads((released / "release" / "privacy.json").read_text())
            if e["mechanism"] != "pseudo_posterior":
                p = json.loads((lighter_released[e["mechanism"]] / "privacy.json").read_text())
            assert p["statement"] == e["statement"] and p["guarantee_kind"] == st.scope
            seen.add(e["mechanism"])
    assert seen == set(BUILT_IN)


def test_whole_file_spec_defaults_are_synthesize_defaults(tmp_path, lighter_spec):
    """A whole-file spec that leaves the mechanism's and sampling's keys out gets
    pseudopost.synthesize's defaults: the same release from the command line and the API."""
    import inspect

    from pseudopost import synthesize

    spec = load_spec(lighter_spec(tmp_path, "whole_file", drop=[
        "mechanism.weight_floor", "mechanism.risk_fit", "sampling.draws", "sampling.tune",
        "sampling.chains",
    ]))  # fmt: skip
    defaults = {k: p.default for k, p in inspect.signature(synthesize).parameters.items()}
    st = spec.settings
    assert st.options["weight_floor"] == defaults["weight_floor"] == 0.5
    assert st.options["risk_fit"] == defaults["risk_fit"] == "laplace"
    assert (st.draws, st.tune, st.chains) == (
        defaults["draws"], defaults["tune"], defaults["chains"]
    ) == (250, 100, 2)  # fmt: skip


def test_whole_file_spec_declares_derived_columns(tmp_path, lighter_spec):
    """``[file.columns.X] derived = "..."`` reaches the declarations; a bad value is refused
    naming the key."""
    file = {"order": ["age", "sex", "language", "education"], "rules": []}
    spec = load_spec(lighter_spec(tmp_path, "whole_file", file={
        **file, "columns": {"wages": {"derived": "education * 2"}},
    }))  # fmt: skip
    assert spec.settings.declarations["derived"] == {"wages": "education * 2"}
    with pytest.raises(SpecError, match=r"file\.columns\.wages\.derived"):
        load_spec(lighter_spec(tmp_path, "whole_file", name="bad.toml", file={
            **file, "columns": {"wages": {"derived": 3}},
        }))  # fmt: skip
