r"""``report.html``: a self-contained page about one release, for readers who do not run Python.

No JavaScript and no external files: inline CSS, tables, and matplotlib figures embedded as
base64 PNG. One page layout for every mechanism (:func:`build_report`):

1. **Privacy**: the facts the mechanism's adapter lists (:class:`ReportParts`), the release's
   :class:`~pseudopost.privacy.PrivacyStatement` in words (scope, unit, neighbouring relation,
   assumptions, source), then the adapter's own privacy figures (e.g. the pseudo posterior's
   by-record Lipschitz bounds and weights; the budget per stage of REPS, PRISM and the entropy
   release; REPS's per-record epsilon);
   then the **Verdicts** when the adapter gives them (each measure beside a reference:
   :mod:`pseudopost.release.verdicts`);
2. **Real vs synthetic marginals**: ECDFs of numeric columns, category shares of the others;
3. **Utility** and **Disclosure risk**: the tables of :mod:`pseudopost.release.measures`, each
   with its note;
4. the adapter's closing sections (e.g. the sampler diagnostics).

The helpers (:func:`violins`, :func:`stage_bars`, :func:`table`, :func:`kv`) are what adapters
build their sections with.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pseudopost.privacy.statement import PrivacyStatement
from pseudopost.release.measures import Measures

__all__ = [
    "ReportParts",
    "build_report",
    "frontier_figure",
    "kv",
    "marginals",
    "note",
    "stage_bars",
    "table",
    "violins",
    "warning_box",
]


@dataclass(frozen=True)
class ReportParts:
    """What a mechanism's adapter puts on the page: the rows of the privacy table (``facts``),
    HTML blocks after it (``before``) and at the end of the page (``after``), and warnings
    shown in a highlighted box (e.g. the sampler's)."""

    facts: Mapping[str, Any]
    before: Sequence[str] = ()
    after: Sequence[str] = ()
    warnings: Sequence[str] = ()
    warnings_title: str = "Warnings"


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="figure" src="data:image/png;base64,{data}">'


def violins(groups: Mapping[str, np.ndarray], title: str, ylabel: str) -> str:
    """Violins of per-record values (one dot per record), one per group."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.4))
    values = [np.asarray(v, float) for v in groups.values()]
    ax.violinplot(values, showmedians=True)
    for j, v in enumerate(values, start=1):
        ax.scatter(np.full(v.size, j), v, s=8, color="black", alpha=0.5, zorder=3)
    ax.set_xticks(range(1, len(values) + 1), list(groups))
    ax.set_title(title)
    ax.set_ylabel(ylabel)
    return _png(fig)


def _ecdf(ax, values: np.ndarray, **style) -> None:
    x = np.sort(values)
    ax.step(x, np.arange(1, x.size + 1) / x.size, where="post", **style)


def _numeric_panel(ax, c: str, real: pd.DataFrame, synthetic: Sequence[pd.DataFrame]) -> None:
    _ecdf(ax, real[c].to_numpy(float), color="black", lw=2, label="real")
    for j, s in enumerate(synthetic, start=1):
        _ecdf(ax, s[c].to_numpy(float), alpha=0.7, label=f"synthetic {j}")
    both = np.concatenate([real[c].to_numpy(float), *(s[c].to_numpy(float) for s in synthetic)])
    if both.min() > 0 and both.max() / both.min() > 100:
        ax.set_xscale("log")  # skewed positive values (e.g. counts, incomes)
    ax.set_title(f"ECDF of {c}")
    ax.set_ylabel("cumulative share")


def _categorical_panel(ax, c: str, real: pd.DataFrame, synthetic: Sequence[pd.DataFrame]) -> None:
    shares = [real[c].astype(str).value_counts(normalize=True)]
    shares += [s[c].astype(str).value_counts(normalize=True) for s in synthetic]
    levels = list(shares[0].index[:10])
    width = 0.8 / len(shares)
    pos = np.arange(len(levels))
    for j, sh in enumerate(shares):
        ax.bar(
            pos + j * width,
            sh.reindex(levels, fill_value=0.0).to_numpy(),
            width,
            color="black" if j == 0 else None,
            label="real" if j == 0 else f"synthetic {j}",
        )
    ax.set_xticks(
        pos + 0.4 - width / 2, [str(v)[:14] for v in levels], rotation=45, ha="right", fontsize=7
    )
    ax.set_title(f"shares of {c}")


def marginals(real: pd.DataFrame, synthetic: Sequence[pd.DataFrame], columns) -> str:
    """ECDFs of numeric columns and category shares of the others, real vs synthetic (the
    first 12 columns, three panels a row)."""
    import matplotlib.pyplot as plt

    cols = list(columns)[:12]
    ncol = min(3, len(cols))
    nrow = -(-len(cols) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.4 * ncol, 3.2 * nrow), squeeze=False)
    for ax in axes.ravel()[len(cols) :]:
        ax.set_visible(False)
    for ax, c in zip(axes.ravel(), cols, strict=False):
        numeric = all(pd.api.types.is_numeric_dtype(f[c]) for f in (real, *synthetic))
        (_numeric_panel if numeric else _categorical_panel)(ax, c, real, synthetic)
        ax.tick_params(labelsize=7)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def stage_bars(stages: Sequence[Mapping[str, Any]]) -> str:
    """A bar per stage that spends epsilon (basic composition)."""
    import matplotlib.pyplot as plt

    spent = [s for s in stages if s.get("epsilon", 0) > 0]
    fig, ax = plt.subplots(figsize=(6, 0.5 + 0.45 * max(1, len(spent))))
    ax.barh([str(s["stage"])[:48] for s in spent], [s["epsilon"] for s in spent], color="#4c72b0")
    ax.invert_yaxis()
    ax.set_xlabel("epsilon")
    ax.set_title("Budget per stage (basic composition)")
    ax.tick_params(labelsize=7)
    return _png(fig)


def frontier_figure(
    frame: pd.DataFrame, max_epsilon: float | None = None, chosen: int | None = None
) -> str:
    """Epsilon against S_pMSE of a frontier (:func:`pseudopost.evaluate.plot_frontier`,
    coloured by disclosure), with the target epsilon as a dashed line and the row ``chosen``
    (a position) ringed."""
    import matplotlib.pyplot as plt

    from pseudopost.evaluate.frontier import plot_frontier

    fig, ax = plt.subplots(figsize=(6.2, 4.2))
    plot_frontier(frame, ax=ax, title="Risk-utility frontier (estimated from the first fit)")
    if max_epsilon is not None:
        ax.axvline(max_epsilon, color="firebrick", ls="--", lw=1, label="target epsilon")
    if chosen is not None:
        row = frame.iloc[chosen]
        ax.scatter([row["epsilon"]], [row["S_pMSE"]], s=260, facecolors="none",
                   edgecolors="firebrick", linewidths=1.5, label="chosen")  # fmt: skip
    if max_epsilon is not None or chosen is not None:
        legend = ax.legend(fontsize=8)
        for handle, text in zip(legend.legend_handles, legend.get_texts(), strict=True):
            if text.get_text() in ("psis", "refit"):  # the marker says the method
                handle.set_array(None)  # else re-coloured from its array when drawn
                handle.set_facecolor("white")
    return _png(fig)


def table(frame: pd.DataFrame, digits: int = 4) -> str:
    """An HTML table of ``frame`` (numbers to ``digits`` significant digits)."""
    return frame.to_html(
        index=False, border=0, classes="t", float_format=lambda v: f"{v:.{digits}g}"
    )


def kv(rows: Mapping[str, Any]) -> str:
    """A two-column table of names and values."""
    body = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
        for k, v in rows.items()
    )
    return f'<table class="t kv">{body}</table>'


def note(text: str) -> str:
    """A paragraph of explanatory text."""
    return f"<p class='note'>{html.escape(text)}</p>"


_CSS = """
body{font-family:system-ui,Helvetica,Arial,sans-serif;max-width:1000px;margin:2em auto;
color:#222;line-height:1.4;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table.t{border-collapse:collapse;margin:.6em 0;font-size:.92em}
table.t th,table.t td{border:1px solid #ddd;padding:.25em .6em;text-align:right}
table.kv th{text-align:left;background:#f4f4f4}
.note{color:#555;font-size:.9em}img{max-width:100%}
.warn{background:#fff3cd;border:1px solid #e0c36a;padding:.5em}
"""


def warning_box(heading: str, items: Sequence[str]) -> str:
    """A highlighted box listing ``items``."""
    lis = "".join(f"<li>{html.escape(str(i))}</li>" for i in items)
    return f"<div class='warn'><b>{html.escape(heading)}</b><ul>{lis}</ul></div>"


def build_report(
    *,
    title: str,
    statement: PrivacyStatement,
    parts: ReportParts,
    real: pd.DataFrame,
    synthetic: Sequence[pd.DataFrame],
    columns: Sequence[str],
    measures: Measures,
) -> str:
    """The HTML text of the report (module docstring)."""
    page = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        "<h2>Privacy</h2>",
        kv(parts.facts),
        note(f"Guarantee: {statement.describe()}. Source: {statement.source or 'not stated'}."),
    ]
    if parts.warnings:
        page.append(warning_box(parts.warnings_title, parts.warnings))
    if measures.verdicts is not None:
        page += [
            "<h2>Verdicts</h2>",
            note("Each measure beside its reference; the details follow below."),
            table(measures.verdicts),
        ]
    page += [
        *parts.before,
        "<h2>Real vs synthetic marginals</h2>",
        marginals(real[list(columns)], synthetic, columns),
        "<h2>Utility</h2>",
    ]
    for name, frame in measures.utility.items():
        if name in measures.notes:
            page.append(note(measures.notes[name]))
        page.append(table(frame))
    page.append("<h2>Disclosure risk</h2>")
    if "disclosure" in measures.notes:
        page.append(note(measures.notes["disclosure"]))
    page += [table(measures.disclosure), *parts.after, "</body></html>"]
    return "\n".join(page)
