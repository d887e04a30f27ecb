#!/usr/bin/env bash
# Set everything up, check style, then run the default (fast) test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
.venv/bin/ruff check pseudopost tests benchmarks
exec .venv/bin/python -m pytest -m "not slow" "$@"
