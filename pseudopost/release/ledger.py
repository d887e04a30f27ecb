r"""The budget ledger: a JSON file beside the data recording every release against its budget.

One ledger belongs to one data file (identified by its SHA-256) and holds the dataset's total
epsilon (and, once a release that spends delta has run, its total delta) and one entry per
committed release. Each entry keeps the release's
:class:`~pseudopost.privacy.PrivacyStatement` (``statement``: epsilon, delta, neighbouring
relation, scope, unit, assumptions) beside what it was charged: ``charge, delta_charge =
statement.charge(m)``, i.e. :math:`(m\varepsilon, m\delta)` for a statement per synthetic
dataset (the pseudo posterior: m datasets from m posterior draws) and :math:`(\varepsilon,
\delta)` once for a statement per release (REPS, PRISM, the entropy release: m samples of one
release are post-processing). Composition is basic (sequential) composition.

**Running totals.** Guarantees of different scopes are kept apart
(:meth:`~pseudopost.privacy.PrivacyStatement.composes_with`): the *global* total sums the
global statements only, the *global given the weights* total adds the statements that hold
given the weights, and the *local* total adds the local ones (the pseudo posterior's
:math:`\varepsilon_x`, which holds for this database only). The totals are nested because a
stronger guarantee implies the weaker ones (a worst case over all databases also holds at this
one); a local epsilon is never added into a global total. Within a total, statements under
different neighbouring relations are summed as bookkeeping and listed; their sum is one
guarantee only when the relations agree.

**The budget check** compares the *local* total, which every release enters (whatever its
scope, its guarantee holds at least locally), with the lifetime budget: a release may charge
``charge`` only if ``sum of every earlier charge + charge <= total_epsilon`` (and likewise
``sum of every delta charge + delta_charge <= total_delta``). So the budget is one lifetime
cap that no mix of global and local releases can exceed; the global total, shown apart, is the
guarantee the global releases give together.

Rules:

* A release whose cap (``m * max_epsilon``, or the declared epsilon of a per-release
  statement) exceeds what remains is refused before any work (:meth:`Ledger.precheck`).
* The charge is committed under an exclusive file lock (:mod:`filelock`), re-checked against
  the ledger as it is then, and the ledger is rewritten atomically (temp file, fsync, rename);
  so two processes never overspend, and a crash leaves either the old or the new ledger.
* The release's outputs are moved into place only after its charge is committed, inside the same
  lock: a crash between the two over-counts (safe), never under-counts.

Older ledgers are read as they are and upgraded to format 3 by the next commit: format
``pseudopost-ledger/1`` (no delta, no guarantee: its entries count in the local total only, as
"not recorded") and format 2 (``guarantee`` and ``neighbouring`` but no statement).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from pseudopost._io import write_json
from pseudopost.privacy.statement import SCOPES, PrivacyStatement

__all__ = ["FORMAT", "NOT_RECORDED", "BudgetError", "Ledger", "Total"]

FORMAT = "pseudopost-ledger/3"
#: formats this version reads (1: before delta and the guarantee; 2: before the statement)
READABLE = ("pseudopost-ledger/1", "pseudopost-ledger/2", FORMAT)
#: the guarantee of a format-1 entry
NOT_RECORDED = "not recorded"
_TOL = 1e-12
_DELTA_RTOL = 1e-9


class BudgetError(RuntimeError):
    """The release would overspend the dataset's budget, or the ledger disagrees with the spec."""


@dataclass(frozen=True)
class Total:
    """One running total (module docstring): the epsilon and delta charged by the releases
    whose guarantee holds at ``scope``, how many, and their neighbouring relations."""

    scope: str
    epsilon: float
    delta: float
    releases: int
    neighbouring: tuple[str, ...]

    @property
    def one_relation(self) -> bool:
        """Whether the summed statements share one neighbouring relation (then the total is
        their basic composition; otherwise bookkeeping)."""
        return len(self.neighbouring) <= 1


def _scope(entry: dict[str, Any]) -> str:
    """The scope of an entry's guarantee: its statement's, else the format-2 ``guarantee``,
    else "not recorded"."""
    statement = entry.get("statement")
    if isinstance(statement, dict) and statement.get("scope") in SCOPES:
        return statement["scope"]
    kind = entry.get("guarantee")
    return kind if kind in SCOPES else NOT_RECORDED


def _holds_at(entry_scope: str, scope: str) -> bool:
    """Whether a guarantee of ``entry_scope`` also holds at ``scope`` (global => given the
    weights => local; an entry without a recorded guarantee counts in the local total only)."""
    if entry_scope == NOT_RECORDED:
        return scope == SCOPES[-1]
    return SCOPES.index(entry_scope) <= SCOPES.index(scope)


