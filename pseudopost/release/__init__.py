"""Agency releases: a TOML spec, a budget ledger, whole-or-nothing outputs and a report.

Mechanisms: the pseudo posterior (local epsilon, a saved fit) and the lighter REPS, PRISM and
entropy-histogram releases (global (epsilon, delta), fully synthetic rows). The
``pseudopost synthesize / validate / account / ledger`` commands are thin wrappers over
:func:`run_release`, :func:`load_spec` with :func:`validate`, :func:`account_release` and :class:`Ledger`.
"""

import warnings

from pseudopost.release.ledger import BudgetError, Ledger
from pseudopost.release.run import (
    AccountResult,
    ReleaseError,
    ReleaseOutcome,
    account_release,
    run_release,
)
from pseudopost.release.spec import MECHANISMS, ReleaseSpec, SpecError, load_spec, resolve, validate

__all__ = [
    "MECHANISMS",
    "AccountResult",
    "BudgetError",
    "Ledger",
    "ReleaseError",
    "ReleaseOutcome",
    "ReleaseSpec",
    "SpecError",
    "account_release",
    "load_spec",
    "resolve",
    "run_release",
    "validate",
]

_MOVED = {"attribute_risk", "identification_risk", "match_risk", "synthetic_attribute_risk"}


def __getattr__(name: str):
    if name in _MOVED:  # disclosure measures moved to pseudopost.evaluate
        warnings.warn(
            f"'pseudopost.release.{name}' moved to 'pseudopost.evaluate.{name}'; the old path is "
            "deprecated and will be removed in pseudopost 0.3.",
            DeprecationWarning,
            stacklevel=2,
        )
        from pseudopost.evaluate import disclosure

        return getattr(disclosure, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
