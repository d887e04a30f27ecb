#!/usr/bin/env bash
# Build the documentation into docs/_build/html with warnings as errors, then check that every
# local link of the built pages resolves. The notebooks are rendered from their stored outputs
# (not executed). Usage: bash scripts/docs.sh [extra sphinx-build options]
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
bash scripts/bootstrap.sh
if ! .venv/bin/python -c 'import sphinx, myst_nb, numpydoc, pydata_sphinx_theme' >/dev/null 2>&1; then
  echo "Installing the docs extra (Sphinx, myst-nb, numpydoc, pydata-sphinx-theme)..."
  log=.venv/install-docs.log
  if ! .venv/bin/python -m pip install --disable-pip-version-check -e ".[docs]" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "Installing the docs extra failed; the full log is $log." >&2
    exit 1
  fi
fi
# A fresh build (-E; the API pages are regenerated from __all__): every warning is reported,
# nitpicky (-n) so every cross-reference must resolve, and any warning fails the build.
rm -rf docs/_build/html docs/api
.venv/bin/python -m sphinx -b html -E -n -W --keep-going -q docs docs/_build/html "$@"
.venv/bin/python docs/_ext/check_links.py docs/_build/html
echo "Documentation built in docs/_build/html ($(( $(date +%s) - start )) s wall time)."