def _check_entry(entry: dict[str, Any]) -> None:
    """An entry carrying a statement is charged what the statement says (programming check)."""
    if "statement" not in entry:
        return
    statement = PrivacyStatement.from_dict(entry["statement"])
    eps, delta = statement.charge(entry["m"])
    ok = math.isclose(float(entry["charge"]), eps, rel_tol=1e-12, abs_tol=_TOL)
    ok = ok and math.isclose(float(entry.get("delta_charge", 0.0)), delta, rel_tol=1e-12)
    if not ok or entry.get("guarantee", statement.scope) != statement.scope:
        raise ValueError(
            f"ledger entry charges ({entry['charge']}, {entry.get('delta_charge', 0.0)}) with "
            f"guarantee {entry.get('guarantee')!r}, but its statement charges {(eps, delta)} for "
            f"m = {entry['m']} with scope {statement.scope!r}."
        )


@dataclass(frozen=True)
class Ledger:
    """The ledger file at ``path`` (locked through ``path + '.lock'``)."""

    path: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "path", Path(self.path))

    @contextmanager
    def locked(self, timeout: float = 600.0) -> Iterator[None]:
        """Hold the ledger's exclusive lock."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".lock", timeout=timeout):
            yield

    def read(self) -> dict[str, Any] | None:
        """The ledger's content, or None if there is none yet."""
        if not self.path.exists():
            return None
        try:
            content = json.loads(self.path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise BudgetError(f"ledger {str(self.path)!r} is not valid JSON ({exc}).") from None
        if not isinstance(content, dict) or content.get("format") not in READABLE:
            raise BudgetError(
                f"ledger {str(self.path)!r} is not a pseudopost ledger (format {FORMAT!r})."
            )
        return content

    @staticmethod
    def spent(content: dict[str, Any] | None) -> float:
        """Epsilon spent: the sum of every charge (the local total, which the budget caps)."""
        return 0.0 if content is None else float(sum(e["charge"] for e in content["entries"]))

    @staticmethod
    def spent_delta(content: dict[str, Any] | None) -> float:
        """Delta spent: the sum of the delta charges (basic composition); 0 for old entries."""
        if content is None:
            return 0.0
        return float(sum(e.get("delta_charge", 0.0) for e in content["entries"]))

    @staticmethod
    def spent_by_guarantee(content: dict[str, Any] | None) -> dict[str, float]:
        """Epsilon charged per scope of guarantee, each release counted once ("global",
        "global given the weights", "local", "not recorded")."""
        out: dict[str, float] = {}
        for e in [] if content is None else content["entries"]:
            kind = _scope(e)
            out[kind] = out.get(kind, 0.0) + float(e["charge"])
        return out

    @staticmethod
    def totals(content: dict[str, Any] | None) -> dict[str, Total]:
        """The nested running totals, one per scope (module docstring): the releases whose
        guarantee holds at that scope. The global total never holds a local epsilon."""
        entries = [] if content is None else content["entries"]
        out = {}
        for scope in SCOPES:
            held = [e for e in entries if _holds_at(_scope(e), scope)]
            relations = {str(e["neighbouring"]) for e in held if e.get("neighbouring")}
            out[scope] = Total(
                scope=scope,
                epsilon=float(sum(e["charge"] for e in held)),
                delta=float(sum(e.get("delta_charge", 0.0) for e in held)),
                releases=len(held),
                neighbouring=tuple(sorted(relations)),
            )
        return out

    def _check_delta(self, content, total_delta: float | None, delta_charge: float) -> None:
        fixed = None if content is None else content.get("total_delta")
        if fixed is not None and total_delta is not None:
            if abs(float(fixed) - total_delta) > _DELTA_RTOL * float(fixed):
                raise BudgetError(
                    f"spec key 'budget.total_delta': expected the ledger's total {fixed}, got "
                    f"{total_delta}. Fix: a dataset's total budget is fixed by its ledger; set "
                    "total_delta to the ledger's value."
                )
        total = fixed if fixed is not None else total_delta
        if delta_charge <= 0:
            return
        if total is None:
            raise BudgetError(
                f"budget refused: this release spends delta {delta_charge:.6g} but neither the "
                f"spec nor ledger {str(self.path)!r} sets a total delta. Fix: add total_delta "
                "under [budget]."
            )
        remaining = float(total) - self.spent_delta(content)
        if delta_charge > remaining + _DELTA_RTOL * float(total):
            raise BudgetError(
                f"budget refused: this release spends delta {delta_charge:.6g} but only "
                f"{max(remaining, 0.0):.3g} of the total delta {float(total):.6g} remains in ledger "
                f"{str(self.path)!r}. Fix: lower mechanism.delta or stop releasing."
            )

    def _check(self, content, dataset_sha256: str, total: float, charges, total_delta) -> None:
        """The budget check (module docstring): the local total, every charge, with the
        ``charges`` (epsilon, delta) added stays within ``total`` (and ``total_delta``)."""
        charge, delta_charge = charges
        if content is not None:
            if content["dataset_sha256"] != dataset_sha256:
                raise BudgetError(
                    f"ledger {str(self.path)!r} belongs to a dataset with SHA-256 "
                    f"{content['dataset_sha256'][:12]}..., not this data file "
                    f"({dataset_sha256[:12]}...). Fix: use the ledger of this file "
                    "('budget.ledger')."
                )
            if abs(float(content["total_epsilon"]) - total) > _TOL:
                raise BudgetError(
                    f"spec key 'budget.total_epsilon': expected the ledger's total "
                    f"{content['total_epsilon']}, got {total}. Fix: a dataset's total budget "
                    "is fixed by its ledger; set total_epsilon to the ledger's value."
                )
        remaining = total - self.spent(content)
        if charge > remaining + _TOL:
            raise BudgetError(
                f"budget refused: this release may spend up to epsilon {charge:.6g} but only "
                f"{remaining:.6g} of the total {total:.6g} remains in ledger {str(self.path)!r}. "
                "Fix: release fewer datasets, lower budget.max_epsilon (mechanism.epsilon for "
                "a per-release budget), or stop releasing."
            )
        self._check_delta(content, total_delta, delta_charge)

    def precheck(
        self,
        dataset_sha256: str,
        total: float,
        cap: float,
        *,
        total_delta: float | None = None,
        delta_cap: float = 0.0,
    ) -> None:
        """Refuse now if a release capped at ``cap`` (and ``delta_cap``) could overspend.

        Reads without the lock (the ledger is only ever replaced whole, so a read sees a
        complete version) and creates no file; :meth:`commit` re-checks under the lock."""
        self._check(self.read(), dataset_sha256, total, (cap, delta_cap), total_delta)

    def commit(
        self,
        dataset_sha256: str,
        total: float,
        entry: dict[str, Any],
        *,
        total_delta: float | None = None,
        precondition: Callable[[], None] | None = None,
        then: Callable[[], None] | None = None,
    ) -> dict[str, Any]:
        """Under the lock: re-check the budget, call ``precondition()`` (which may raise),
        append ``entry`` (needs ``charge``; ``delta_charge`` defaults to 0; a ``statement``,
        when given, must charge exactly that), write the ledger atomically, then call
        ``then()`` (e.g. move the outputs into place). ``total_delta`` is recorded the first
        time one is given and fixed from then on."""
        _check_entry(entry)
        with self.locked():
            content = self.read()
            delta_charge = float(entry.get("delta_charge", 0.0))
            charges = (float(entry["charge"]), delta_charge)
            self._check(content, dataset_sha256, total, charges, total_delta)
            if precondition is not None:
                precondition()
            if content is None:
                content = {
                    "format": FORMAT,
                    "dataset_sha256": dataset_sha256,
                    "total_epsilon": total,
                    "entries": [],
                }
            content["format"] = FORMAT
            if content.get("total_delta") is None and total_delta is not None:
                content["total_delta"] = total_delta
            entry = {"delta_charge": delta_charge, **entry}
            entry = {"time": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"), **entry}
            content["entries"].append(entry)
            write_json(content, self.path)
            if then is not None:
                then()
        return content

    def summary(self) -> str:
        """A plain-text table of the releases, the budget spent and the running totals."""
        content = self.read()
        if content is None:
            return f"no ledger at {self.path}"
        total = float(content["total_epsilon"])
        spent = self.spent(content)
        total_delta = content.get("total_delta")
        spent_delta = self.spent_delta(content)
        delta_line = (
            f"total delta {float(total_delta):.6g}; spent {spent_delta:.6g}; remaining "
            f"{float(total_delta) - spent_delta:.6g}"
            if total_delta is not None
            else f"total delta not set; spent {spent_delta:.6g}"
        )
        kinds = self.spent_by_guarantee(content)
        kinds_line = ", ".join(f"{k} {v:.6g}" for k, v in sorted(kinds.items())) or "none"
        lines = [
            f"ledger {self.path}",
            f"dataset SHA-256 {content['dataset_sha256']}",
            f"total epsilon {total:.6g}; spent {spent:.6g}; remaining {total - spent:.6g}",
            delta_line,
            f"epsilon spent by guarantee: {kinds_line} (basic composition of epsilon and delta)",
            "running totals (a global guarantee also holds given the weights and locally; a "
            "local epsilon never enters a global total; the budget caps the local total):",
        ]
        for t in self.totals(content).values():
            relations = "; ".join(t.neighbouring) or "-"
            mixed = "" if t.one_relation else " [mixes neighbouring relations: bookkeeping]"
            lines.append(
                f"  {t.scope:<26}epsilon {t.epsilon:<10.6g} delta {t.delta:<10.6g} "
                f"{t.releases} release(s); neighbours: {relations}{mixed}"
            )
        lines.append(
            f"{'time':<26}{'m':>4}{'epsilon':>12}{'charge':>12}{'delta':>12}  "
            f"{'guarantee':<26}{'mechanism':<18}out"
        )
        for e in content["entries"]:
            lines.append(
                f"{e['time']:<26}{e['m']:>4}{e['epsilon']:>12.6g}{e['charge']:>12.6g}"
                f"{e.get('delta_charge', 0.0):>12.6g}  {_scope(e):<26}"
                f"{e.get('mechanism', '?'):<18}{e['out']}"
            )
        return "\n".join(lines)
