"""One adapter per mechanism for the release command, and the registry that names them.

:data:`ADAPTERS` maps the value of ``[mechanism] name`` to its
:class:`~pseudopost.release.adapters.base.MechanismAdapter`. The command, the report and the
ledger reach a mechanism only through it; adding a mechanism is one module with an adapter
subclass plus its line here.
"""

from __future__ import annotations

from pseudopost.release.adapters.base import AccountResult, MechanismAdapter, Produced
from pseudopost.release.adapters.entropy import EntropyAdapter
from pseudopost.release.adapters.prism import PRISMAdapter
from pseudopost.release.adapters.pseudo_posterior import PseudoPosteriorAdapter
from pseudopost.release.adapters.reps import REPSAdapter
from pseudopost.release.adapters.whole_file import WholeFileAdapter

__all__ = ["ADAPTERS", "AccountResult", "MechanismAdapter", "Produced", "adapter_for"]

#: ``[mechanism] name`` -> its adapter, in the order the error messages list them
ADAPTERS: dict[str, MechanismAdapter] = {
    a.name: a
    for a in (
        PseudoPosteriorAdapter(),
        REPSAdapter(),
        PRISMAdapter(),
        EntropyAdapter(),
        WholeFileAdapter(),
    )
}


def adapter_for(name: str) -> MechanismAdapter:
    """The adapter registered under ``name`` (a KeyError names the registered ones)."""
    try:
        return ADAPTERS[name]
    except KeyError:
        raise KeyError(f"no release adapter named {name!r}; registered: {list(ADAPTERS)}") from None
