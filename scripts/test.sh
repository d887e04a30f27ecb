#!/usr/bin/env bash
# Set everything up, check style, then run the default (fast) test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
# The report test renders the release page in headless Chromium (Debian package). In CI (root,
# apt available) install it; elsewhere the test skips with a message if Chromium is absent.
if [ -n "${CI:-}" ] && ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] \
   && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Chromium for the report test..."
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
    >/tmp/pseudopost-chromium.log 2>&1 || echo "Chromium install failed; the report test will skip."
fi
.venv/bin/ruff check .  # the package, tests, benchmarks, examples, scripts and notebooks
# Tests run on every core (pytest-xdist); each module stays on one worker so its fixtures
# (compiled models, fitted results) are built once.
exec .venv/bin/python -m pytest -m "not slow" -n auto --dist loadscope "$@"
