"""``pseudopost.synthesize`` on whole files as they are: automatic choices, validation, the real
survey files with their missing cells (shares of missing cells and codes kept, weighted epsilon
below unweighted, the input untouched), the weight floor, SPSS files with their labels, and one
seed giving one file whatever the number of threads."""

import warnings

import numpy as np
import pandas as pd
import pytest

from pseudopost.datasets import DATA_DIR
from pseudopost.models.status import split_status
from pseudopost.synthesis import choose_model, model_class, synthesize

DRAWS = 100


def _choice(values, **kw):
    return choose_model(pd.Series(values), "c", **kw)


@pytest.mark.parametrize(
    ("values", "model", "detected"),
    [
        (np.array([True, False, True]), "logistic", "binary"),
        (["a", "b", "a"], "logistic", "binary"),
        (np.array([0, 1, 1, 0]), "logistic", "binary"),
        (["a", "b", "c", "a"], "categorical", "categorical"),
        (np.array([1, 2, 3, 2, 1]), "categorical", "categorical"),
        (np.array([-1.5, 0.2, 3.0, 1.1]), "normal", "real"),
        (np.array([0.0, 0.0, 2.5, 7.1, 0.4]), "hurdle_lognormal", "zero-inflated amount"),
        (
            np.array([0, 0, 2174, 14084, 5013, 0, 3103, 7688]),
            "hurdle_lognormal",
            "zero-inflated amount",
        ),
        (np.exp(np.linspace(-2, 3, 50)), "lognormal", "positive skewed"),
        (np.linspace(10, 20, 50), "normal", "positive"),
        (np.arange(0, 40) % 17, "negative_binomial", "count"),
    ],
)
def test_choose_model_rules(values, model, detected):
    c = _choice(values)
    assert (c.model, c.detected) == (model, detected), c.reason


def test_choose_model_ordinal_and_unconditioned_categorical():
    ordered = pd.Categorical(["lo", "hi", "mid"], categories=["lo", "mid", "hi"], ordered=True)
    assert _choice(ordered).model == "ordinal"
    marginal = _choice(["a", "b", "c"], conditioned=False).model
    assert marginal == "dirichlet_categorical"
    assert model_class(marginal).family == "dirichlet_categorical"


def test_model_class_names_and_errors():
    from pseudopost.models import LogNormalRegression

    assert model_class("lognormal") is LogNormalRegression
    assert model_class("NegBin").__name__ == "NegativeBinomialRegression"
    with pytest.raises(ValueError, match=r"Unknown model name 'gamma' for column 'x'"):
        model_class("gamma", "x")


@pytest.fixture
def small():
    rng = np.random.default_rng(3)
    n = 40
    return pd.DataFrame(
        {
            "g": rng.choice(["a", "b"], n),
            "x": rng.lognormal(size=n),
            "k": rng.poisson(2, n),
        }
    )


def test_bad_input_is_refused_before_any_work(small):
    with pytest.raises(ValueError, match=r"'order' names column\(s\) \['nope'\]"):
        synthesize(small, order=["g", "nope"])
    with pytest.raises(ValueError, match=r"'keep' names column\(s\) \['nope'\]"):
        synthesize(small, keep=["nope"])
    with pytest.raises(ValueError, match=r"'models' names column\(s\) \['nope'\]"):
        synthesize(small, models={"nope": "normal"})
    with pytest.raises(ValueError, match=r"Unknown model name 'gamma' for column 'x'"):
        synthesize(small, models={"x": "gamma"})
    with pytest.raises(ValueError, match=r"not synthesized"):
        synthesize(small, order=["x"], keep=["g", "k"], models={"k": "poisson"})
    with pytest.raises(ValueError, match=r"neither in 'order' nor in 'keep' or 'drop'"):
        synthesize(small, order=["x"])
    with pytest.raises(ValueError, match=r"at least 2 rows. Got 0"):
        synthesize(small.iloc[:0])
    bad = small.assign(x=small.x.where(small.index != 4, 0.0))
    with pytest.raises(ValueError, match=r"outcome 'x' must be strictly positive .* record 4"):
        synthesize(bad, models={"x": "lognormal"})
    with pytest.raises(TypeError, match=r"must be a pandas DataFrame"):
        synthesize(small.to_numpy())
    with pytest.raises(TypeError, match=r"code 'x' of column 'k' must be a number"):
        synthesize(small, missing_codes={"k": ["x"]})
    with pytest.raises(ValueError, match=r"'weight_floor' parameter must be in the interval"):
        synthesize(small, weight_floor=2.0)


def test_missing_cells_and_constant_columns_are_accepted(small):
    from pseudopost.models.file import FileModel

    frame = small.assign(g=small.g.where(small.index != 5, None), one="only")
    model = FileModel()
    table = model.choices(model.prepare(frame)).set_index("column")
    assert "missing cells and codes are levels" in table.loc["g", "reason"]
    assert table.loc["one", "parts"] == "-"  # one level: drawn with certainty, no part


