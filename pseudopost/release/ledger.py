"""The budget ledger: a JSON file beside the data recording every release against its budget.

One ledger belongs to one data file (identified by its SHA-256) and holds the dataset's total
epsilon and one entry per committed release (``charge = m * epsilon`` under basic composition).
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

from .._io import write_json

__all__ = ["FORMAT", "BudgetError", "Ledger"]

FORMAT = "pseudopost-ledger/1"
_TOL = 1e-12


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
        if not isinstance(content, dict) or content.get("format") != FORMAT:
            raise BudgetError(
                f"ledger {str(self.path)!r} is not a pseudopost ledger (format {FORMAT!r})."
            )
        return content

    @staticmethod
    def spent(content: dict[str, Any] | None) -> float:
        return 0.0 if content is None else float(sum(e["charge"] for e in content["entries"]))

    def _check(self, content, dataset_sha256: str, total: float, charge: float) -> None:
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
                "Fix: release fewer datasets, lower budget.max_epsilon, or stop releasing."
            )

    def precheck(self, dataset_sha256: str, total: float, cap: float) -> None:
        """Refuse now if a release capped at ``cap`` could overspend the budget.

        Reads without the lock (the ledger is only ever replaced whole, so a read sees a
        complete version) and creates no file; :meth:`commit` re-checks under the lock."""
        self._check(self.read(), dataset_sha256, total, cap)

    def commit(
        self,
        dataset_sha256: str,
        total: float,
        entry: dict[str, Any],
        *,
        precondition: Callable[[], None] | None = None,
        then: Callable[[], None] | None = None,
    ) -> dict[str, Any]:
        """Under the lock: re-check the budget, call ``precondition()`` (which may raise),
        append ``entry`` (needs ``charge``), write the ledger atomically, then call ``then()``
        (e.g. move the outputs into place)."""
        with self.locked():
            content = self.read()
            self._check(content, dataset_sha256, total, float(entry["charge"]))
            if precondition is not None:
                precondition()
            if content is None:
                content = {
                    "format": FORMAT,
                    "dataset_sha256": dataset_sha256,
                    "total_epsilon": total,
                    "entries": [],
                }
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
        lines = [
            f"ledger {self.path}",
            f"dataset SHA-256 {content['dataset_sha256']}",
            f"total epsilon {total:.6g}; spent {spent:.6g}; remaining {total - spent:.6g}",
            f"{'time':<26}{'m':>4}{'epsilon':>12}{'charge':>12}  out",
        ]
        for e in content["entries"]:
            lines.append(
                f"{e['time']:<26}{e['m']:>4}{e['epsilon']:>12.6g}{e['charge']:>12.6g}  {e['out']}"
            )
        return "\n".join(lines)
