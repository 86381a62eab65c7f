#pragma once
// The JSON workload format ("tessera-workload", version 1; see docs/workload.md):
//   {"format": "tessera-workload", "version": 1, "name": "tiny-mlp",
//    "tensors": [{"name": "X", "shape": [64, 32], "role": "input", "dtype": "fp16"}, ...],
//    "ops": [{"name": "fc1", "expr": "H[m,n] += X[m,k] * W1[k,n]"}, ...],
//    "outputs": ["Y"]}
// Reading is strict: unknown keys, wrong types and inconsistent expressions are ConfigErrors
// naming the file and the field, e.g. `tiny.json: ops[1].expr: ...`.
#include <string>

#include "compiler/ir/graph.h"
#include "sim/common/json_reader.h"

namespace tessera::ir {

// Parses and finalizes a workload; `what` names the source in error messages (a file name).
// A missing "name" defaults to `what` without directories and a ".json" suffix.
Workload parse_workload_json(const Json& json, const std::string& what);
// Reads the file, then parse_workload_json(json, path).
Workload load_workload_json(const std::string& path);
// Every tensor (activations too, so shapes and dtypes are kept exactly), every operator with the
// extents its tensors do not fix, and every output. Parsing the result gives the same workload.
Json workload_to_json(const Workload& w);

}  // namespace tessera::ir
