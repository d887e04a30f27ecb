r"""``report.html``: a self-contained page about one release, for readers who do not run Python.

No JavaScript and no external files: inline CSS, tables, and matplotlib figures embedded as
base64 PNG. It shows the privacy figures and budget, the by-record Lipschitz bounds and weights
(violins), real vs synthetic marginals, the utility measures, the disclosure measures and the
sampler diagnostics.

Utility measures come from :mod:`pseudopost.evaluate.utility`: the ECDF measures
:math:`U_m`, :math:`U_a` per column, the pMSE of a propensity model, and the confidence-interval
overlap of the model's regression coefficients.

:func:`build_synthetic_report` is the variant for the lighter releases (REPS, PRISM, entropy
histogram): fully synthetic rows with a global (epsilon, delta) guarantee, so it shows the
budget per stage instead of Lipschitz and weight violins (these mechanisms have none), marginals
of numeric (ECDF) and categorical (category shares) columns, pMSE and TSTR, and the key-matching
disclosure measures of :func:`pseudopost.evaluate.disclosure.match_risk`.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["build_report", "build_synthetic_report"]


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img alt="figure" src="data:image/png;base64,{data}">'


def _violins(groups: Mapping[str, np.ndarray], title: str, ylabel: str) -> str:
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


def _marginals(real: pd.DataFrame, synthetic: Sequence[pd.DataFrame], columns) -> str:
    import matplotlib.pyplot as plt

    cols = list(columns)
    fig, axes = plt.subplots(1, len(cols), figsize=(4.2 * len(cols), 3.2), squeeze=False)
    for ax, c in zip(axes[0], cols, strict=True):
        x = np.sort(real[c].to_numpy(float))
        ax.step(
            x, np.arange(1, x.size + 1) / x.size, where="post", color="black", lw=2, label="real"
        )
        for j, s in enumerate(synthetic, start=1):
            y = np.sort(s[c].to_numpy(float))
            ax.step(
                y,
                np.arange(1, y.size + 1) / y.size,
                where="post",
                alpha=0.7,
                label=f"synthetic {j}",
            )
        both = np.concatenate([x, *(s[c].to_numpy(float) for s in synthetic)])
        if both.min() > 0 and both.max() / both.min() > 100:
            ax.set_xscale("log")  # skewed positive values (e.g. counts, incomes)
        ax.set_title(f"ECDF of {c}")
        ax.set_ylabel("cumulative share")
    axes[0][0].legend(fontsize=7)
    return _png(fig)


def _describe_range(described: Mapping[str, Any] | None) -> str:
    if not described:
        return "none declared"
    rest = ", ".join(f"{k} = {v}" for k, v in described.items() if k != "kind")
    return f"{described.get('kind', 'range')} ({rest})"


def _table(frame: pd.DataFrame, digits: int = 4) -> str:
    return frame.to_html(
        index=False, border=0, classes="t", float_format=lambda v: f"{v:.{digits}g}"
    )


def _kv(rows: Mapping[str, Any]) -> str:
    body = "".join(
        f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
        for k, v in rows.items()
    )
    return f'<table class="t kv">{body}</table>'


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


def build_report(
    *,
    title: str,
    privacy: Mapping[str, Any],
    lipschitz: np.ndarray,
    unweighted_lipschitz: np.ndarray,
    alpha: np.ndarray,
    real: pd.DataFrame,
    synthetic: Sequence[pd.DataFrame],
    columns: Sequence[str],
    utility: pd.DataFrame,
    overlap: pd.DataFrame,
    disclosure: pd.DataFrame,
    diagnostics: Mapping[str, pd.DataFrame],
    divergences: Mapping[str, int],
    problems: Sequence[str],
) -> str:
    """The HTML text of the report (see the module docstring)."""
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        "<h2>Privacy</h2>",
        _kv(
            {
                "epsilon per synthetic dataset": f"{privacy['epsilon_per_dataset']:.4g}",
                "synthetic datasets (m)": privacy["m"],
                "epsilon charged (m x epsilon, basic composition)": f"{privacy['epsilon_total']:.4g}",
                "delta": privacy["delta"]
                if privacy["delta"] is not None
                else "none (pure epsilon)",
                "guarantee": privacy["guarantee_type"],
                "accountant": privacy.get("decomposition", "weighted"),
                "sensitive range": _describe_range(privacy.get("sensitive_range")),
                "neighbouring relation": privacy["neighbouring_relation"],
                "unweighted epsilon (no weighting)": f"{privacy['unweighted_epsilon']:.4g}",
                "budget total / cap per dataset": (
                    f"{privacy['budget']['total_epsilon']:.4g} / "
                    f"{privacy['budget']['max_epsilon']:.4g}"
                ),
            }
        ),
        f"<p class='note'>{html.escape(privacy['guarantee'])}. {html.escape(privacy['units'])}.</p>",
    ]
    if problems:
        items = "".join(f"<li>{html.escape(p)}</li>" for p in problems)
        parts.append(f"<div class='warn'><b>Sampler warnings</b><ul>{items}</ul></div>")
    parts += [
        "<h2>By-record Lipschitz bounds and weights</h2>",
        "<p class='note'>Each dot is one record. epsilon = 2 x the largest bound. Records with "
        "high risk get low weight alpha, which lowers their bound.</p>",
        _violins(
            {"released (weighted)": lipschitz, "unweighted, no range": unweighted_lipschitz},
            "Lipschitz bound per record",
            "Delta_i",
        ),
        _violins({"alpha": alpha}, "Record weights", "alpha_i"),
        "<h2>Real vs synthetic marginals</h2>",
        _marginals(real, synthetic, columns),
        "<h2>Utility</h2>",
        "<p class='note'>Per synthetic dataset and column: ECDF measures U_m (max) and U_a "
        "(mean squared) of the difference of real and synthetic empirical CDFs (0 is perfect), "
        "and the pMSE of a propensity model telling real from synthetic (smaller is better).</p>",
        _table(utility),
        "<p class='note'>Confidence-interval overlap of the regression coefficients (1 = same "
        "interval as on the real data, below 0 = disjoint).</p>",
        _table(overlap),
        "<h2>Disclosure risk</h2>",
        "<p class='note'>Identification: an intruder who knows a record's key columns and "
        "value matches synthetic records within the radius; expected match risk is a count over "
        "records, true match rate a share. Attribute risk: share of records whose sensitive "
        "value is guessed within the radius from key-matched synthetic records (baseline: "
        "guessing from the whole synthetic column).</p>",
        _table(disclosure),
        "<h2>Sampler diagnostics</h2>",
    ]
    for fit, table in diagnostics.items():
        parts.append(f"<h3>{html.escape(fit)} fit ({divergences[fit]} divergences)</h3>")
        parts.append(_table(table))
    parts.append("</body></html>")
    return "\n".join(parts)


def _mixed_marginals(real: pd.DataFrame, synthetic: Sequence[pd.DataFrame], columns) -> str:
    """ECDFs of numeric columns and category shares of the others, real vs synthetic."""
    import matplotlib.pyplot as plt

    cols = list(columns)[:12]
    ncol = min(3, len(cols))
    nrow = -(-len(cols) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.4 * ncol, 3.2 * nrow), squeeze=False)
    for ax in axes.ravel()[len(cols) :]:
        ax.set_visible(False)
    for ax, c in zip(axes.ravel(), cols, strict=False):
        numeric = pd.api.types.is_numeric_dtype(real[c]) and all(
            pd.api.types.is_numeric_dtype(s[c]) for s in synthetic
        )
        if numeric:
            x = np.sort(real[c].to_numpy(float))
            ax.step(
                x,
                np.arange(1, x.size + 1) / x.size,
                where="post",
                color="black",
                lw=2,
                label="real",
            )
            for j, s in enumerate(synthetic, start=1):
                y = np.sort(s[c].to_numpy(float))
                ax.step(
                    y,
                    np.arange(1, y.size + 1) / y.size,
                    where="post",
                    alpha=0.7,
                    label=f"synthetic {j}",
                )
            ax.set_title(f"ECDF of {c}")
        else:
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
                pos + 0.4 - width / 2,
                [str(v)[:14] for v in levels],
                rotation=45,
                ha="right",
                fontsize=7,
            )
            ax.set_title(f"shares of {c}")
        ax.tick_params(labelsize=7)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return _png(fig)


def _stage_bars(stages: Sequence[Mapping[str, Any]]) -> str:
    import matplotlib.pyplot as plt

    spent = [s for s in stages if s.get("epsilon", 0) > 0]
    fig, ax = plt.subplots(figsize=(6, 0.5 + 0.45 * max(1, len(spent))))
    ax.barh([str(s["stage"])[:48] for s in spent], [s["epsilon"] for s in spent], color="#4c72b0")
    ax.invert_yaxis()
    ax.set_xlabel("epsilon")
    ax.set_title("Budget per stage (basic composition)")
    ax.tick_params(labelsize=7)
    return _png(fig)


def build_synthetic_report(
    *,
    title: str,
    privacy: Mapping[str, Any],
    real: pd.DataFrame,
    synthetic: Sequence[pd.DataFrame],
    columns: Sequence[str],
    marginals: pd.DataFrame,
    models: pd.DataFrame,
    disclosure: pd.DataFrame,
    per_record: Mapping[str, np.ndarray] | None = None,
) -> str:
    """The HTML text of the report of a lighter release (see the module docstring)."""
    budget = privacy["budget"]
    total_delta = budget.get("total_delta")
    stages = pd.DataFrame(
        [
            {k: v for k, v in st.items() if k in ("stage", "epsilon", "delta", "note")}
            for st in privacy["stages"]
        ]
    ).fillna("")
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        "<h2>Privacy</h2>",
        _kv(
            {
                "mechanism": privacy["description"],
                "epsilon": f"{privacy['epsilon']:.4g}",
                "delta": f"{privacy['delta']:.3g}",
                "guarantee": privacy["guarantee_type"],
                "neighbouring relation": privacy["neighbouring_relation"],
                "synthetic datasets (m)": privacy["m"],
                "rows per dataset": privacy["rows_per_dataset"],
                "composition": privacy["composition"],
                "budget total epsilon / delta": (
                    f"{budget['total_epsilon']:.4g} / "
                    + ("not set" if total_delta is None else f"{total_delta:.3g}")
                ),
            }
        ),
        "<p class='note'>Fully synthetic data: every released row is drawn from the DP "
        "summary below; no row corresponds to a real record. This page and the evaluation "
        "parts of privacy.json read the confidential data: they are for the data holder.</p>",
        "<h3>Budget per stage</h3>",
        _table(stages),
        _stage_bars(privacy["stages"]),
    ]
    if privacy.get("notes"):
        items = "".join(f"<li>{html.escape(str(n))}</li>" for n in privacy["notes"])
        parts.append(f"<div class='warn'><b>Assumptions</b><ul>{items}</ul></div>")
    if per_record:
        parts += [
            "<h2>Per-record privacy (data holder only)</h2>",
            "<p class='note'>REPS's per-instance epsilon of each record (Corollaries 1-2) and "
            "its weight: rare records get low weight and so a smaller epsilon than the global "
            "bound.</p>",
            *(
                _violins({name: values}, name, name.split(" ")[0])
                for name, values in per_record.items()
            ),
        ]
    parts += [
        "<h2>Real vs synthetic marginals</h2>",
        _mixed_marginals(real, synthetic, columns),
        "<h2>Utility</h2>",
        "<p class='note'>Per synthetic dataset and column: ECDF measures U_m (max) and U_a "
        "(mean squared) for numeric columns, total variation distance of the category shares "
        "for categorical ones (0 is perfect).</p>",
        _table(marginals),
        "<p class='note'>pMSE of a propensity model telling real from synthetic (smaller is "
        "better); TSTR: AUROC on the real data of a logistic regression of the target trained "
        "on the synthetic data, beside the same model trained on the real data.</p>",
        _table(models),
        "<h2>Disclosure risk</h2>",
        "<p class='note'>Fully synthetic rows: a synthetic record matches a real one when the "
        "categorical keys agree and the numeric keys lie within the radius (relative to the "
        "real value). Unique match share: synthetic records matching exactly one real record; "
        "singled-out share: real records that are the only match of some synthetic record; "
        "attribute risk: share of real records whose sensitive value is guessed from the "
        "key-matched synthetic records (baseline: guessing from the whole synthetic column). "
        f"Keys: {html.escape(', '.join(map(str, privacy.get('disclosure_keys', []))))}.</p>",
        _table(disclosure),
        "</body></html>",
    ]
    return "\n".join(parts)
