#!/usr/bin/env bash
# The main job, end to end: installs dependencies, builds, exports torchvision's ResNet-18 to ONNX
# (random weights, offline, python3-torch), then compiles and simulates it on the IPU-like chip
# with both planners and prints the comparison. Extra arguments go to both `tessera run`s.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
model=build/models/resnet18-op17.onnx
[ -f "$model" ] || /usr/bin/python3 scripts/export_torch_models.py build/models --models resnet18 --opsets 17 >/dev/null
for planner in t10 vgm; do
  ./build/cli/tessera run --config configs/ipu-mk2.json --workload "$model" --planner "$planner" --quiet \
    --out "build/results-$planner.json" "$@"
done
/usr/bin/python3 - <<'PY'
import json
t, v = (json.load(open(f"build/results-{p}.json")) for p in ("t10", "vgm"))
print(f"torchvision ResNet-18 (ONNX) on ipu-mk2: T10 {t['total_seconds'] * 1e3:.3f} ms, VGM "
      f"{v['total_seconds'] * 1e3:.3f} ms: compute-shift is {v['total_cycles'] / t['total_cycles']:.2f}x faster "
      f"(exchange {100 * t['exchange_share']:.0f}% vs {100 * v['exchange_share']:.0f}% of operator time; "
      f"{100 * t['roofline']['fraction']:.1f}% vs {100 * v['roofline']['fraction']:.1f}% of the roofline); "
      f"results in build/results-t10.json and build/results-vgm.json")
PY
