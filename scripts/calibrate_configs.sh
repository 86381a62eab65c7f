#!/usr/bin/env bash
# Regenerates the shipped cost-model calibrations: configs/calibrations/<config>.json for every
# config in configs/ (or those named), with the default sample count and seed. One config is one
# `tessera calibrate` command; an architect with a new config runs that command directly.
#   scripts/calibrate_configs.sh [configs/NAME.json ...]
set -euo pipefail
cd "$(dirname "$0")/.."
TESSERA=${TESSERA:-build/cli/tessera}
[ -x "$TESSERA" ] || scripts/build.sh
mkdir -p configs/calibrations
configs=("$@")
[ ${#configs[@]} -gt 0 ] || configs=(configs/*.json)
for cfg in "${configs[@]}"; do
  name=$(basename "$cfg" .json)
  echo "== $name"
  time "$TESSERA" calibrate --config "$cfg" --out "configs/calibrations/$name.json" \
    --csv "build/calibration-$name.csv"
done
