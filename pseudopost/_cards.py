"""Short text and HTML cards of results for notebooks (``__repr__``, ``_repr_html_``).

A card leads with what a reader acts on: what was released, the privacy statement in one
sentence, the epsilons, a verdict on the sampler's diagnostics (largest R-hat, smallest bulk
ESS, divergences) and the timings; tables and the DataTree fold underneath (HTML ``<details>``).
Text cards stay under 2,000 characters whatever the size of the data.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping

import pandas as pd

__all__ = ["ReleaseCard", "diagnostics_verdict", "html_card", "text_card"]

#: longest text card
MAX_TEXT = 2000


def diagnostics_verdict(diagnostics: Mapping) -> str:
    """One line over every fit's :class:`~pseudopost.fitting.sampler.FitDiagnostics`: the
    largest R-hat, the smallest bulk ESS and the divergences, and whether any is poor."""
    if not diagnostics:
        return "no sampler diagnostics (exact or closed-form draws)"
    rhat, ess, div, poor = [], [], 0, 0
    for d in diagnostics.values():
        t = getattr(d, "table", None)
        if t is not None and len(t):
            rhat.append(float(pd.to_numeric(t["r_hat"], errors="coerce").max()))
            ess.append(float(pd.to_numeric(t["ess_bulk"], errors="coerce").min()))
        div += int(getattr(d, "divergences", 0) or 0)
        poor += len(d.problems()) if hasattr(d, "problems") else 0
    rhat = [r for r in rhat if r == r]  # NaN: a constant parameter's R-hat
    ess = [e for e in ess if e == e]
    parts = [f"largest R-hat {max(rhat):.3f}" if rhat else "R-hat needs 2 chains or more"]
    if ess:
        parts.append(f"smallest bulk ESS {min(ess):.0f}")
    parts.append(f"{div} divergences")
    verdict = "poor: see .diagnostics" if poor else "ok"
    return f"{verdict} ({'; '.join(parts)})"


def _clip(text: str, limit: int = MAX_TEXT) -> str:
    return text if len(text) <= limit else text[: limit - 4] + " ..."


def text_card(title: str, lines: Iterable[tuple[str, str]], limit: int = MAX_TEXT) -> str:
    """``<title>`` then ``  key: value`` lines, clipped to ``limit`` characters."""
    body = "\n".join(f"  {k}: {v}" for k, v in lines)
    return _clip(f"<{title}>\n{body}", limit)


def html_card(
    title: str,
    lines: Iterable[tuple[str, str]],
    folds: Iterable[tuple[str, str]] = (),
) -> str:
    """An HTML card: a title, a definition list of ``lines`` (escaped) and ``folds``
    (summary, inner HTML: already HTML, e.g. a table's ``to_html()``) in ``<details>``."""
    rows = "".join(
        f"<tr><th style='text-align:left;padding-right:1em'>{html.escape(k)}</th>"
        f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
        for k, v in lines
    )
    inner = "".join(
        f"<details><summary>{html.escape(s)}</summary>{body}</details>" for s, body in folds
    )
    return (
        f"<div class='pseudopost-card'><strong>{html.escape(title)}</strong>"
        f"<table>{rows}</table>{inner}</div>"
    )


def timings_text(timings: Mapping[str, float] | None) -> str:
    """``fit 12.3 s, refit 10.1 s, ...`` (seconds)."""
    if not timings:
        return "-"
    return ", ".join(f"{k} {float(v):.1f} s" for k, v in timings.items())


def _number(value: object) -> str:
    try:
        return f"{float(value):.4g}"
    except (TypeError, ValueError):
        return str(value)


class ReleaseCard:
    """Short ``__repr__`` and ``_repr_html_`` for a released record (a lighter mechanism's
    release): its class, the privacy statement in one sentence where it has one (else its
    epsilon and delta), then :meth:`_card_details`; an estimator that keeps its release
    (``fit`` returning itself) shows its budget until it is fitted. A dataclass using it is declared with
    ``repr=False`` so that the card is kept."""

    def _card_details(self) -> list[tuple[str, str]]:
        """The release's own lines (what was released, of how many records)."""
        return []

    def _card_lines(self) -> list[tuple[str, str]]:
        try:
            statement = getattr(self, "privacy_statement", None)
        except RuntimeError:  # an estimator not fitted yet: its budget only
            statement = None
        if statement is not None:
            lines = [("privacy", statement.describe())]
        else:
            eps, delta = getattr(self, "epsilon", None), getattr(self, "delta", None)
            lines = [("epsilon", _number(eps) + (f", delta {_number(delta)}" if delta else ""))]
        return lines + list(self._card_details())

    def __repr__(self) -> str:
        return text_card(type(self).__name__, self._card_lines())

    def _repr_html_(self) -> str:
        return html_card(type(self).__name__, self._card_lines())
