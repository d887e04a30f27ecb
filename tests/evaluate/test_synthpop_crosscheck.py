"""The measures against synthpop itself (R), on real files with missing cells and a code.

Runs R once per module (20-30 s of R, a minute in all on a busy 2-core machine: both CART nulls
refit 100 trees per file), so it is marked slow; the hand-value tests in test_propensity.py, test_table_utility.py and
test_disclosure_tables.py are its fast siblings. Skips with a message when R or synthpop is not
installed (``bash ../shared/peers/install-synthpop.sh``).

Data: 500 records of SLID (wages, education, age, sex, language; wages missing for people
without wages, here coded -8 "not applicable" under age 30 and left empty above, education and
language with empty cells) and 400 records of YRBSS (13 columns, missing cells in most). The
synthetic frames resample the real records and shuffle some columns, so that they differ from
the real data in their associations but hold the same kinds of cells.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pseudopost.evaluate import (
    TABLE_STATISTICS,
    disclosure_measures,
    propensity_utility,
    utility_tables,
)
from pseudopost.evaluate._synthpop_prep import is_numeric

pytestmark = pytest.mark.slow

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
if not DATA.exists():  # a worktree beside /work/shared
    DATA = Path("/work/shared/data")
CODES = {"wages": [-8.0]}
PERMS = 100


def _synthpop_missing() -> str | None:
    if shutil.which("Rscript") is None:
        return "Rscript is not installed (bash ../shared/peers/install-synthpop.sh)"
    probe = subprocess.run(
        ["Rscript", "-e", 'quit(status = !requireNamespace("synthpop", quietly = TRUE))'],
        capture_output=True,
        check=False,
    )
    if probe.returncode != 0:
        return "the R package synthpop is not installed (bash ../shared/peers/install-synthpop.sh)"
    return None


def _frames() -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    rng = np.random.default_rng(20261123)
    slid = pd.read_csv(DATA / "slid.csv").sample(500, random_state=11).reset_index(drop=True)
    slid.loc[slid["wages"].isna() & (slid["age"] < 30), "wages"] = -8.0
    yrbss = pd.read_csv(DATA / "yrbss.csv").sample(400, random_state=12).reset_index(drop=True)
    out = {}
    for name, real, shuffled in (
        ("slid", slid, ["education", "language"]),
        ("yrbss", yrbss, ["weight", "race", "helmet_12m"]),
    ):
        syn = real.iloc[rng.integers(0, len(real), len(real))].reset_index(drop=True)
        for c in shuffled:
            syn[c] = rng.permutation(syn[c].to_numpy())
        out[name] = (real, syn)
    return out


R_SCRIPT = textwrap.dedent(
    """
    suppressMessages(library(synthpop))
    args <- commandArgs(TRUE)
    dir <- args[1]; nperms <- as.integer(args[2])
    rd <- function(f) {
      cls <- readLines(file.path(dir, paste0(f, ".classes")))
      read.csv(file.path(dir, paste0(f, ".csv")), na.strings = "", colClasses = cls,
               check.names = FALSE)
    }
    out <- list()
    put <- function(set, what, values) {
      out[[length(out) + 1]] <<- data.frame(set = set, what = what,
                                            name = sub("[.].*$", "", names(values)),
                                            value = sprintf("%.17g", as.numeric(values)))
    }
    sink(tempfile())
    for (set in c("slid", "yrbss")) {
      d <- rd(paste0(set, "_real")); s <- rd(paste0(set, "_syn"))
      cna <- if (set == "slid") list(wages = -8) else NULL
      if (set == "slid") {
        for (mo in 0:1) {
          u <- utility.gen(s, d, method = "logit", maxorder = mo, cont.na = cna,
                           print.flag = FALSE)
          put(set, paste0("logit", mo), c(pMSE = u$pMSE, S_pMSE = u$S_pMSE, df = u$df))
        }
      }
      set.seed(1)
      u <- utility.gen(s, d, method = "cart", cont.na = cna, nperms = nperms,
                       print.flag = FALSE)
      put(set, "cart", c(pMSE = u$pMSE, S_pMSE = u$S_pMSE, SPECKS = u$SPECKS,
                         PO50 = u$PO50, U = u$U))
      for (tt in c("oneway", "twoway")) {
        tb <- utility.tables(s, d, tables = tt, tab.stats = "all", cont.na = cna,
                             plot = FALSE, print.flag = FALSE)$tabs
        for (i in seq_len(nrow(tb))) {
          put(set, paste0("tab:", rownames(tb)[i]), tb[i, ])
        }
      }
    }
    d <- rd("slid_real"); s <- rd("slid_syn")
    dis <- function(label, ...) {
      r <- disclosure(s, d, print.flag = FALSE, ...)
      put("slid", label, c(unlist(r$ident), unlist(r$attrib), unlist(r$allCAPs)))
    }
    dis("dis:education", keys = c("sex", "age", "language"), target = "education")
    dis("dis:language", keys = c("sex", "age"), target = "language")
    dis("dis:wages", keys = c("sex", "language"), target = "wages", cont.na = list(wages = -8),
        ngroups_target = 5, ngroups_keys = 3)
    d <- rd("yrbss_real"); s <- rd("yrbss_syn")
    r <- disclosure(s, d, keys = c("age", "gender", "grade", "race"), target = "helmet_12m",
                    print.flag = FALSE)
    put("yrbss", "dis:helmet_12m", c(unlist(r$ident), unlist(r$attrib), unlist(r$allCAPs)))
    sink()
    write.csv(do.call(rbind, out), file.path(dir, "results.csv"), row.names = FALSE)
    """
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    reason = _synthpop_missing()
    if reason is not None:
        pytest.skip(f"synthpop cross-check skipped: {reason}")
    frames = _frames()
    folder = tmp_path_factory.mktemp("synthpop")
    for name, (real, syn) in frames.items():
        for part, frame in (("real", real), ("syn", syn)):
            frame.to_csv(folder / f"{name}_{part}.csv", index=False)
            classes = ["numeric" if is_numeric(frame[c]) else "factor" for c in frame.columns]
            (folder / f"{name}_{part}.classes").write_text("\n".join(classes) + "\n")
    (folder / "check.R").write_text(R_SCRIPT)
    done = subprocess.run(
        ["Rscript", str(folder / "check.R"), str(folder), str(PERMS)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    results = pd.read_csv(folder / "results.csv", dtype={"value": str})
    results["value"] = results["value"].map(lambda v: float("nan") if v == "NA" else float(v))
    return frames, results


def _r(results, set_, what) -> pd.Series:
    rows = results[(results["set"] == set_) & (results["what"] == what)]
    assert len(rows), f"no R result for {set_} {what}"
    return pd.Series(rows["value"].to_numpy(), index=rows["name"].to_numpy())


def _close(ours: float, theirs: float, rel: float = 1e-9) -> bool:
    if math.isnan(theirs) or math.isinf(theirs):
        return (math.isnan(ours) and math.isnan(theirs)) or ours == theirs
    return math.isclose(ours, theirs, rel_tol=rel, abs_tol=1e-12)


@pytest.mark.parametrize("maxorder", [0, 1])
def test_logit_s_pmse_matches_synthpop(run, maxorder):
    frames, results = run
    real, syn = frames["slid"]
    theirs = _r(results, "slid", f"logit{maxorder}")
    ours = propensity_utility(real, syn, method="logit", maxorder=maxorder, missing_codes=CODES)
    assert ours.df == int(theirs["df"])
    assert ours.pMSE == pytest.approx(theirs["pMSE"], rel=1e-7)
    assert ours.S_pMSE_synthpop == pytest.approx(theirs["S_pMSE"], rel=1e-7)
    # the two-sample null is larger by 1/(1 - c): S_pMSE = synthpop's times (1 - c)
    assert ours.S_pMSE == pytest.approx(theirs["S_pMSE"] * (1 - ours.c), rel=1e-7)


@pytest.mark.parametrize("name", ["slid", "yrbss"])
def test_cart_s_pmse_matches_synthpop(run, name):
    frames, results = run
    real, syn = frames[name]
    theirs = _r(results, name, "cart")
    codes = CODES if name == "slid" else None
    ours = propensity_utility(real, syn, missing_codes=codes, nperms=PERMS, seed=3)
    # the tree is rpart's, split for split: the same scores
    assert ours.pMSE == pytest.approx(theirs["pMSE"], rel=1e-10)
    for stat in ("SPECKS", "PO50", "U"):
        assert getattr(ours, stat) == pytest.approx(theirs[stat], rel=1e-10, abs=1e-10), stat
    # the permutation null differs by Monte Carlo error only (R's and NumPy's random labels)
    null_r = theirs["pMSE"] / theirs["S_pMSE"]
    sd = np.std(ours.permutation_pMSE, ddof=1) / 2
    assert abs(ours.null_pMSE_synthpop - null_r) < 4 * sd * np.sqrt(2 / PERMS)
    assert ours.S_pMSE == pytest.approx(ours.S_pMSE_synthpop / 2)


@pytest.mark.parametrize("name", ["slid", "yrbss"])
@pytest.mark.parametrize("tables", ["oneway", "twoway"])
def test_table_utility_matches_synthpop(run, name, tables):
    frames, results = run
    real, syn = frames[name]
    codes = CODES if name == "slid" else None
    ours = utility_tables(real, syn, tables=tables, missing_codes=codes)
    checked = 0
    for label, row in ours.iterrows():
        # synthpop labels tables "1.wages:2.education"
        r_label = ":".join(
            f"{list(real.columns).index(v) + 1:0{len(str(real.shape[1]))}d}.{v}"
            for v in label.split(":")
        )
        theirs = _r(results, name, f"tab:{r_label}")
        for stat in TABLE_STATISTICS:
            if stat == "nempty":
                continue
            assert _close(float(row[stat]), float(theirs[stat])), (label, stat)
        checked += 1
    assert checked == len(ours) > 0


@pytest.mark.parametrize(
    ("name", "label", "keys", "target", "kwargs"),
    [
        ("slid", "dis:education", ["sex", "age", "language"], "education", {}),
        ("slid", "dis:language", ["sex", "age"], "language", {}),
        (
            "slid",
            "dis:wages",
            ["sex", "language"],
            "wages",
            {"missing_codes": CODES, "ngroups_target": 5, "ngroups_keys": 3},
        ),
        ("yrbss", "dis:helmet_12m", ["age", "gender", "grade", "race"], "helmet_12m", {}),
    ],
)
def test_repu_and_disco_match_synthpop(run, name, label, keys, target, kwargs):
    frames, results = run
    real, syn = frames[name]
    theirs = _r(results, name, label)
    ours = disclosure_measures(real, syn, keys, target, **kwargs).to_series()
    assert set(theirs.index) == set(ours.index)
    for stat, value in ours.items():
        assert _close(float(value), float(theirs[stat])), stat
    assert ours["iS"] > 0  # keys are found: the check is not vacuous
    if not kwargs:  # ungrouped keys are fine enough for uniques and disclosive keys
        assert ours["repU"] > 0 and ours["DiSCO"] > 0
