"""Shared helpers of the benchmark scripts: a results table printed and saved."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

RESULTS = Path(__file__).resolve().parent / "results"


def report(table: pd.DataFrame, name: str, title: str) -> None:
    """Print ``table`` as Markdown under ``title`` and save it to results/NAME.{md,csv}."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    text = f"## {title}\n\n{table.to_markdown(index=False, floatfmt='.3g')}\n"
    print(text)
    (RESULTS / f"{name}.md").write_text(text)
    table.to_csv(RESULTS / f"{name}.csv", index=False)
