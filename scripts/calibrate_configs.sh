#!/usr/bin/env bash
# Regenerates the shipped cost-model calibrations: configs/calibrations/ipu-mk2.json (the
# exchange family), configs/calibrations/mesh-10x12.json (the mesh family) and
# configs/calibrations/vipu-2.json (two chips: the multichip family), each fitted on the shipped
# config and variants of it with one more variant held out (scripts/calibrate_family.py).
# An architect with a new config runs `tessera calibrate --config NEW.json --out F` directly.
#   scripts/calibrate_configs.sh [exchange|mesh|multichip ...]
set -euo pipefail
cd "$(dirname "$0")/.."
TESSERA=${TESSERA:-build/cli/tessera}
[ -x "$TESSERA" ] || scripts/build.sh
families=("$@")
[ ${#families[@]} -gt 0 ] || families=(exchange mesh multichip)
for f in "${families[@]}"; do
  echo "== $f"
  /usr/bin/python3 scripts/calibrate_family.py "$f" --tessera "$TESSERA" --work-dir "build/cost-family/$f"
done
