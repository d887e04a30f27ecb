"""Atomic writes, the ledger's rules, and the post-fit refusal of non-finite synthetic data."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pseudopost._io import atomic_write, write_json
from pseudopost.cli import main
from pseudopost.release import BudgetError, Ledger, ReleaseError
from pseudopost.release.run import _check_finite

SHA = "ab" * 32


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    def broken(path):
        path.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(tmp_path / "out.json", broken)
    assert list(tmp_path.iterdir()) == []


def test_atomic_write_replaces_whole_and_is_readable(tmp_path):
    target = tmp_path / "a.json"
    write_json({"x": 1}, target)
    write_json({"x": 2}, target)
    assert target.read_text() == '{\n  "x": 2\n}'
    assert target.stat().st_mode & 0o777 == 0o644
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_ledger_commits_and_refuses_overspending(tmp_path):
    ledger = Ledger(tmp_path / "d.ledger.json")
    assert ledger.read() is None
    ledger.precheck(SHA, 10.0, 10.0)
    ledger.commit(SHA, 10.0, {"out": "a", "m": 2, "epsilon": 3.0, "charge": 6.0})
    ledger.precheck(SHA, 10.0, 4.0)  # exactly what remains is allowed
    with pytest.raises(BudgetError, match="only 4 of the total 10 remains"):
        ledger.precheck(SHA, 10.0, 4.5)
    with pytest.raises(BudgetError, match="only 4 of the total 10"):
        ledger.commit(SHA, 10.0, {"out": "b", "m": 1, "epsilon": 5.0, "charge": 5.0})
    assert len(ledger.read()["entries"]) == 1
    with pytest.raises(BudgetError, match="fixed by its ledger"):
        ledger.precheck(SHA, 20.0, 1.0)
    with pytest.raises(BudgetError, match="belongs to a dataset"):
        ledger.precheck("cd" * 32, 10.0, 1.0)


def test_failed_precondition_charges_nothing(tmp_path):
    ledger = Ledger(tmp_path / "d.ledger.json")

    def refuse():
        raise RuntimeError("output appeared")

    with pytest.raises(RuntimeError):
        ledger.commit(
            SHA, 10.0, {"out": "a", "m": 1, "epsilon": 1.0, "charge": 1.0}, precondition=refuse
        )
    assert ledger.read() is None


@pytest.mark.parametrize(
    ("content", "message"),
    [("{not json", "not valid JSON"), ('{"format": "other"}', "not a pseudopost ledger")],
)
def test_corrupt_ledger_is_reported(tmp_path, capsys, content, message):
    path = tmp_path / "d.ledger.json"
    path.write_text(content)
    with pytest.raises(BudgetError, match=message):
        Ledger(path).read()
    assert main(["ledger", str(path)]) == 3
    assert message in capsys.readouterr().err


def test_ledger_command_shows_entries(tmp_path, capsys):
    ledger = Ledger(tmp_path / "d.csv.ledger.json")
    ledger.commit(SHA, 10.0, {"out": "rel", "m": 2, "epsilon": 1.5, "charge": 3.0})
    assert main(["ledger", str(ledger.path)]) == 0
    out = capsys.readouterr().out
    assert "spent 3; remaining 7" in out and "rel" in out


def test_non_finite_synthetic_data_are_refused():
    good = pd.DataFrame({"x": [1.0, 2.0], "y": [1.0, 2.0]})
    _check_finite([good])
    bad = good.assign(y=[1.0, np.inf])
    with pytest.raises(
        ReleaseError, match=r"synthetic dataset 2 has 1 non-finite value\(s\) \(column 'y'\)"
    ):
        _check_finite([good, bad])


def test_ledger_composes_delta_and_keeps_guarantees_apart(tmp_path):
    ledger = Ledger(tmp_path / "d.ledger.json")
    entry = {"out": "a", "m": 1, "epsilon": 1.0, "charge": 1.0, "guarantee": "global"}
    ledger.precheck(SHA, 10.0, 1.0, total_delta=1e-5, delta_cap=6e-6)
    ledger.commit(SHA, 10.0, {**entry, "delta_charge": 6e-6}, total_delta=1e-5)
    assert ledger.read()["total_delta"] == 1e-5
    # basic composition: 6e-6 + 5e-6 > 1e-5 is refused, 4e-6 (exactly what remains) is not
    with pytest.raises(BudgetError, match="only 4e-06 of the total delta 1e-05 remains"):
        ledger.precheck(SHA, 10.0, 1.0, total_delta=1e-5, delta_cap=5e-6)
    with pytest.raises(BudgetError, match="total delta"):
        ledger.commit(SHA, 10.0, {**entry, "delta_charge": 5e-6}, total_delta=1e-5)
    ledger.commit(SHA, 10.0, {**entry, "delta_charge": 4e-6}, total_delta=1e-5)
    # a pure-epsilon local release needs no total delta and spends none
    ledger.commit(SHA, 10.0, {**entry, "guarantee": "local", "charge": 2.5})
    content = ledger.read()
    assert Ledger.spent_delta(content) == pytest.approx(1e-5)
    assert Ledger.spent_by_guarantee(content) == {"global": 2.0, "local": 2.5}
    with pytest.raises(BudgetError, match="of the total delta 1e-05 remains"):
        ledger.precheck(SHA, 10.0, 1.0, total_delta=1e-5, delta_cap=1e-9)
    with pytest.raises(BudgetError, match=r"'budget\.total_delta': expected the ledger's total"):
        ledger.precheck(SHA, 10.0, 1.0, total_delta=2e-5)
    other = Ledger(tmp_path / "e.ledger.json")
    with pytest.raises(BudgetError, match="sets a total delta"):
        other.precheck(SHA, 10.0, 1.0, delta_cap=1e-6)


def _statement(scope, epsilon=1.0, delta=0.0, neighbouring="replace one record", unit="release"):
    from pseudopost.privacy.statement import PrivacyStatement

    return PrivacyStatement("x", epsilon, delta, neighbouring, scope, unit)


def _entry(st, m=1, out="a"):
    eps, delta = st.charge(m)
    return {
        "out": out,
        "m": m,
        "epsilon": st.epsilon,
        "charge": eps,
        "delta": st.delta,
        "delta_charge": delta,
        "guarantee": st.scope,
        "neighbouring": st.neighbouring,
        "statement": st.as_dict(),
    }


def test_running_totals_never_add_a_local_epsilon_into_a_global_total(tmp_path):
    from pseudopost.privacy.statement import ADD_REMOVE

    ledger = Ledger(tmp_path / "d.ledger.json")
    glob = _statement("global", 1.0, 1e-6)
    weights = _statement("global given the weights", 0.5, neighbouring=ADD_REMOVE, unit="dataset")
    local = _statement("local", 1.25, neighbouring=ADD_REMOVE, unit="dataset")
    ledger.commit(SHA, 10.0, _entry(glob, m=3), total_delta=1e-4)  # per release: charged once
    ledger.commit(SHA, 10.0, _entry(weights, m=2))  # per dataset: 2 x 0.5
    ledger.commit(SHA, 10.0, _entry(local, m=2))  # per dataset: 2 x 1.25
    content = ledger.read()
    totals = Ledger.totals(content)
    assert [t.scope for t in totals.values()] == ["global", "global given the weights", "local"]
    assert (totals["global"].epsilon, totals["global"].delta) == (1.0, 1e-6)
    assert totals["global"].releases == 1 and totals["global"].one_relation
    assert totals["global given the weights"].epsilon == 2.0  # the global one holds given them
    assert totals["local"].epsilon == 4.5 and totals["local"].releases == 3
    assert not totals["local"].one_relation  # replace-one and add/remove summed: bookkeeping
    assert Ledger.spent_by_guarantee(content) == {
        "global": 1.0,
        "global given the weights": 1.0,
        "local": 2.5,
    }
    # the budget check compares the local total (every charge): 10 - 4.5 remain for any scope
    assert Ledger.spent(content) == 4.5
    ledger.precheck(SHA, 10.0, 5.5)
    with pytest.raises(BudgetError, match=r"only 5\.5 of the total 10 remains"):
        ledger.precheck(SHA, 10.0, 5.6)
    shown = ledger.summary()
    assert "  global                    epsilon 1 " in shown
    assert "  local                     epsilon 4.5 " in shown and "bookkeeping" in shown


def test_an_entry_is_charged_what_its_statement_says(tmp_path):
    ledger = Ledger(tmp_path / "d.ledger.json")
    per_dataset = _statement("local", 1.5, unit="dataset")
    wrong = {**_entry(per_dataset, m=2), "charge": 1.5}  # m = 2 datasets cost 3, not 1.5
    with pytest.raises(ValueError, match="its statement charges"):
        ledger.commit(SHA, 10.0, wrong)
    scope = {**_entry(per_dataset, m=2), "guarantee": "global"}
    with pytest.raises(ValueError, match="with scope 'local'"):
        ledger.commit(SHA, 10.0, scope)
    assert ledger.read() is None


def test_format_2_ledger_is_read_and_upgraded_on_write(tmp_path):
    import json

    old = {
        "format": "pseudopost-ledger/2",
        "dataset_sha256": SHA,
        "total_epsilon": 10.0,
        "total_delta": 1e-5,
        "entries": [
            {"time": "2026-01-01T00:00:00+00:00", "out": "r", "m": 2, "epsilon": 2.0,
             "charge": 2.0, "delta": 1e-6, "delta_charge": 1e-6, "guarantee": "global",
             "neighbouring": "replace-one (same n, one record changed), PRISM section 3.2",
             "spec_sha256": "x", "mechanism": "prism"},
            {"time": "2026-01-02T00:00:00+00:00", "out": "p", "m": 2, "epsilon": 1.0,
             "charge": 2.0, "delta": 0.0, "delta_charge": 0.0, "guarantee": "local",
             "neighbouring": "add/remove one record", "spec_sha256": "y",
             "mechanism": "pseudo_posterior"},
        ],
    }  # fmt: skip
    path = tmp_path / "d.ledger.json"
    path.write_text(json.dumps(old))
    ledger = Ledger(path)
    totals = Ledger.totals(ledger.read())
    assert totals["global"].epsilon == 2.0 and totals["local"].epsilon == 4.0
    with pytest.raises(BudgetError, match="only 6 of the total 10 remains"):
        ledger.precheck(SHA, 10.0, 6.5, total_delta=1e-5)
    ledger.commit(SHA, 10.0, _entry(_statement("global", 1.0, 2e-6), out="new"), total_delta=1e-5)
    content = ledger.read()
    assert content["format"] == "pseudopost-ledger/3"
    assert content["entries"][:2] == old["entries"]  # kept as they were
    assert Ledger.spent(content) == 5.0 and Ledger.spent_delta(content) == pytest.approx(3e-6)
    assert content["entries"][2]["statement"]["scope"] == "global"
