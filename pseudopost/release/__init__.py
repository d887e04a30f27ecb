"""Agency releases: a TOML spec, a budget ledger, whole-or-nothing outputs and a report.

Mechanisms: the pseudo posterior (local epsilon, a saved fit) and the lighter REPS, PRISM and
entropy-histogram releases (global (epsilon, delta), fully synthetic rows). The
``pseudopost synthesize / validate / account / ledger`` commands are thin wrappers over
:func:`run_release`, :func:`load_spec` with :func:`validate`, :func:`account_release` and :class:`Ledger`.
"""

from .disclosure import (
    attribute_risk,
    identification_risk,
    match_risk,
    synthetic_attribute_risk,
)
from .ledger import BudgetError, Ledger
from .run import AccountResult, ReleaseError, ReleaseOutcome, account_release, run_release
from .spec import MECHANISMS, ReleaseSpec, SpecError, load_spec, resolve, validate

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
    "attribute_risk",
    "identification_risk",
    "load_spec",
    "match_risk",
    "resolve",
    "run_release",
    "synthetic_attribute_risk",
    "validate",
]
