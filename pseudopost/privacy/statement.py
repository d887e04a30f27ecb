r"""One privacy statement for every release: what is guaranteed, to whom, under what.

Every mechanism's result carries a :class:`PrivacyStatement`; the release command, its report
and the budget ledger read it and never guess the kind of guarantee from the mechanism's name or
from its numbers. A statement says:

* ``epsilon`` and ``delta``: the privacy loss of one ``unit``;
* ``unit``: ``"dataset"`` when each synthetic dataset costs (epsilon, delta), so m of them
  compose to :math:`(m\varepsilon, m\delta)` under basic composition (the pseudo posterior: each
  dataset uses its own posterior draw); ``"release"`` when any number of samples drawn from the
  one release cost (epsilon, delta) once (post-processing: REPS, PRISM, entropy, Wiener);
* ``neighbouring``: the neighbouring relation (:data:`ADD_REMOVE`, :data:`REPLACE_ONE`,
  :data:`REPLACE_WITH_NULL`);
* ``scope``: ``"global"`` (a worst-case guarantee over all pairs of neighbouring databases),
  ``"global given the weights"`` (a worst-case bound that holds only if the weights did not
  depend on the data, which the statement's assumptions then name) or ``"local"`` (it holds
  for this database and its neighbours only, e.g. the pseudo posterior's
  :math:`\varepsilon_x`);
* ``assumptions``: everything the guarantee needs (exact posterior sampling, declared ranges,
  public n, ...), in words;
* ``source``: the paper and equation the bound comes from.

Only ``"global"`` statements with the same neighbouring relation compose into a global total;
a ledger keeps the others apart (:meth:`PrivacyStatement.composes_with`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

from pseudopost._cards import html_card, text_card

__all__ = [
    "ADD_REMOVE",
    "REPLACE_ONE",
    "REPLACE_WITH_NULL",
    "SCOPES",
    "UNITS",
    "PrivacyStatement",
]

ADD_REMOVE = "add/remove one record"
REPLACE_ONE = "replace one record"
REPLACE_WITH_NULL = "replace one record by the null record (n public)"
SCOPES = ("global", "global given the weights", "local")
UNITS = ("dataset", "release")

Scope = Literal["global", "global given the weights", "local"]
Unit = Literal["dataset", "release"]


@dataclass(frozen=True, repr=False)
class PrivacyStatement:
    """The privacy guarantee of one release (module docstring)."""

    mechanism: str
    epsilon: float
    delta: float
    neighbouring: str
    scope: Scope
    unit: Unit
    assumptions: tuple[str, ...] = ()
    source: str = ""
    #: a structure stage paid once per release before the mechanism ran (a whole file's DP
    #: bounds, bins and spikes; :mod:`pseudopost.mechanisms.structure`): pure epsilon-DP,
    #: add/remove, global; it adds to the release's charge once, whatever m
    structure_epsilon: float = 0.0
    #: the structure stage's delta (partition selection of text levels), paid once like its
    #: epsilon
    structure_delta: float = 0.0

    def __post_init__(self) -> None:
        if not (isinstance(self.epsilon, (int, float)) and math.isfinite(self.epsilon)) or (
            self.epsilon < 0
        ):
            raise ValueError(
                f"A privacy statement's 'epsilon' must be a finite number >= 0. "
                f"Got {self.epsilon!r}."
            )
        if not (0.0 <= float(self.delta) <= 1.0):
            raise ValueError(
                f"A privacy statement's 'delta' must be in [0, 1]. Got {self.delta!r}."
            )
        if self.scope not in SCOPES:
            raise ValueError(f"'scope' must be one of {SCOPES}. Got {self.scope!r}.")
        if self.unit not in UNITS:
            raise ValueError(f"'unit' must be one of {UNITS}. Got {self.unit!r}.")
        object.__setattr__(self, "epsilon", float(self.epsilon))
        object.__setattr__(self, "delta", float(self.delta))
        se = self.structure_epsilon
        if not (isinstance(se, (int, float)) and math.isfinite(se) and se >= 0):
            raise ValueError(
                f"A privacy statement's 'structure_epsilon' must be a finite number >= 0. "
                f"Got {se!r}."
            )
        object.__setattr__(self, "structure_epsilon", float(se))
        if not (0.0 <= float(self.structure_delta) <= 1.0):
            raise ValueError(
                f"A privacy statement's 'structure_delta' must be in [0, 1]. "
                f"Got {self.structure_delta!r}."
            )
        object.__setattr__(self, "structure_delta", float(self.structure_delta))
        object.__setattr__(self, "assumptions", tuple(str(a) for a in self.assumptions))

    @property
    def is_global(self) -> bool:
        """A worst-case guarantee over all neighbouring databases, with nothing left to assume
        about the weights."""
        return self.scope == "global"

    def charge(self, m: int = 1) -> tuple[float, float]:
        r"""(epsilon, delta) that releasing ``m`` synthetic datasets costs: basic composition
        :math:`(m\varepsilon, m\delta)` for ``unit="dataset"``, (epsilon, delta) once for
        ``unit="release"`` (the datasets are samples of one release: post-processing); plus
        the structure stage's :math:`\varepsilon_s` once (sequential composition: the structure
        is chosen once for all m datasets)."""
        if int(m) != m or m < 1:
            raise ValueError(f"'m' must be a whole number >= 1. Got {m!r}.")
        k = int(m) if self.unit == "dataset" else 1
        return (
            k * self.epsilon + self.structure_epsilon,
            min(1.0, k * self.delta + self.structure_delta),
        )

    def composes_with(self, other: PrivacyStatement) -> bool:
        """Whether the two guarantees add into one guarantee of the same kind: both global under
        the same neighbouring relation, or both of the same non-global scope."""
        return self.scope == other.scope and (
            self.neighbouring == other.neighbouring or not self.is_global
        )

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``privacy.json``, the ledger)."""
        out = asdict(self)
        out["assumptions"] = list(self.assumptions)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PrivacyStatement:
        """The inverse of :meth:`as_dict`."""
        keys = {f for f in cls.__dataclass_fields__}
        return cls(
            **{k: (tuple(v) if k == "assumptions" else v) for k, v in data.items() if k in keys}
        )

    def __repr__(self) -> str:
        lines = [("epsilon", f"{self.epsilon:.6g}" + (f", delta {self.delta:.3g}" if self.delta
                                                       else "")),
                 ("scope", str(self.scope)), ("neighbours", self.neighbouring),
                 ("unit", str(self.unit)), ("mechanism", self.mechanism)]  # fmt: skip
        if self.structure_epsilon:
            lines.append(("structure stage", f"epsilon {self.structure_epsilon:.3g}, delta "
                                             f"{self.structure_delta:.3g}"))  # fmt: skip
        lines.append(("in a sentence", self.describe()))
        return text_card("PrivacyStatement", lines)

    def _repr_html_(self) -> str:
        return html_card("PrivacyStatement", [("in a sentence", self.describe())])

    def describe(self) -> str:
        """One sentence for reports and logs."""
        what = (
            f"({self.epsilon:.6g}, {self.delta:.3g})-DP" if self.delta else f"{self.epsilon:.6g}-DP"
        )
        per = "per synthetic dataset" if self.unit == "dataset" else "for the whole release"
        text = f"{self.scope} {what} {per}, neighbours: {self.neighbouring}"
        if self.structure_epsilon:
            text += (
                f"; plus a structure stage of global ({self.structure_epsilon:.3g}, "
                f"{self.structure_delta:.3g})-DP once per release (bounds, bins, spikes, "
                f"levels; add/remove), so one dataset costs "
                f"{self.epsilon + self.structure_epsilon:.6g} in all"
            )
        return text + (f"; assumes {'; '.join(self.assumptions)}" if self.assumptions else "")
