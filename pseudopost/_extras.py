"""Optional dependencies: import one, or say which extra installs it.

The core install is what the pseudo posterior needs (PyMC, ArviZ, nutpie, NumPy, SciPy,
pandas, xarray, numba, scikit-learn); the rest are extras (``pyproject.toml``):

==========  =========================================  ======================================
extra       packages                                   for
==========  =========================================  ======================================
prism       mbi, jax, jaxlib                           PRISM's graphical-model synthesis
opendp      opendp                                     OpenDP's samplers (``backend="opendp"``)
formats     pyreadstat                                 SPSS ``.sav`` and Stata ``.dta`` files
evaluate    statsmodels                                regression fits and CI overlap
dask        dask, distributed, pyarrow                 data that outgrow one machine
==========  =========================================  ======================================
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["EXTRAS", "require"]

#: module -> the extra that installs it
EXTRAS = {
    "mbi": "prism",
    "jax": "prism",
    "opendp": "opendp",
    "pyreadstat": "formats",
    "statsmodels": "evaluate",
    "dask": "dask",
    "distributed": "dask",
}


def require(module: str, what: str) -> ModuleType:
    """``importlib.import_module(module)``, or an :class:`ImportError` naming the extra to
    install and what needs it (``what``)."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        extra = EXTRAS.get(module.split(".")[0])
        hint = f"pip install 'pseudopost[{extra}]'" if extra else f"pip install {module}"
        raise ImportError(
            f"{what} needs the optional dependency {module.split('.')[0]!r}, which is not "
            f"installed: {hint}."
        ) from err
