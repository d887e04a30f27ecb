"""The report renders in headless Chromium (Debian package ``chromium``) without console
errors; a screenshot is taken and kept with the test run."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
    "--window-size=1100,3200",
]


def test_report_renders_in_headless_chromium(released, tmp_path):
    check_renders(released / "release" / "report.html", tmp_path, "report.png")


def test_lighter_report_renders_in_headless_chromium(lighter_released, tmp_path):
    """The fully synthetic variant (REPS): budget per stage, per-record epsilon, marginals."""
    page = lighter_released["reps"] / "report.html"
    text = page.read_text()
    assert "<script" not in text.lower() and "http://" not in text and "https://" not in text
    assert text.count('src="data:image/png;base64,') >= 4  # stages, 2 violins, marginals
    for phrase in ("Budget per stage", "Disclosure risk", "TSTR AUROC", "unique_match_share"):
        assert phrase in text
    assert "Lipschitz" not in text and "Sampler diagnostics" not in text
    check_renders(page, tmp_path, "report-reps.png")


def check_renders(page: Path, tmp_path: Path, name: str) -> None:
    """Render ``page`` in headless Chromium: no console errors, a non-blank screenshot with
    coloured plots (kept under $PSEUDOPOST_ARTIFACTS/NAME when set)."""
    if not CHROMIUM.exists():
        pytest.skip("headless Chromium check needs /usr/bin/chromium (apt-get install chromium)")
    shot = tmp_path / name
    proc = subprocess.run(
        [
            str(CHROMIUM),
            *FLAGS,
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    console = [
        line
        for line in proc.stderr.splitlines()
        if "Uncaught" in line or "CONSOLE" in line or ":console(" in line.lower()
    ]
    assert console == []
    assert shot.read_bytes().startswith(b"\x89PNG")
    pixels = mpimg.imread(shot)[..., :3]
    ink = (pixels < 0.9).any(axis=2)
    assert ink.mean() > 0.03  # text, tables and plots, not a blank page
    colour = np.ptp(pixels, axis=2) > 0.1  # plots and the warning box are the coloured areas
    assert colour.mean() > 0.01
    keep = os.environ.get("PSEUDOPOST_ARTIFACTS")
    if keep:  # e.g. set by the test script to collect the screenshot
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(keep) / name)
