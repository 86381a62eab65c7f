#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir build --output-on-failure -j2
# Hostile input under AddressSanitizer and UndefinedBehaviorSanitizer: the parsers, the ONNX
# importer and the mutation test (12,200 mutated files), built a second time with TESSERA_SANITIZE.
# Tests that run the SystemC kernel are left out: its user-level threads switch stacks in a way
# ASan does not follow (false stack-overflow reports), and they are the slow ones. That build
# compiles only the test files these tags live in (test/CMakeLists.txt): keep the two in step.
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTESSERA_SANITIZE=ON >/dev/null
cmake --build build-sanitize -j"$(nproc)" --target tessera_tests
ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
  build-sanitize/test/tessera_tests "[mutation],[onnx],[expr],[workload-json],config:*,program: structural*"
