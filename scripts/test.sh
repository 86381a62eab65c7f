#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite; then the hostile-input tests under
# the sanitizers (scripts/sanitize.sh) when there is time for their second build.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { echo "test.sh: $1 at $((SECONDS / 60)) min $((SECONDS % 60)) s"; }
scripts/install-deps.sh
step "dependencies installed"
scripts/build.sh
step "built"
ctest --test-dir build --output-on-failure -j2
step "ctest passed"
# CI stops a run at 90 minutes. On the slowest 2-core machine seen (2026-11-27) the steps above
# took 48 min (build 34, ctest 14); the run before these savings passed 90 min inside the
# sanitizer build. A machine that is this slow skips that build, saying so.
# TESSERA_SANITIZE_BUDGET_MIN: the latest minute at which it still starts (0: never; large: always).
budget_min="${TESSERA_SANITIZE_BUDGET_MIN:-45}"
if [ "$SECONDS" -le $((budget_min * 60)) ]; then
  scripts/sanitize.sh
  step "sanitizer tests passed"
else
  echo "test.sh: SKIPPED the sanitizer tests: ${SECONDS} s have passed, the budget is ${budget_min} min" \
       "(TESSERA_SANITIZE_BUDGET_MIN); run scripts/sanitize.sh on its own"
fi