# ---------------------------------------------------------------------- a small Adult run
@pytest.fixture(scope="module")
def adult_run():
    """A small Adult subsample (fixed seed) through the whole pipeline."""
    from pseudopost.datasets import load_adult

    frame = load_adult()[["sex", "age", "income"]].sample(300, random_state=4)
    frame = frame.reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = synthesize(frame, draws=200, tune=200, seed=9)
    return frame, out


def test_adult_weighted_epsilon_below_unweighted(adult_run):
    frame, out = adult_run
    assert out.epsilon < out.unweighted_epsilon
    lip = out.lipschitz.to_numpy()
    assert lip.shape == (len(frame),)
    assert out.epsilon == pytest.approx(2 * lip.max())


def test_adult_choices_and_synthetic_frame(adult_run):
    frame, out = adult_run
    table = out.choices.set_index("column")
    # age's integers and support from the structure stage (DP): modelled over its integers, or
    # by bins when its support holds more than MAX_GRID_POINTS of them
    age = out.structure.columns["age"]
    assert age.integer and list(table.model) == ["logistic", age.model, "logistic"]
    assert set(table.role) == {"synthetic"}
    family = "cumulative" if age.model == "grid_ordinal" else "binned"
    assert table.loc["age", "parts"].startswith(f"age.value ({family}")
    assert pd.api.types.is_integer_dtype(out.synthetic.age)
    assert table.loc["age", "support"].startswith("DP (epsilon")
    lo, hi = out.structure.columns["age"].support
    assert out.synthetic.age.between(lo, hi).all()
    syn = out.synthetic
    assert (syn.dtypes == frame.dtypes).all()
    for c in ("sex", "income"):
        assert set(syn[c]) <= set(frame[c])
    assert out.synthetic_columns == ["sex", "age", "income"]
    assert out.result.likelihood == "parts"


def test_adult_same_seed_same_synthesis(adult_run):
    frame, out = adult_run
    a = out.synthesize_datasets(2, seed=5)
    b = out.synthesize_datasets(2, seed=5)
    for x, y in zip(a, b, strict=True):
        pd.testing.assert_frame_equal(x, y)
    u = out.synthesize(seed=5, weighted=False)
    assert list(u.columns) == ["sex", "age", "income"]
    assert (u.dtypes == frame.dtypes).all()
    pd.testing.assert_frame_equal(u, out.result.synthesize(seed=5, weighted=False))
    mechanism = out.result.privacy_statement
    assert out.privacy_statement.epsilon == mechanism.epsilon
    assert out.privacy_statement.structure_epsilon == pytest.approx(out.structure_epsilon)
    assert mechanism.structure_epsilon == 0.0 and out.structure_epsilon > 0
    assert out.privacy_statement.scope == "local"
    # sex and income are text: their levels by DP partition selection, the stage's delta
    assert set(out.structure.levels) == {"sex", "income"}
    assert out.privacy_statement.structure_delta == pytest.approx(2e-7)


def test_risk_step_draws_at_most_risk_draws_per_chain_and_the_statement_says_so(adult_run):
    """draws=200: the weighted fit (the accountant's draws) keeps all 200 per chain, the risk
    step under risk_fit='laplace' draws RISK_DRAWS = 100 per chain; both Ms are stated."""
    from pseudopost.mechanisms.pseudo_posterior.core import RISK_DRAWS

    _, out = adult_run
    tree = out.result.datatree
    chains = tree["posterior"].sizes["chain"]
    assert tree["posterior"].sizes["draw"] == 200
    assert tree["risk_posterior"].sizes["draw"] == RISK_DRAWS == 100
    stated = " ".join(out.privacy_statement.assumptions)
    assert f"M = {chains * 200} posterior draws of the weighted fit" in stated
    assert f"over the {chains * 100} draws of the risk step" in stated


def test_adult_synthesize_m_is_deprecated_and_returns_its_old_types(adult_run):
    _, out = adult_run
    with pytest.warns(DeprecationWarning, match=r"synthesize_datasets\(m, seed=...\)"):
        old = out.synthesize(m=2, seed=5)
    assert isinstance(old, list)
    for x, y in zip(old, out.synthesize_datasets(2, seed=5), strict=True):
        pd.testing.assert_frame_equal(x, y)
    with pytest.warns(DeprecationWarning):
        single = out.synthesize(m=1, seed=5)
    pd.testing.assert_frame_equal(single, out.synthesize(seed=5))


# ---------------------------------------------------------------------- real files as they are
def _survey(name: str, n: int) -> pd.DataFrame:
    """A sample of a shipped survey, its text columns' answer categories declared as a codebook
    lists them (pandas categories: every level of the full file), so that the structure stage
    selects no level."""
    full = pd.read_csv(DATA_DIR / name)
    for c in full.columns:
        if pd.api.types.is_string_dtype(full[c]) or full[c].dtype == object:
            full[c] = pd.Categorical(full[c], categories=sorted(full[c].dropna().unique()))
    return full.sample(n, random_state=7).reset_index(drop=True)


