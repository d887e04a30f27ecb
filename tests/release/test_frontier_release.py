"""A pseudo posterior release whose weight setting is chosen on the risk-utility frontier
(``[frontier]``): the section's checks, the choice recorded in ``privacy.json`` and the report,
the released epsilon the refit's accountant's, the refusals, and the same seed's same release."""

from __future__ import annotations

import json

import pytest

from pseudopost.release import BudgetError, Ledger, account_release, run_release
from pseudopost.release.errors import SpecError
from pseudopost.release.spec import load_spec

#: a small grid around the fatigue fit at scale 1 (epsilon about 23 with these draws)
FRONTIER = {"scales": [0.3, 0.6, 1.0], "shifts": [0.0], "choose": "max_utility",
            "max_epsilon": 16.0}  # fmt: skip
BUDGET = {"total_epsilon": 500.0, "max_epsilon": 20.0}


def _spec(workdir, make_spec, name="spec.toml", drop=(), **sections):
    sections.setdefault("frontier", dict(FRONTIER))
    sections.setdefault("budget", BUDGET)
    return make_spec(workdir, name=name, drop=drop, **sections)


# ------------------------------------------------------------------ the section's checks
@pytest.mark.parametrize(
    ("frontier", "mechanism", "match"),
    [
        ({"bogus": 1}, {}, r"'frontier.bogus': expected one of the keys \["),
        ({"scales": []}, {}, r"'frontier.scales': expected a non-empty list of distinct numbers > 0"),
        ({"scales": [0.5, 0.0]}, {}, r"'frontier.scales'.*got \[0.5, 0.0\]"),
        ({"scales": [0.5, 0.5]}, {}, r"'frontier.scales'.*distinct"),
        ({"scales": "0.5"}, {}, r"'frontier.scales'.*got '0.5'"),
        ({"shifts": [0.1, True]}, {}, r"'frontier.shifts': expected a non-empty list of distinct"),
        ({"shifts": [-0.3]}, {}, r"'frontier.shifts'.*scale 0.3 and shift -0.3 make every weight 0"),
        ({"choose": "min_epsilon"}, {}, r"'frontier.choose': expected one of \['max_utility'\], "
                                        r"got 'min_epsilon'"),
        ({"max_epsilon": 25.0}, {}, r"'frontier.max_epsilon': expected at most budget.max_epsilon"),
        ({"max_epsilon": -1.0}, {}, r"'frontier.max_epsilon': expected a number > 0, got -1.0"),
        ({"datasets": 241}, {}, r"'frontier.datasets': expected at most the fit's 240 draws"),
        ({"max_refits": 0}, {}, r"'frontier.max_refits': expected an integer >= 1, got 0"),
        ({}, {"target_epsilon": 10.0}, r"'\[frontier\]' cannot be combined with "
                                       r"'mechanism.target_epsilon'.*both pick"),
        ({}, {"censor_epsilon": 10.0}, r"'mechanism.censor_epsilon'.*flat"),
        ({}, {"reweight": True}, r"'mechanism.reweight'.*Lipschitz"),
    ],
)  # fmt: skip
def test_bad_frontier_sections_are_refused_naming_key_value_and_expectation(
    workdir, make_spec, frontier, mechanism, match
):
    path = _spec(workdir, make_spec, frontier={**FRONTIER, **frontier}, mechanism=mechanism)
    with pytest.raises(SpecError, match=match):
        load_spec(path)


def test_a_missing_required_key_is_named(workdir, make_spec):
    path = _spec(workdir, make_spec, drop=["frontier.max_epsilon"])
    with pytest.raises(SpecError, match=r"'frontier.max_epsilon' is missing: expected a number"):
        load_spec(path)


def test_the_section_is_read_with_its_defaults(workdir, make_spec):
    path = _spec(workdir, make_spec, frontier={"scales": [0.5, 1], "max_epsilon": 10.0},
                 mechanism={"shift": 0.1})  # fmt: skip
    fs = load_spec(path).settings.frontier
    assert fs.scales == (0.5, 1.0) and fs.shifts == (0.1,)  # default: the mechanism's shift
    assert (fs.choose, fs.datasets, fs.max_refits) == ("max_utility", 1, 3)
    assert load_spec(_spec(workdir, make_spec, name="b.toml", drop=["frontier"])).settings.frontier is None  # fmt: skip


