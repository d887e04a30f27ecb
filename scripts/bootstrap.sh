#!/usr/bin/env bash
# Create (or reuse) .venv with a Python >= 3.12 and pseudopost installed in it.
# Finds the interpreter by itself: $PYTHON, python3.13/python3.12/python3 on PATH, or pyenv.
set -euo pipefail
cd "$(dirname "$0")/.."

ok() { "$1" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; }

find_python() {
  local c
  for c in "${PYTHON:-}" python3.12 python3.13 python3.14 python3 python; do
    [ -n "$c" ] && command -v "$c" >/dev/null 2>&1 && ok "$c" && { command -v "$c"; return; }
  done
  if command -v pyenv >/dev/null 2>&1; then
    local root v
    root=$(pyenv root)
    for v in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.(1[2-9]|[2-9][0-9])(\.[0-9]+)?$' | sort -V); do
      c="$root/versions/$v/bin/python"
      [ -x "$c" ] && ok "$c" && { echo "$c"; return; }
    done
  fi
  for c in /usr/local/bin/python3.1[2-9] /usr/bin/python3.1[2-9]; do
    [ -x "$c" ] && ok "$c" && { echo "$c"; return; }
  done
  return 1
}

stamp=".venv/.pseudopost-installed"
want=$(cat pyproject.toml | sha256sum | cut -d' ' -f1)
if [ -x .venv/bin/python ] && ok .venv/bin/python && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
if ! py=$(find_python); then
  echo "pseudopost needs Python >= 3.12 (PyMC 6). None found on PATH or in pyenv;" >&2
  echo "install one (e.g. 'pyenv install 3.12') or set PYTHON=/path/to/python3.12." >&2
  exit 1
fi
echo "Setting up .venv with $py ($("$py" --version 2>&1)); the first time takes a few minutes..."
[ -x .venv/bin/python ] && ok .venv/bin/python || { rm -rf .venv; "$py" -m venv .venv; }
log=.venv/install.log
if ! { .venv/bin/python -m pip install --disable-pip-version-check --upgrade pip &&
       .venv/bin/python -m pip install --disable-pip-version-check -e ".[test,dask]"; } >"$log" 2>&1; then
  tail -n 40 "$log" >&2
  echo "Installing pseudopost failed; the full log is $log." >&2
  exit 1
fi
echo "$want" > "$stamp"
