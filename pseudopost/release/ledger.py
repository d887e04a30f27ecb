"""The budget ledger: a JSON file beside the data recording every release against its budget.

One ledger belongs to one data file (identified by its SHA-256) and holds the dataset's total
epsilon (and, once a release that spends delta has run, its total delta) and one entry per
committed release. Composition is basic (sequential) composition: the epsilon charges add up
(``charge = m * epsilon`` for the pseudo posterior, whose m datasets come from m draws;
``charge = epsilon`` for a lighter release, whose m datasets are samples of one release) and so
do the delta charges (``delta_charge``; 0 for the pure-epsilon pseudo posterior).

Each entry says which guarantee it carries (``guarantee``): ``"local"`` for the pseudo
posterior's local epsilon_x (asymptotic, this database only), ``"global"`` for worst-case
(epsilon, delta)-DP (REPS, PRISM, the entropy release, the censored pseudo posterior), with its
neighbouring relation. Adding local and global epsilons is conservative bookkeeping against one
total; the summary shows both sums apart. Ledgers written before delta was recorded (format
``pseudopost-ledger/1``) are read as they are (no delta spent, guarantee not recorded) and
upgraded to format 2 by the next commit.

Rules:

* A release whose cap (``m * max_epsilon``) exceeds what remains is refused before any work
  (:meth:`Ledger.precheck`).
* The charge is committed under an exclusive file lock (:mod:`filelock`), re-checked against
  the ledger as it is then, and the ledger is rewritten atomically (temp file, fsync, rename);
  so two processes never overspend, and a crash leaves either the old or the new ledger.
* The release's outputs are moved into place only after its charge is committed, inside the same
  lock: a crash between the two over-counts (safe), never under-counts.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from pseudopost._io import write_json

__all__ = ["FORMAT", "BudgetError", "Ledger"]

FORMAT = "pseudopost-ledger/2"
#: formats this version reads (1: before delta and the guarantee were recorded)
READABLE = ("pseudopost-ledger/1", FORMAT)
_TOL = 1e-12
_DELTA_RTOL = 1e-9


class BudgetError(RuntimeError):
    """The release would overspend the dataset's budget, or the ledger disagrees with the spec."""


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
        """Epsilon spent: the sum of the charges (basic composition)."""
        return 0.0 if content is None else float(sum(e["charge"] for e in content["entries"]))

    @staticmethod
    def spent_delta(content: dict[str, Any] | None) -> float:
        """Delta spent: the sum of the delta charges (basic composition); 0 for old entries."""
        if content is None:
            return 0.0
        return float(sum(e.get("delta_charge", 0.0) for e in content["entries"]))

    @staticmethod
    def spent_by_guarantee(content: dict[str, Any] | None) -> dict[str, float]:
        """Epsilon spent per guarantee kind ("local", "global", "not recorded")."""
        out: dict[str, float] = {}
        for e in [] if content is None else content["entries"]:
            kind = e.get("guarantee", "not recorded")
            out[kind] = out.get(kind, 0.0) + float(e["charge"])
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

    def _check(
        self,
        content,
        dataset_sha256: str,
        total: float,
        charge: float,
        total_delta: float | None = None,
        delta_charge: float = 0.0,
    ) -> None:
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
                "a lighter release), or stop releasing."
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
        self._check(self.read(), dataset_sha256, total, cap, total_delta, delta_cap)

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
        append ``entry`` (needs ``charge``; ``delta_charge`` defaults to 0), write the ledger
        atomically, then call ``then()`` (e.g. move the outputs into place). ``total_delta``
        is recorded the first time one is given and fixed from then on."""
        with self.locked():
            content = self.read()
            delta_charge = float(entry.get("delta_charge", 0.0))
            self._check(
                content, dataset_sha256, total, float(entry["charge"]), total_delta, delta_charge
            )
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
        """A plain-text table of the releases and the budget spent."""
        content = self.read()
        if content is None:
            return f"no ledger at {self.path}"
        total = float(content["total_epsilon"])
        spent = self.spent(content)
        by_kind = self.spent_by_guarantee(content)
        total_delta = content.get("total_delta")
        spent_delta = self.spent_delta(content)
        delta_line = (
            f"total delta {float(total_delta):.6g}; spent {spent_delta:.6g}; remaining "
            f"{float(total_delta) - spent_delta:.6g}"
            if total_delta is not None
            else f"total delta not set; spent {spent_delta:.6g}"
        )
        kinds = ", ".join(f"{k} {v:.6g}" for k, v in sorted(by_kind.items())) or "none"
        lines = [
            f"ledger {self.path}",
            f"dataset SHA-256 {content['dataset_sha256']}",
            f"total epsilon {total:.6g}; spent {spent:.6g}; remaining {total - spent:.6g}",
            delta_line,
            f"epsilon spent by guarantee: {kinds} (basic composition of epsilon and delta)",
            f"{'time':<26}{'m':>4}{'epsilon':>12}{'charge':>12}{'delta':>12}  "
            f"{'guarantee':<13}{'mechanism':<18}out",
        ]
        for e in content["entries"]:
            lines.append(
                f"{e['time']:<26}{e['m']:>4}{e['epsilon']:>12.6g}{e['charge']:>12.6g}"
                f"{e.get('delta_charge', 0.0):>12.6g}  {e.get('guarantee', 'not recorded'):<13}"
                f"{e.get('mechanism', '?'):<18}{e['out']}"
            )
        return "\n".join(lines)