@pytest.fixture(scope="module", params=["yrbss.csv", "slid.csv"])
def survey_run(request):
    frame = _survey(request.param, 400)
    before = frame.copy(deep=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = synthesize(frame, draws=DRAWS, tune=DRAWS, seed=3)
    return request.param, frame, before, out


def _shares(frame: pd.DataFrame, infos) -> dict[tuple[str, str], float]:
    out = {}
    for col, info in infos.items():
        status, _, _ = split_status(frame[col], info.codes, info.spikes)
        for s in range(1, len(info.levels)):
            out[(col, info.levels[s])] = float(np.mean(status == s))
    return out


def test_survey_files_keep_every_missing_code_and_spike_share(survey_run):
    """The test: for every column and every non-observed status s (missing, each code, each
    spike) with real share p, the mean share over 3 synthetic datasets of the unweighted
    synthesizer (the model's fit to the data) is within 4 standard errors of p, the standard
    error combining the synthetic sampling sqrt(p (1 - p) / (3 n)) and the posterior of the
    share sqrt(p (1 - p) / n), plus 1/n for p near 0 (an empty level may take a record)."""
    name, frame, _, out = survey_run
    n = len(frame)
    infos = {p.name: p.column.info for p in out.result.prepared.plan.plans}
    real = _shares(frame, infos)
    assert real, "the file has missing cells"
    syn = [_shares(s, infos) for s in out.synthesize_datasets(3, seed=11, weighted=False)]
    for key, p in real.items():
        got = np.mean([s[key] for s in syn])
        se = np.sqrt(p * (1 - p) / (3 * n) + p * (1 - p) / n)
        assert abs(got - p) <= 4 * se + 1.0 / n, (name, key, p, got)


def test_survey_files_weighted_epsilon_below_unweighted_and_input_untouched(survey_run):
    name, frame, before, out = survey_run
    pd.testing.assert_frame_equal(frame, before)
    assert out.epsilon < out.unweighted_epsilon, name
    syn = out.synthetic
    assert list(syn.columns) == list(frame.columns)
    assert (syn.dtypes == frame.dtypes).all()
    # no level with at least 5 % of the records vanishes from the weighted synthesizer
    for col in frame.columns:
        if frame[col].dtype == object or isinstance(frame[col].dtype, pd.StringDtype):
            common = frame[col].value_counts(dropna=False, normalize=True)
            common = common[common >= 0.05].index
            held = set(syn[col].dropna()) | ({np.nan} if syn[col].isna().any() else set())
            for level in common:
                assert (level in held) or (pd.isna(level) and syn[col].isna().any()), (col, level)


# ---------------------------------------------------------------------- the weight floor
def test_weight_floor_keeps_the_smallest_of_three_near_equal_levels():
    """Three near-equal levels and nothing else: with the papers' weights the riskiest level's
    records share the highest risk and get weight 0; with weight_floor = 1 every level keeps its
    share, and the smallest's synthetic share is within Monte Carlo error of its real share
    (4 standard errors of a share of n records, twice: synthetic sampling and the posterior).
    The floor's cost is reported as the epsilon it would have had without the floor."""
    n = 300
    g = np.repeat(["a", "b", "c"], [104, 100, 96])
    frame = pd.DataFrame({"g": np.random.default_rng(0).permutation(g)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = synthesize(frame, draws=300, tune=100, weight_floor=1.0, floor_cost=True, seed=4)
    p = 96 / n
    shares = [np.mean(s.g == "c") for s in out.synthesize_datasets(5, seed=2)]
    se = np.sqrt(p * (1 - p) / (5 * n) + p * (1 - p) / n)
    assert abs(np.mean(shares) - p) <= 4 * se
    alpha = out.alpha.to_numpy()
    means = [alpha[frame.g.to_numpy() == lv].mean() for lv in "abc"]
    assert min(means) >= max(means) * (1 - 1e-6)  # every level's mean weight the same
    assert out.epsilon_without_floor is not None
    assert out.epsilon_without_floor < out.epsilon  # the floor's cost in epsilon
    assert out.result.datatree["privacy"].attrs["weights_raised_by_floor"] > 0


def test_floor_cost_when_the_floor_raises_no_weight():
    """floor_cost=True always reports the epsilon without the floor: when the floor raised no
    weight (here f = 0, the papers' weights) the fit is the same, and so is its epsilon."""
    frame = pd.DataFrame({"g": np.repeat(["a", "b"], [30, 20]), "x": np.arange(50.0) % 7})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = synthesize(frame, draws=100, tune=100, chains=1, weight_floor=0.0,
                         floor_cost=True, seed=3)  # fmt: skip
    assert out.result.datatree["privacy"].attrs["weights_raised_by_floor"] == 0
    assert out.epsilon_without_floor == out.epsilon


def test_papers_weights_let_the_riskiest_level_vanish():
    from pseudopost.risk.weights import level_floor, risk_weights

    g = np.repeat([0, 1, 2], [104, 100, 96])
    risk = np.where(g == 2, 1.31, np.where(g == 1, 1.27, 1.25))  # one risk per level
    alpha = risk_weights(risk)
    assert alpha[g == 2].max() == 0.0  # the papers' weights: level 2 gets weight 0
    half = level_floor(alpha, [g], 0.5)
    share = [half[g == k].sum() / half.sum() for k in range(3)]
    assert share[2] >= 0.5 * 96 / 300 - 1e-9  # at least half its share, present
    assert np.all(half >= alpha)  # raised, never lowered


def test_raking_restores_the_level_shares_and_lowers_epsilon():
    """The risk weights move a categorical column's weighted shares towards its typical level;
    raking (rake_min_weight=0: to convergence) lowers weights until every level part's weighted
    shares are the data's, never raises one, and on the same draws the accountant's bound does
    not rise (the refit's own draws, more spread at a lower total weight, may give a larger
    epsilon); the totals are recorded. None keeps the floored weights."""
    from pseudopost.fitting.columns import file_part_data
    from pseudopost.models.loglik import stack_draws
    from pseudopost.privacy.kernels.parts import PartAccountant

    rng = np.random.default_rng(11)
    n = 400
    g = rng.choice(["common", "mid", "rare"], n, p=[0.7, 0.22, 0.08])
    frame = pd.DataFrame({"g": g, "x": np.round(rng.normal(np.where(g == "rare", 5, 0), 1), 1)})
    # the levels declared (a codebook's): on 400 records partition selection may drop "rare"
    kw = {"draws": 60, "tune": 60, "chains": 1, "seed": 2, "part_rake": False,
          "levels": {"g": ["common", "mid", "rare"]}}  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = synthesize(frame, rake_min_weight=None, **kw)
        raked = synthesize(frame, rake_min_weight=0, **kw)
    groups = raked.model.level_groups(raked.result.prepared)
    a0, a1 = np.asarray(plain.alpha), np.asarray(raked.alpha)
    assert np.all(a1 <= a0 + 1e-12) and a1.sum() < a0.sum()
    for level in groups.values():
        on = level >= 0
        for k in np.unique(level[on]):
            data = np.mean(level[on] == k)
            assert a1[on][level[on] == k].sum() / a1[on].sum() == pytest.approx(data, rel=1e-3)
    p0, p1 = plain.result.datatree["privacy"].attrs, raked.result.datatree["privacy"].attrs
    assert p0["weight_total"] == pytest.approx(p0["weight_total_before_rake"])
    assert p1["weight_total"] == pytest.approx(a1.sum()) and p1["rake_min_weight"] == 0.0
    assert p1["weight_total"] < p1["weight_total_before_rake"] == pytest.approx(a0.sum())
    parts, data = file_part_data(plain.model, plain.result.prepared)
    acc = PartAccountant(parts, data)
    draws = stack_draws(plain.result.datatree["posterior"].to_dataset(), acc.free_names)
    per_record = acc.reduce_abs(draws, a0).per_record
    assert 2 * np.max(a0 * per_record) == pytest.approx(plain.epsilon, rel=1e-12)
    assert 2 * np.max(a1 * per_record) <= plain.epsilon  # the raked weights on those draws
    with pytest.raises(ValueError, match=r"'rake_min_weight' must be a number >= 0 or None"):
        synthesize(frame, rake_min_weight=-1, **kw)


def test_part_rake_keeps_each_level_part_s_shares_and_accounts_its_factors():
    """The risk weights move a categorical column's weighted shares (its rare level's records
    are the riskiest); with part raking (the default) the column's part gets its own weights
    alpha * r whose shares are the data's, so its posterior mean shares are the data's
    within the posterior's sd, while without raking the rare level is far below. The
    accountant's epsilon is each record's term with its parts' factors: replayed by hand
    from the saved draws, weights and factors, it is the fit's to the last digit."""
    from pseudopost.fitting.columns import file_part_data
    from pseudopost.models.loglik import stack_draws
    from pseudopost.privacy.kernels.parts import PartAccountant

    rng = np.random.default_rng(11)
    n = 2000
    g = rng.choice(["common", "mid", "rare"], n, p=[0.7, 0.22, 0.08])
    frame = pd.DataFrame({"g": g, "x": np.round(rng.normal(np.where(g == "rare", 5, 0), 1), 1)})
    kw = {"draws": 100, "tune": 60, "chains": 1, "seed": 2}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = synthesize(frame, part_rake=False, **kw)
        raked = synthesize(frame, **kw)
    t = np.mean(g == "rare")
    weights = raked.result.datatree["weights"]
    alpha = weights["alpha"].to_numpy()
    r = weights["part_factor"].sel(raked_part="g").to_numpy()
    w = alpha * r
    assert np.all((r > 0) & (r <= 1)) and w[g == "rare"].sum() / w.sum() == pytest.approx(t)
    sd = np.sqrt(t * (1 - t) / w.sum())
    plain_mean, raked_mean = (
        o.result.datatree["posterior"]["g::p"].mean(("chain", "draw")).to_numpy()
        for o in (plain, raked)
    )
    assert abs(raked_mean[2] - t) < 3 * sd  # levels in sorted order: rare last
    assert plain_mean[2] < t - 2.5 * sd
    assert raked.result.datatree["privacy"].attrs["raked_parts"] >= 1
    assert "part_factor" not in plain.result.datatree["weights"]
    # the accountant, replayed
    model, prepared = raked.model, raked.result.prepared
    parts, data = file_part_data(model, prepared)
    factors = {str(k): weights["part_factor"].sel(raked_part=k).to_numpy()
               for k in weights["raked_part"].values}  # fmt: skip
    acc = PartAccountant(parts, data).with_factors(factors)
    draws = stack_draws(raked.result.datatree["posterior"].to_dataset(), acc.free_names)
    lip = alpha * acc.reduce_abs(draws, alpha).per_record
    assert 2 * lip.max() == raked.epsilon
    plain_lip = alpha * PartAccountant(parts, data).reduce_abs(draws, alpha).per_record
    assert not np.array_equal(lip, plain_lip)  # the factors enter the bound


def test_part_rake_keeps_a_wide_grid_s_margin_over_runs_of_points():
    """Weeks worked on the grid 0-52 (53 points, more than PART_RAKE_VALUES): most records
    at 0 or 52, the rest spread thinly between, where the risk weights are lowest, so the
    weighted likelihood over-represents 0 and 52. With part raking (the default) the value part
    gets factors over PART_RAKE_RUNS runs of consecutive points, whose weighted shares are then
    the data's; without it the middle's share falls (Fertility, 1980 PUMS: 47 % work 0 weeks,
    53 % of the weighted release's before)."""
    from pseudopost.mechanisms.pseudo_posterior.core import PART_RAKE_RUNS

    rng = np.random.default_rng(5)
    n = 1500
    weeks = np.where(rng.uniform(size=n) < 0.75, rng.choice([0, 52], n, p=[0.6, 0.4]),
                     rng.integers(1, 52, n)).astype(float)  # fmt: skip
    frame = pd.DataFrame({"weeks": weeks, "x": np.round(rng.normal(weeks / 52, 1), 2)})
    kw = {"draws": 60, "tune": 60, "chains": 1, "seed": 2,
          "grid": {"weeks": {"step": 1, "bounds": [0, 52]}}}  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = synthesize(frame, **kw)
    weights = out.result.datatree["weights"]
    assert "weeks.value" in set(weights["raked_part"].values)
    alpha = weights["alpha"].to_numpy()
    r = weights["part_factor"].sel(raked_part="weeks.value").to_numpy()
    run = (weeks.astype(int) * PART_RAKE_RUNS) // 53
    middle = (weeks > 0) & (weeks < 52)
    assert alpha[middle].sum() / alpha.sum() < middle.mean() - 0.01  # the weights move it
    for k in np.unique(run):
        share = (alpha * r)[run == k].sum() / (alpha * r).sum()
        assert share == pytest.approx(np.mean(run == k), rel=1e-6)  # raked: the data's


def test_a_column_whose_every_value_is_a_spike_gets_no_knots():
    """A year that is 2013 on every record (openintro's nycflights): the structure stage
    releases 2013 as a frequent value (a spike) and knots for the column as a predictor; the
    column then holds no number to put knots on, so it enters later columns by its statuses
    (before, ``ValueError: Column 'year' has a knots but enters later columns as one-hot
    levels`` after the stage's work). The synthetic years are all 2013."""
    rng = np.random.default_rng(0)
    n = 3000
    frame = pd.DataFrame({"year": np.full(n, 2013), "month": rng.integers(1, 13, n),
                          "x": rng.normal(size=n).round(2)})  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = synthesize(frame, draws=40, tune=40, chains=1, seed=1, structure_epsilon=5.0)
    row = out.choices.set_index("column").loc["year"]
    assert "spikes at 2013" in row["structure"]
    assert "year (knots" not in out.choices.set_index("column").loc["x", "predictors"]
    assert set(out.synthesize(seed=2, weighted=False)["year"]) == {2013}


def test_a_tail_cut_by_the_dp_support_is_truncated_not_piled_on_the_bound():
    """2 % of the values lie far above the bulk, each DP support cell out there holding a few
    records, below the tail threshold: the support stops near the bulk. Those values enter the
    later column as the bound and are left out of their own column's model, so no synthetic
    value passes the bound and none piles on it (coded to the bound in the column's own model,
    as before, about 2 % of the synthetic values were exactly the bound). The later column,
    which depends on whether the value was in the tail, still sees the tail's records as the
    largest values."""
    rng = np.random.default_rng(3)
    n = 2500
    x = rng.normal(40.0, 5.0, n).round(2)
    tail = rng.random(n) < 0.02
    x[tail] = rng.uniform(150.0, 900.0, tail.sum()).round(2)
    y = np.where(tail, "rich", rng.choice(["a", "b"], n))
    frame = pd.DataFrame({"x": x, "y": y})
    before = frame.copy(deep=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = synthesize(frame, draws=60, tune=60, chains=1, seed=1)
    pd.testing.assert_frame_equal(frame, before)
    lo, hi = out.structure.columns["x"].support
    assert hi < 150.0 < x.max()  # the support cut the tail
    syn = pd.concat([out.synthesize(seed=s, weighted=False) for s in range(2)])
    assert syn.x.between(lo, hi).all()
    assert (syn.x == hi).mean() < 0.005  # no pile on the bound
    # "rich" follows the largest values of x, the tail's records coded to the bound in its design
    top = syn.x >= np.quantile(syn.x, 0.99)
    assert (syn.y[top] == "rich").mean() > 0.3 > (syn.y[~top] == "rich").mean()


# ---------------------------------------------------------------------- threads and SPSS
def test_same_seed_same_file_whatever_the_number_of_threads(small):
    frame = small.assign(g=small.g.where(small.index % 7 != 0, None))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        one = synthesize(frame, draws=60, tune=60, seed=8, workers=1)
        two = synthesize(frame, draws=60, tune=60, seed=8, workers=3)
    pd.testing.assert_frame_equal(one.synthetic, two.synthetic)
    assert one.epsilon == two.epsilon


def test_spss_file_round_trips_with_its_labels_and_missing_values(tmp_path):
    pyreadstat = pytest.importorskip("pyreadstat")
    from pseudopost.formats import read_file, write_file

    rng = np.random.default_rng(5)
    n = 200
    raw = pd.DataFrame(
        {
            "sex": rng.choice([1.0, 2.0], n),
            "income": np.round(rng.lognormal(7, 0.6, n)),
            "region": rng.choice([1.0, 2.0, 3.0], n),
        }
    )
    raw.loc[rng.random(n) < 0.1, "income"] = -8.0  # not applicable
    raw.loc[rng.random(n) < 0.05, "income"] = -9.0  # refused
    raw.loc[rng.random(n) < 0.05, "region"] = 9.0  # don't know
    labels = {
        "sex": {1.0: "female", 2.0: "male"},
        "income": {-8.0: "not applicable", -9.0: "refused"},
        "region": {1.0: "north", 2.0: "south", 3.0: "west", 9.0: "don't know"},
    }
    path = tmp_path / "survey.sav"
    pyreadstat.write_sav(
        raw, str(path), variable_value_labels=labels,
        missing_ranges={"income": [-8.0, -9.0], "region": [9.0]},
        variable_measure={"sex": "nominal", "income": "scale", "region": "nominal"},
    )  # fmt: skip
    frame, book = read_file(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = synthesize(frame, codebook=book, draws=60, tune=60, seed=1)
    syn = out.synthetic
    assert set(syn["income"][syn["income"] < 0]) <= {-8.0, -9.0}
    written = write_file(syn, tmp_path / "synthetic.sav", book)
    _, meta = pyreadstat.read_sav(str(written), user_missing=True)
    _, meta0 = pyreadstat.read_sav(str(path), user_missing=True)
    assert meta.variable_value_labels == meta0.variable_value_labels
    assert meta.missing_ranges == meta0.missing_ranges
    again, book2 = read_file(written)
    assert book2.missing_codes == book.missing_codes
    assert list(again.columns) == list(frame.columns)


def test_deprecated_whole_record_options_still_work():
    """pseudopost 0.1's ``sampler`` and ``unmodelled`` keep working, with a warning."""
    frame = pd.DataFrame(
        {
            "a": pd.Categorical(np.tile(["x", "y", "z"], 20)),  # levels declared
            "b": np.tile([0, 1], 30),
            "c": pd.Categorical(np.tile(["u", "v", "w", "t"], 15)),
        }
    )
    with pytest.warns(DeprecationWarning, match="unmodelled"):
        out = synthesize(
            frame, order=["a", "b"], unmodelled="keep", draws=20, tune=20, chains=1, seed=1
        )
    assert out.synthetic["c"].tolist() == frame["c"].tolist()  # kept as given
    with pytest.warns(DeprecationWarning, match="sampler"):
        out = synthesize(
            frame, order=["a", "b"], unmodelled="marginal", sampler="nutpie-jax",
            draws=20, tune=20, chains=1, seed=1,
        )  # fmt: skip
    roles = dict(zip(out.choices["column"], out.choices["role"], strict=True))
    assert roles["c"] == "synthetic"
    assert set(out.synthetic["c"]) <= {"u", "v", "w", "t"}
    with pytest.raises(ValueError, match="'unmodelled' must be"):
        synthesize(frame, order=["a"], unmodelled="drop")


# ---------------------------------------------------------------------- the risk step's draws
def _three_columns(n: int = 1500) -> pd.DataFrame:
    """A group, a count that depends on it and an unrelated answer (seed 5)."""
    rng = np.random.default_rng(5)
    g = rng.choice(["a", "b", "c"], n)
    return pd.DataFrame({"g": g, "k": rng.poisson(np.where(g == "a", 2.0, 4.0)),
                         "s": rng.choice(["u", "v"], n)})  # fmt: skip


def test_risk_fit_laplace_draws_the_unweighted_posterior_without_mcmc():
    """The default risk step draws a part from its Laplace approximation (importance-resampled
    where that is trusted, else its split-normal form) wherever Newton's method reached the
    mode (no sampler statistics, no diagnostics of independent draws; here at least one part
    of a 1,500-record file), NUTS elsewhere; 'nuts' runs MCMC for every part
    as the papers; the weighted fit is NUTS either way; the choice is recorded."""
    frame = _three_columns()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = synthesize(frame, draws=60, tune=60, seed=8)
        nuts = synthesize(frame, draws=60, tune=60, seed=8, risk_fit="nuts")
    for out, fit in ((fast, "laplace"), (nuts, "nuts")):
        tree = out.result.datatree
        assert tree["privacy"].attrs["risk_fit"] == fit
        steps = {str(v) for v in tree["sample_stats"].data_vars if str(v).endswith("::n_steps")}
        assert steps  # the weighted fit: NUTS
        risk = tree["risk_sample_stats"] if "risk_sample_stats" in tree.children else None
        risk_steps = set() if risk is None else {
            str(v) for v in risk.data_vars if str(v).endswith("::n_steps")}  # fmt: skip
        assert (risk_steps == steps) if fit == "nuts" else (risk_steps < steps)
        diagnosed = set(out.result.diagnostics["unweighted"].table.parameter.str.split("::").str[0])
        assert diagnosed == {s.split("::")[0] for s in risk_steps}
        assert np.isfinite(out.epsilon) and out.result.unweighted_epsilon > 0
        assert tree["risk_posterior"].sizes["draw"] == 60  # fewer than RISK_DRAWS: all kept
    with pytest.raises(ValueError, match="'risk_fit' must be one of"):
        synthesize(frame, risk_fit="exact")


def test_risk_fit_laplace_needs_a_whole_file_model():
    import pymc as pm

    from pseudopost import PseudoPosterior

    with pm.Model() as m:
        mu = pm.Normal("mu")
        pm.Normal("y", mu, 1.0, observed=np.zeros(5))
    with pytest.raises(ValueError, match=r"needs a\s+whole-file model"):
        PseudoPosterior(m, risk_fit="laplace")


def test_mcmc_draws_keeps_only_parts_with_sampler_statistics():
    import xarray as xr

    from pseudopost.mechanisms.pseudo_posterior.settings import mcmc_draws

    z = np.zeros((2, 5))
    post = xr.Dataset({"a::p": (("chain", "draw"), z), "b::q": (("chain", "draw"), z)})
    stats = xr.Dataset({"a::n_steps": (("chain", "draw"), z), "diverging": (("chain", "draw"), z)})
    kept = mcmc_draws(xr.DataTree.from_dict({"posterior": post, "sample_stats": stats}))
    assert list(kept["posterior"].data_vars) == ["a::p"]
    none = mcmc_draws(xr.DataTree.from_dict({"posterior": post}))
    assert list(none["posterior"].data_vars) == []
    plain = xr.DataTree.from_dict({"posterior": xr.Dataset({"mu": (("chain", "draw"), z)})})
    assert mcmc_draws(plain) is plain


def test_posterior_coordinates_and_diagnostics_name_levels():
    """The DataTree's level and cutpoint coordinates carry the column's labels (a level, a
    status, a grid point), and the diagnostics name each element by them."""
    rng = np.random.default_rng(4)
    n = 300
    frame = pd.DataFrame({
        "region": pd.Categorical(rng.choice(["north", "south", "east"], n)),
        "age": rng.integers(20, 26, n).astype(float),
        "job": rng.choice(["clerk", "nurse", None], n),
    })  # fmt: skip
    from pseudopost.models.file import FileModel

    model = FileModel(grid={"age": {"step": 1, "bounds": [20, 25]}})
    labels = model.coordinate_labels(model.prepare(frame))
    assert labels["region_level"] == ["east", "north", "south"]
    assert labels["age_value_cutpoint"] == ["20|21", "21|22", "22|23", "23|24", "24|25"]
    assert labels["job_level"] == ["nurse", "missing"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = synthesize(frame, grid={"age": {"step": 1, "bounds": [20, 25]}}, draws=30,
                         tune=30, chains=2, seed=3, structure_epsilon=None)  # fmt: skip
    post = out.fit.datatree["posterior"]
    assert list(post["job_level"].values) == ["nurse", "missing"]
    assert list(post["age_value_cutpoint"].values) == labels["age_value_cutpoint"]
    own = [d for d in post.dims if d not in ("chain", "draw")]
    assert own and all(str(d).isidentifier() for d in own)  # plain names, for .sel and plots
    names = set(out.fit.diagnostics["weighted"].table["parameter"])
    assert "job::beta[age, missing]" in names or "job::intercept[missing]" in names


def test_weighted_fit_imh_draws_parts_by_the_independence_chain():
    """The default weighted fit runs each part's independence Metropolis-Hastings chain where
    its Laplace proposal serves (sampler statistics ``accepted``, one density per draw), NUTS
    elsewhere; 'nuts' runs NUTS for every part; the choice is recorded; other models refuse
    it before any work."""
    import pymc as pm

    from pseudopost import PseudoPosterior

    frame = _three_columns()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        imh = synthesize(frame, draws=100, tune=100, seed=8)
        nuts = synthesize(frame, draws=100, tune=100, seed=8, weighted_fit="nuts")
    for out, fit in ((imh, "imh"), (nuts, "nuts")):
        tree = out.result.datatree
        assert tree["privacy"].attrs["weighted_fit"] == fit
        ss = tree["sample_stats"]
        accepted = {str(v).split("::")[0] for v in ss.data_vars if str(v).endswith("::accepted")}
        steps = {str(v).split("::")[0]: float(ss[v].mean()) for v in ss.data_vars
                 if str(v).endswith("::n_steps")}  # fmt: skip
        if fit == "imh":
            assert accepted and all(steps[p] == 1.0 for p in accepted)
        else:
            assert not accepted and all(v > 1.0 for v in steps.values())
        assert np.isfinite(out.epsilon) and len(out.synthetic) == len(frame)
    with pytest.raises(ValueError, match="'weighted_fit' must be one of"):
        synthesize(frame, weighted_fit="exact")
    with pm.Model() as m:
        mu = pm.Normal("mu")
        pm.Normal("y", mu, 1.0, observed=np.zeros(5))
    with pytest.raises(ValueError, match=r"needs a\s+whole-file model"):
        PseudoPosterior(m, weighted_fit="imh")


def _kinds_frame(n: int = 800, seed: int = 0) -> pd.DataFrame:
    """One column of every kind an agency file holds, most with empty cells."""
    rng = np.random.default_rng(seed)

    def holes(a, p=0.15):
        a = pd.Series(a).copy()
        a[rng.random(n) < p] = None
        return a

    x = rng.normal(size=n)
    return pd.DataFrame({
        "x": np.round(50 + 10 * x, 1),
        "bool_nan": holes(pd.array(rng.random(n) < 0.3 + 0.2 * (x > 0), dtype="boolean")),
        "bool_plain": rng.random(n) < 0.4,
        "int_nullable": holes(pd.array(rng.integers(0, 6, n), dtype="Int64")),
        "ordered_nan": holes(pd.Categorical.from_codes(rng.integers(0, 4, n), list("abcd"),
                                                       ordered=True)),
        "unused_category": pd.Categorical(rng.choice(list("uvw"), n), categories=[*"uvw", "zz"]),
        "category_nan": holes(pd.Categorical(rng.choice(list("pqr"), n, p=[0.6, 0.3, 0.1]))),
        "string_nan": holes(pd.array(rng.choice(["s1", "s2", "s3"], n), dtype="string")),
        "object_nan": holes(pd.Series(rng.choice(["o1", "o2"], n), dtype=object)),
        "amount_code": np.where(rng.random(n) < 0.1, -8.0, np.round(rng.gamma(2, 10, n), 2)),
        "count": rng.poisson(2 + (x > 0), n),
        "numeric_ordinal": holes(pd.Series(rng.integers(1, 6, n).astype(float))),
    })  # fmt: skip


def test_every_column_kind_keeps_its_dtype_missing_share_and_margin():
    """A fitted release (MCMC, few draws) keeps each kind of column's dtype, share of empty
    cells (within 0.06), level shares (total variation at most 0.08) or mean (within 0.2 sd)
    and code share: a column decoded from the wrong part fails at once (an ordered column
    with empty cells once drew its levels from its status part: two levels, none missing)."""
    frame = _kinds_frame()
    before = frame.copy(deep=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = synthesize(frame, seed=1, draws=60, tune=60, chains=1, progress=False,
                         missing_codes={"amount_code": [-8]},
                         models={"numeric_ordinal": "ordinal"})  # fmt: skip
    pd.testing.assert_frame_equal(frame, before)
    syn = out.synthesize(seed=3, weighted=False)
    models = dict(zip(out.choices["column"], out.choices["model"], strict=True))
    assert models["ordered_nan"] == models["numeric_ordinal"] == "ordinal"
    reasons = dict(zip(out.choices["column"], out.choices["reason"], strict=True))
    binned = [c for c, s in out.structure.columns.items() if s.model == "binned"]
    assert binned  # the stage's bins are DP, and the report says so (it once said "declared")
    for c in binned:
        assert "bins from" in reasons[c] and "(declared)" not in reasons[c], reasons[c]
        assert f"({out.structure.columns[c].sources['bins']})" in reasons[c], reasons[c]
    for c in frame.columns:
        real, fake = frame[c], syn[c]
        assert str(fake.dtype) == str(real.dtype), c
        assert abs(real.isna().mean() - fake.isna().mean()) <= 0.06, c
        if c in ("x", "amount_code"):
            r, s = real[real != -8], fake[fake != -8]
            assert abs(r.mean() - s.mean()) <= 0.2 * r.std(), c
            assert abs((real == -8).mean() - (fake == -8).mean()) <= 0.05, c
            continue
        r = real.value_counts(normalize=True)
        s = fake.value_counts(normalize=True)
        index = r.index.union(s.index)
        tv = 0.5 * (r.reindex(index, fill_value=0) - s.reindex(index, fill_value=0)).abs().sum()
        assert tv <= 0.08, (c, r.round(2).to_dict(), s.round(2).to_dict())
