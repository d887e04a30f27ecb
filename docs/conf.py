"""Sphinx configuration of the pseudopost documentation (``bash scripts/docs.sh`` builds it)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))

import pseudopost  # noqa: E402

project = "pseudopost"
author = "pseudopost contributors"
copyright = "pseudopost contributors, MIT licence"
release = version = pseudopost.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_nb",
    "api_pages",  # docs/_ext: the API pages from __all__, cross-references to re-exports
    "spec_reference",  # docs/_ext: the TOML spec tables from the release adapters
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**.ipynb_checkpoints", "jupyter_execute"]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
smartquotes_action = "qe"  # quotes and ellipses only: "--out" stays two hyphens
nitpicky = True  # every cross-reference must resolve (scripts/docs.sh runs with -n -W)

# -- API reference ------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"  # the numpydoc sections state the types; signatures stay short
autodoc_member_order = "bysource"
autodoc_default_options = {"exclude-members": "__init__, __new__"}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# No intersphinx (the build runs offline): the few names of other libraries that appear are
# listed here, so they stay plain text; a new one fails the build until it is added.
_EXTERNAL = [
    # autodoc's "alias of ..." lines: pseudopost.release.schema.Kind and the
    # ``distribution`` attribute of NormalRegression and LogNormalRegression
    ("py:class", "collections.abc.Callable"),
    ("py:class", "pymc.distributions.continuous.Normal"),
    ("py:class", "pymc.distributions.continuous.LogNormal"),
    ("py:func", "warnings.warn"),  # pseudopost/fitting/sampler.py, FitDiagnostics.warn
]
nitpick_ignore_regex = [
    # pseudopost/synthesis.py (being edited elsewhere; to fix there): roles broken over two
    # lines; laplace_draws also unbroken in pseudopost/mechanisms/pseudo_posterior/core.py
    ("py:mod", r"pseudopost\.models\.parts\.\s+cumulative"),
    ("py:func", r"pseudopost\.fitting\.parts\.\s*laplace_draws"),
]
# References in files being edited elsewhere (to fix there, formatting only: each names an
# internal module or object that is not in the API reference, or is written relative to a
# context Sphinx does not know). Every other docstring's references resolve.
nitpick_ignore = [
    *_EXTERNAL,
    # pseudopost/fitting/__init__.py, pseudopost/fitting/sampler.py
    ("py:mod", "cache"),
    ("py:mod", "sufficient"),
    ("py:attr", "model"),
    ("py:meth", "_draw"),
    ("py:meth", "sample"),
    # pseudopost/mechanisms/pseudo_posterior/__init__.py, core.py, result.py, dask/__init__.py
    ("py:mod", "core"),
    ("py:mod", "result"),
    ("py:mod", "settings"),
    ("py:mod", "backend"),
    ("py:mod", "passes"),
    ("py:mod", "records"),
    ("py:class", "ResultBase"),
    ("py:class", "pseudopost.privacy.kernels.parts.PartAccountant"),
    ("py:func", "pseudopost.mechanisms.pseudo_posterior.dask.backend.fit_dask"),
    ("py:mod", "pseudopost.fitting.cache"),
    ("py:mod", "pseudopost.fitting.columns"),
    ("py:mod", "pseudopost.fitting.sufficient"),
    ("py:mod", "pseudopost.privacy.calibration"),
    # pseudopost/models/file/__init__.py, declarations.py, model.py, plan.py
    ("py:mod", "choice"),
    ("py:mod", "constraints"),
    ("py:mod", "declarations"),
    ("py:mod", "design"),
    ("py:mod", "encoding"),
    ("py:mod", "model"),
    ("py:mod", "plan"),
    ("py:attr", "plan"),
    ("py:class", "pseudopost.models.file.bins.Bins"),
    ("py:class", "pseudopost.models.file.grid.Grid"),
    ("py:mod", "pseudopost.models.parts.cumulative"),
    ("py:func", "many_level_columns"),
    ("py:func", "trimmed_inputs"),
    # pseudopost/synthesis.py (and pseudo_posterior/core.py, models/file/model.py: level_floor)
    ("py:func", "pseudopost.risk.weights.level_floor"),
    ("py:func", "pseudopost.risk.weights.level_rake"),
    ("py:func", "pseudopost.risk.weights.part_rake"),
    ("py:meth", "pseudopost.privacy.kernels.parts.PartAccountant.with_factors"),
    # pseudopost/models/parts/base.py (inherited by every part): the private Numba kernels
    ("py:mod", "pseudopost.models.parts._fused"),
    ("py:func", "pseudopost.models.parts._fused.linear_rows"),
    ("py:data", "CHAINS"),
    ("py:data", "DRAWS"),
    ("py:data", "TUNE"),
    ("py:func", "pseudopost.models.file.screen.screen_frame"),
    ("py:mod", "pseudopost.models.file.bins"),
    ("py:mod", "pseudopost.models.file.choice"),
    ("py:mod", "pseudopost.models.file.design"),
    ("py:mod", "pseudopost.models.file.grid"),
    ("py:mod", "pseudopost.models.file.heaps"),
]

# -- MyST and notebooks ---------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 4
nb_execution_mode = "off"  # the notebooks are rendered from their stored outputs
nb_merge_streams = True

# -- HTML ----------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = f"pseudopost {version}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_static_path: list[str] = []
html_last_updated_fmt = None
html_copy_source = False


def _copy_notebooks() -> None:
    """Sphinx reads only its source folder: mirror ``notebooks/*.ipynb`` into
    ``docs/notebooks/`` (ignored by git), rewriting only changed files."""
    target = DOCS / "notebooks"
    target.mkdir(exist_ok=True)
    sources = {p.name: p for p in (ROOT / "notebooks").glob("*.ipynb")}
    for stale in target.glob("*.ipynb"):
        if stale.name not in sources:
            stale.unlink()
    for name, source in sources.items():
        copy = target / name
        if not copy.exists() or copy.read_bytes() != source.read_bytes():
            shutil.copyfile(source, copy)


_copy_notebooks()
