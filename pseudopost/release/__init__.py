"""Agency releases: a TOML spec, a budget ledger, whole-or-nothing outputs and a report.

The ``pseudopost synthesize / validate / account / ledger`` commands are thin wrappers over
:func:`run_release`, :func:`load_spec` with :func:`validate`, :func:`account_release` and :class:`Ledger`.
"""

from .disclosure import attribute_risk, identification_risk
from .ledger import BudgetError, Ledger
from .run import AccountResult, ReleaseError, ReleaseOutcome, account_release, run_release
from .spec import ReleaseSpec, SpecError, load_spec, validate

__all__ = [
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
    "run_release",
    "validate",
]
