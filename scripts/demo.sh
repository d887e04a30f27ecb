#!/usr/bin/env bash
# Set everything up, then run a real synthesis on the embedded default dataset.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/pseudopost demo "$@"
