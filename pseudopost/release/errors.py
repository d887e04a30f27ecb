"""The errors of the release command (the budget's :class:`~pseudopost.release.ledger.BudgetError`
sits with the ledger). ``pseudopost`` exits 2 on a :class:`SpecError` and 4 on a
:class:`ReleaseError`; either way nothing is written and the ledger is unchanged."""

from __future__ import annotations

__all__ = ["ReleaseError", "SpecError"]


class SpecError(ValueError):
    """A spec or its data is invalid; the message names the key, the value and the fix."""


class ReleaseError(RuntimeError):
    """The release cannot be published after the fit (e.g. non-finite synthetic values);
    nothing was written and the ledger is unchanged."""
