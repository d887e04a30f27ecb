"""Agency releases: a TOML spec, a budget ledger, whole-or-nothing outputs and a report.

Every mechanism goes through one path: :func:`load_spec` and :func:`validate` read and check
the spec and its data, :func:`run_release` produces, writes and charges the release,
:func:`account_release` re-runs the accountant on a saved one, and :class:`Ledger` keeps the
dataset's budget. What is mechanism-specific (its spec sections, checks, fit, privacy record,
report parts and files) sits in its adapter (:data:`ADAPTERS`: the pseudo posterior, REPS,
PRISM, the entropy-calibrated histogram); what a release is charged comes from its
:class:`~pseudopost.privacy.PrivacyStatement`. The ``pseudopost synthesize / validate /
account / ledger`` commands are thin wrappers over these.
"""

import warnings

from pseudopost.release.adapters import ADAPTERS, AccountResult, MechanismAdapter
from pseudopost.release.errors import ReleaseError, SpecError
from pseudopost.release.ledger import BudgetError, Ledger
from pseudopost.release.run import ReleaseOutcome, account_release, run_release
from pseudopost.release.schema import ReleaseSpec
from pseudopost.release.spec import MECHANISMS, load_spec, resolve, validate

__all__ = [
    "ADAPTERS",
    "MECHANISMS",
    "AccountResult",
    "BudgetError",
    "Ledger",
    "MechanismAdapter",
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
