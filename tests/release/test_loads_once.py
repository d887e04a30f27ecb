"""A whole-file release reads its input once and plans once (issue 29, item 4): the SPSS file is
read with its codebook in one go, and the structure stage and the file plan are built once and
carried through the fit, the measures and the report; ``account`` does the same on its own."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest

SPEC = """
[data]
path = "s.sav"

[mechanism]
name = "whole_file"

[file]
rules = ["income is missing when sex == 'female' and age < 18"]

[sampling]
draws = 30
tune = 30
chains = 1
seed = 2026

[release]
m = 2
out = "out"

[budget]
total_epsilon = 5000.0
max_epsilon = 1000.0
total_delta = 1e-4

[disclosure]
keys = ["age", "sex"]
sensitive = "income"
"""


@pytest.fixture
def counted(monkeypatch, tmp_path):
    """A small SPSS file and its spec in ``tmp_path``, and a Counter of the input's reads
    (``read_file``, pyreadstat's reader), the file plans (``make_plan``) and the structure
    stages (``estimate_structure``), wherever they are called from."""
    pyreadstat = pytest.importorskip("pyreadstat")
    import pseudopost.formats as formats
    import pseudopost.mechanisms.structure as structure
    import pseudopost.models.file as file_models
    import pseudopost.models.file.model as file_model
    import pseudopost.models.file.plan as file_plan

    rng = np.random.default_rng(2)
    n = 400
    raw = pd.DataFrame(
        {
            "age": rng.integers(16, 70, n).astype(float),
            "sex": rng.choice([1.0, 2.0], n),
            "income": np.where(rng.random(n) < 0.15, -8.0, np.round(rng.lognormal(7, 0.5, n))),
        }
    )
    raw.loc[(raw.sex == 1.0) & (raw.age < 18), "income"] = np.nan
    pyreadstat.write_sav(
        raw, str(tmp_path / "s.sav"),
        variable_value_labels={"sex": {1.0: "female", 2.0: "male"}, "income": {-8.0: "refused"}},
        missing_ranges={"income": [-8.0]},
        variable_measure={"age": "scale", "sex": "nominal", "income": "scale"},
    )  # fmt: skip
    (tmp_path / "spec.toml").write_text(SPEC)
    counts: Counter[str] = Counter()

    def counting(name, function):
        def wrapper(*args, **kwargs):
            counts[name] += 1
            return function(*args, **kwargs)

        return wrapper

    read_file = counting("read_file", formats.read_file)
    monkeypatch.setattr(formats, "read_file", read_file)
    monkeypatch.setattr(pyreadstat, "read_sav", counting("read_sav", pyreadstat.read_sav))
    make_plan = counting("make_plan", file_plan.make_plan)
    for module in (file_plan, file_model, file_models):
        monkeypatch.setattr(module, "make_plan", make_plan)
    stage = counting("estimate_structure", structure.estimate_structure)
    monkeypatch.setattr(structure, "estimate_structure", stage)
    return tmp_path, counts


def test_a_whole_file_release_reads_once_and_plans_once(counted):
    from pseudopost.release import account_release, run_release

    folder, counts = counted
    outcome = run_release(folder / "spec.toml", progress=False)
    assert (outcome.out / "synthetic-1.sav").is_file()  # the codebook reached the writer
    assert dict(counts) == {"read_file": 1, "read_sav": 1, "make_plan": 1, "estimate_structure": 1}

    counts.clear()
    result = account_release(outcome.out)
    assert result.agrees
    assert dict(counts) == {"read_file": 1, "read_sav": 1, "make_plan": 1, "estimate_structure": 1}
