#!/usr/bin/env bash
# Hostile input under AddressSanitizer and UndefinedBehaviorSanitizer: the parsers, the ONNX
# importer and the mutation test (12,200 mutated files), built a second time with TESSERA_SANITIZE
# into build-sanitize/. Tests that run the SystemC kernel are left out: its user-level threads
# switch stacks in a way ASan does not follow (false stack-overflow reports), and they are the
# slow ones. That build compiles only the test files these tags live in (test/CMakeLists.txt):
# keep the two in step.
set -euo pipefail
cd "$(dirname "$0")/.."
# -O1 without debug information: the sanitizers need neither -O2 nor -g to find what they find,
# and both cost compile time (stack traces still name functions).
cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
  -DTESSERA_SANITIZE=ON >/dev/null
cmake --build build-sanitize -j"$(nproc)" --target tessera_tests
ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
  build-sanitize/test/tessera_tests "[mutation],[onnx],[expr],[workload-json],config:*,program: structural*"