@pytest.mark.parametrize("mechanism", ["whole_file", "reps", "prism", "entropy"])
def test_mechanisms_that_cannot_honour_it_refuse_it_saying_why(tmp_path, write_spec, mechanism):
    path = write_spec(tmp_path, mechanism, frontier=dict(FRONTIER))
    with pytest.raises(SpecError, match=r"section 'frontier'.*single-outcome pseudo posterior"):
        load_spec(path, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ a release
@pytest.fixture(scope="module")
def frontier_release(tmp_path_factory, make_spec, copy_fatigue):
    folder = tmp_path_factory.mktemp("frontier")
    copy_fatigue(folder)
    outcome = run_release(_spec(folder, make_spec))
    return folder, outcome


def test_the_choice_is_recorded_and_the_released_epsilon_is_the_refits(frontier_release):
    folder, outcome = frontier_release
    p = json.loads((outcome.out / "privacy.json").read_text())
    fr = p["frontier"]
    assert fr["rule"] == "max_utility" and "lowest S_pMSE" in fr["rule_text"]
    assert fr["max_epsilon"] == 16.0 and len(fr["rows"]) == 3
    assert {"scale", "shift", "epsilon", "S_pMSE", "method", "khat", "DiSCO"} <= set(fr["rows"][0])
    # the rule: the lowest S_pMSE among the rows estimated within the target
    ok = [j for j, r in enumerate(fr["rows"]) if r["epsilon"] <= 16.0]
    assert sorted(fr["qualifying_rows"]) == ok
    best = min(ok, key=lambda j: fr["rows"][j]["S_pMSE"])
    assert fr["refits"][0]["row"] == best
    chosen, last = fr["chosen"], fr["refits"][-1]
    assert chosen["row"] == last["row"] and last["within_target"]
    assert all(not a["within_target"] for a in fr["refits"][:-1])
    # released: the refit's accountant's epsilon, within the target, never the estimate
    eps = outcome.epsilon
    assert eps == p["epsilon_per_dataset"] == fr["released_epsilon"] == last["refit_epsilon"]
    assert eps <= 16.0 and eps != chosen["estimated_epsilon"]
    assert account_release(outcome.out).epsilon == pytest.approx(eps, rel=1e-9)
    attrs = p["mechanism_attrs"]
    assert (attrs["scale"], attrs["shift"]) == (chosen["scale"], chosen["shift"])
    assert last["weights_max_abs_difference"] == 0.0  # the refit's weights are the row's
    assert "covered only as the local epsilon is" in fr["coverage"]
    frontier_stage = [s for s in p["stages"] if "frontier" in s["stage"]]
    assert len(frontier_stage) == 1 and frontier_stage[0]["epsilon"] == 0.0
    # the ledger charges the refit's epsilon per dataset, nothing for the frontier
    (entry,) = Ledger(folder / "fatigue.csv.ledger.json").read()["entries"]
    assert entry["charge"] == pytest.approx(2 * eps)


def test_the_report_shows_the_frontier_plot_and_table(frontier_release):
    _, outcome = frontier_release
    page = (outcome.out / "report.html").read_text()
    section = page[page.index("<h2>Risk-utility frontier and the chosen setting</h2>") :]
    section = section[: section.index("<h2>", 10)]
    assert section.count("data:image/png;base64,") == 1
    assert "<th>qualifies</th>" in section and "<th>S_pMSE</th>" in section
    assert "<th>refit_epsilon</th>" in section and "covered only as the local epsilon" in section
    assert "weight setting (chosen on the frontier)" in page


def test_same_seed_same_release_and_the_same_as_the_spec_at_the_chosen_setting(
    frontier_release, make_spec
):
    folder, first = frontier_release
    again = run_release(_spec(folder, make_spec, name="again.toml"), out=folder / "again")
    chosen = json.loads((first.out / "privacy.json").read_text())["frontier"]["chosen"]
    plain = _spec(folder, make_spec, name="plain.toml", drop=["frontier"],
                  mechanism={"scale": chosen["scale"], "shift": chosen["shift"]})  # fmt: skip
    direct = run_release(plain, out=folder / "direct")
    for name in ("synthetic-1.csv", "synthetic-2.csv"):
        data = (first.out / name).read_bytes()
        assert (again.out / name).read_bytes() == data
        assert (direct.out / name).read_bytes() == data
    assert again.epsilon == first.epsilon == direct.epsilon
    assert (again.out / "privacy.json").read_bytes() == (first.out / "privacy.json").read_bytes()


def test_no_qualifying_row_is_refused_before_anything_is_written(workdir, make_spec):
    path = _spec(workdir, make_spec, frontier={**FRONTIER, "max_epsilon": 0.5})
    with pytest.raises(BudgetError, match=r"no setting of the frontier has an estimated epsilon "
                                          r"<= frontier.max_epsilon = 0.5 \(the lowest"):  # fmt: skip
        run_release(path)
    assert not (workdir / "release").exists()
    assert not (workdir / "fatigue.csv.ledger.json").exists()
    assert [p.name for p in workdir.iterdir() if p.name.startswith(".")] == []


def test_the_cap_is_the_frontiers_target(workdir, make_spec):
    """The pre-check cap of a release with ``[frontier]`` is m times the frontier's target
    (a release above it is refused), not m times budget.max_epsilon."""
    from pseudopost.release.adapters import ADAPTERS

    spec = load_spec(_spec(workdir, make_spec))
    assert ADAPTERS[spec.mechanism].cap(spec) == (spec.m * FRONTIER["max_epsilon"], 0.0)
    plain = load_spec(_spec(workdir, make_spec, name="plain.toml", drop=["frontier"]))
    assert ADAPTERS[plain.mechanism].cap(plain) == (plain.m * BUDGET["max_epsilon"], 0.0)
