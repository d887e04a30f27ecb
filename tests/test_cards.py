"""Short cards of results in notebooks: ``repr`` under 2,000 characters with what a reader acts
on, and ``_repr_html_`` that a real headless browser renders with that content."""

from __future__ import annotations

import re
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pseudopost as pp

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def out():
    rng = np.random.default_rng(0)
    n = 300
    frame = pd.DataFrame({
        "age": rng.integers(18, 90, n),
        "sex": pd.Categorical(rng.choice(["f", "m"], n)),
        "income": np.round(np.exp(rng.normal(10, 1, n)), 2),
    })  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pp.synthesize(frame, seed=1, draws=30, tune=30, chains=1, progress=False)


def test_text_cards_are_short_and_say_what_matters(out):
    text = repr(out)
    assert len(text) < 2000 and text.startswith("<SynthesisResult>")
    assert f"{out.total_epsilon:.4g} per dataset in all" in text
    assert f"structure {out.structure_epsilon:.3g}" in text
    assert "300 records x 3 columns" in text and "age: grid_ordinal" in text
    assert "R-hat" in text and "bulk ESS" in text and "divergences" in text
    fit = repr(out.result)
    assert len(fit) < 2000 and fit.startswith("<PseudoPosteriorResult>")
    assert f"{out.epsilon:.4g} weighted" in fit and "records: 300" in fit
    # how the parts were drawn: one count per sampler, adding up to the parts
    from pseudopost.fitting.columns import part_samplers

    drawn = part_samplers(out.result.datatree)
    line = next(x for x in fit.splitlines() if x.strip().startswith("parts drawn:"))
    counts = [int(c) for c in re.findall(r"(?:: |, )(\d+) [a-z]", line.split(";")[0])]
    assert sum(counts) == len(drawn) >= 3 and line in text
    statement = repr(out.privacy_statement)
    assert len(statement) < 2000 and "add/remove" in statement
    assert "structure stage" in statement


def test_html_card_renders_in_headless_chromium(out, tmp_path):
    page = out._repr_html_()
    assert page.startswith("<div class='pseudopost-card'>")
    for phrase in ("SynthesisResult", "per dataset in all", "the choices", "<details>",
                   "grid_ordinal", "income"):  # fmt: skip
        assert phrase in page
    assert "<script" not in out.privacy_statement._repr_html_()
    if not CHROMIUM.exists():
        pytest.skip("headless Chromium check needs /usr/bin/chromium (apt-get install chromium)")
    from pseudopost.mechanisms.entropy.histogram import EntropyHistogram
    from pseudopost.mechanisms.reps.core import REPS
    from pseudopost.mechanisms.reps.data import simulate_outliers

    values = np.random.default_rng(2).integers(0, 5, size=200)
    lighter = [
        EntropyHistogram(1.0, bins=5).release(values, seed=0),
        REPS(epsilon=2.0, seed=3).fit(simulate_outliers(300, seed=1).frame, label="y").release_,
    ]
    cards = [page, out.fit._repr_html_(), out.privacy_statement._repr_html_()]
    cards += [r._repr_html_() for r in lighter]
    file = tmp_path / "card.html"
    file.write_text(f"<!doctype html><html><body>{''.join(cards)}</body></html>")
    proc = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--enable-logging=stderr",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", file.as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not [line for line in proc.stderr.splitlines() if "Uncaught" in line]
    dom = proc.stdout
    assert "pseudopost-card" in dom and "per dataset in all" in dom and "<details>" in dom
    assert dom.count("class=\"pseudopost-card\"") == len(cards)  # every card, the lighter too
    for title in ("PseudoPosteriorResult", "PrivacyStatement", "HistogramRelease", "RepsRelease"):
        assert title in dom


def test_the_public_names_are_what_dir_shows():
    names = dir(pp)
    for name in ("synthesize", "evaluate", "release", "PseudoPosterior", "datasets"):
        assert name in names and getattr(pp, name) is not None
    assert "importlib" not in names and names == sorted(pp.__all__)


def test_result_names_read_well(out):
    assert out.fit is out.result
    assert isinstance(out.datasets, list) and len(out.datasets) == 1
    assert out.datasets[0] is out.synthetic
