r"""The ``[frontier]`` section of a pseudo posterior release: choose the weight setting on the
risk-utility frontier by a stated rule, then release from a refit at that setting.

The section's layout is in :mod:`pseudopost.release.adapters.pseudo_posterior` (and
``examples/fatigue_frontier.toml``); its keys are :data:`FRONTIER_SECTION`.

What happens (:meth:`~pseudopost.release.adapters.pseudo_posterior.PseudoPosteriorAdapter.fit`):

1. the mechanism is fitted at ``mechanism.scale`` and ``mechanism.shift`` (the *first fit*);
2. :func:`pseudopost.evaluate.frontier` estimates, for every (c, g) of ``scales`` x ``shifts``,
   the local epsilon, S_pMSE and (with disclosure keys and a sensitive column) repU and DiSCO
   of the release each setting would give, by PSIS on the first fit's draws where the Pareto
   k-hat is below 0.7 and by a refit otherwise (column ``method``);
3. the rule ``choose = "max_utility"``: among the rows whose *estimated* epsilon is at most
   ``frontier.max_epsilon``, the lowest S_pMSE (ties: the lower epsilon, then grid order).
   If no row qualifies the release is refused (:class:`~pseudopost.release.ledger.BudgetError`)
   before any synthetic data exist;
4. the mechanism is **refitted** at the chosen (c, g) with the first fit's seed (so its
   unweighted fit, risks and weights are the first fit's risks under the new setting: the
   refit is the release the same spec with ``mechanism.scale = c``, ``mechanism.shift = g``
   would make), and the release is made from the refit. Its epsilon is the refit's, computed
   by the accountant, never the PSIS estimate. If the refit's epsilon exceeds
   ``frontier.max_epsilon`` (an estimate is within about 10 % of a refit), the next row by the
   rule is refitted, up to ``max_refits`` refits; then the release is refused.

Privacy. The frontier publishes no synthetic data and the ledger charges it nothing: the release
charges the refit's epsilon per synthetic dataset, as any pseudo posterior release (m x
epsilon). The choice of the setting read the confidential data (the frontier's estimates are
computed from them), so it is covered only as the local epsilon is, which the weights, being
computed from the data's risks, already are: the local epsilon is a statement about this
database and its add/remove-one neighbours, conditional on the weights. The frontier's table,
shown in the report and ``privacy.json``, is, like the report's utility and disclosure tables,
a statistic of the confidential data for the agency, covered by no epsilon.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pseudopost.release.errors import SpecError
from pseudopost.release.schema import Schema, choice, fail

__all__ = [
    "FRONTIER_RULES",
    "FRONTIER_SECTION",
    "FrontierSettings",
    "candidates",
    "parse_frontier",
    "rule_text",
]

#: the rules ``frontier.choose`` may name -> what they do
FRONTIER_RULES = {
    "max_utility": "the lowest S_pMSE (the largest utility) among the settings whose estimated "
    "epsilon is at most frontier.max_epsilon",
}
#: the most settings one grid may hold (each may need a refit)
MAX_SETTINGS = 64


def _numbers(positive: bool):
    expected = (
        "a non-empty list of distinct numbers > 0"
        if positive
        else "a non-empty list of distinct finite numbers"
    )
    example = "[0.25, 0.5, 1.0]" if positive else "[0.0, 0.1]"

    def kind(key: str, value: Any) -> tuple[float, ...]:
        ok = (
            isinstance(value, list)
            and len(value) > 0
            and all(
                isinstance(v, int | float)
                and not isinstance(v, bool)
                and math.isfinite(v)
                and (v > 0 or not positive)
                for v in value
            )
        )
        if not ok or len(set(value)) != len(value):
            raise fail(key, value, expected, f"e.g. {key.split('.')[-1]} = {example}.")
        return tuple(float(v) for v in value)

    kind.expected = expected  # type: ignore[attr-defined]
    return kind


#: the section's keys: key -> (required, kind; required once the section is given). The loader
#: checks keys in this order, a missing required key when it reaches it: the optional keys first,
#: so that a bad value of one is named even in a section lacking a required key
FRONTIER_SECTION: Schema = {
    "choose": (False, "str"),
    "datasets": (False, "posint"),
    "max_refits": (False, "posint"),
    "max_epsilon": (True, "posfloat"),
    "scales": (True, _numbers(True)),
    "shifts": (False, _numbers(False)),
}

#: mechanism options the frontier cannot honour, and why
_REFUSED = {
    "target_epsilon": "both pick the weights' scale (the calibration to a target, and the rule)",
    "censor_epsilon": "a censored fit's epsilon is 2B at every setting, so its frontier in "
    "epsilon is flat",
    "reweight": "a Lipschitz re-weighted fit's weights come from a first weighted fit's bounds, "
    "not from (scale, shift) alone",
}


@dataclass(frozen=True)
class FrontierSettings:
    """The checked ``[frontier]`` section."""

    scales: tuple[float, ...]
    shifts: tuple[float, ...]
    choose: str
    max_epsilon: float
    datasets: int
    max_refits: int

    @property
    def grid(self) -> list[tuple[float, float]]:
        return [(c, g) for c in self.scales for g in self.shifts]


def parse_frontier(
    sections: Mapping[str, Mapping[str, Any]], options: Mapping[str, Any], draws: int
) -> FrontierSettings | None:
    """The ``[frontier]`` section checked against ``[mechanism]`` (``options``), ``[budget]``
    and the fit's ``draws`` (draws x chains); None when the spec has none."""
    fr = sections.get("frontier")
    if not fr:  # absent (a given section holds its required keys)
        return None
    for key, why in _REFUSED.items():
        if options.get(key) not in (None, False):
            raise SpecError(
                f"spec section '[frontier]' cannot be combined with 'mechanism.{key}' = "
                f"{options[key]!r}: {why}. Fix: remove [frontier] or mechanism.{key}."
            )
    rule = choice("frontier.choose", fr.get("choose", "max_utility"), FRONTIER_RULES)
    shifts = fr.get("shifts", (float(options.get("shift", 0.0)),))
    for c in fr["scales"]:
        for g in shifts:
            if c + g <= 0:
                raise fail(
                    "frontier.shifts",
                    list(shifts),
                    f"shifts with scale + shift > 0 for every scale (scale {c:g} and shift "
                    f"{g:g} make every weight 0)",
                    "raise the shift or drop it.",
                )
    n = len(fr["scales"]) * len(shifts)
    if n > MAX_SETTINGS:
        raise fail(
            "frontier.scales",
            list(fr["scales"]),
            f"a grid of at most {MAX_SETTINGS} settings (scales x shifts; got {n})",
            "use fewer scales or shifts.",
        )
    cap = sections["budget"]["max_epsilon"]
    if fr["max_epsilon"] > cap:
        raise fail(
            "frontier.max_epsilon",
            fr["max_epsilon"],
            f"at most budget.max_epsilon = {cap}",
            "lower frontier.max_epsilon or raise budget.max_epsilon.",
        )
    datasets = fr.get("datasets", 1)
    if datasets > draws:
        raise fail(
            "frontier.datasets",
            datasets,
            f"at most the fit's {draws} draws (sampling.draws x sampling.chains)",
            "lower frontier.datasets or raise sampling.draws.",
        )
    return FrontierSettings(
        scales=tuple(fr["scales"]),
        shifts=tuple(shifts),
        choose=rule,
        max_epsilon=fr["max_epsilon"],
        datasets=datasets,
        max_refits=fr.get("max_refits", 3),
    )


def rule_text(fs: FrontierSettings) -> str:
    """The rule in words, with its target."""
    return FRONTIER_RULES[fs.choose].replace(
        "frontier.max_epsilon", f"frontier.max_epsilon = {fs.max_epsilon:g}"
    )


def candidates(curve: pd.DataFrame, fs: FrontierSettings) -> list[int]:
    """Row positions of ``curve`` the rule accepts, best first: estimated epsilon at most the
    target and a finite S_pMSE, by S_pMSE, then epsilon, then grid order."""
    eps = curve["epsilon"].to_numpy(float)
    util = curve["S_pMSE"].to_numpy(float)
    ok = np.isfinite(eps) & np.isfinite(util) & (eps <= fs.max_epsilon)
    rows = np.flatnonzero(ok)
    return [int(r) for r in sorted(rows, key=lambda r: (util[r], eps[r], r))]
