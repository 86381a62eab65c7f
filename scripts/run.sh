#!/usr/bin/env bash
# Installs dependencies, builds, and runs the shipped example program on the IPU-like chip.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
./build/cli/tessera simulate --config configs/ipu-mk2.json \
  --program workloads/programs/ring-shift-ipu.json --out build/results.json "$@"
