#!/usr/bin/env bash
# The environment of benchmarks/frontier.py's outside DP synthesizers (issue 30 item 3):
# .bench-dp-venv, a Python 3.11 venv (gitignored) beside the package's .venv, with
# smartnoise-synth 1.0.8 (AIM and MST on Private-PGM). smartnoise pulls torch; torch 2.13.0 is
# installed first (a CPU wheel). benchmarks/_dp_bench_venv.py runs there on CSV files and
# imports neither pseudopost nor the package's mbi 2.
# Run from the repository root:  bash benchmarks/setup_dp_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${BENCH_DP_VENV:-.bench-dp-venv}

if [ ! -x "$VENV/bin/python" ]; then
  if command -v pyenv >/dev/null 2>&1 && pyenv versions --bare | grep -qx "3.11.7"; then
    PYENV_VERSION=3.11.7 python3 -m venv "$VENV"
  elif command -v python3.11 >/dev/null 2>&1; then
    python3.11 -m venv "$VENV"
  else
    python3 -m venv "$VENV"
  fi
fi
"$VENV/bin/pip" install --upgrade pip
"$VENV/bin/pip" install "torch==2.13.0"
"$VENV/bin/pip" install "smartnoise-synth==1.0.8"
"$VENV/bin/python" -c "import snsynth; from snsynth import Synthesizer; print('dp bench venv ready')"
