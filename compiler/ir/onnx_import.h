#pragma once
// ONNX import: reads an ONNX model (Debian's libonnx protobuf classes) into a Workload of tensor
// expressions. See docs/onnx.md for the supported operators and attributes.
//
//   - Graph inputs that are not initializers become Input tensors; they need static shapes.
//   - Initializers (and Constant nodes) that an operator reads as a tensor become Weight tensors
//     with the initializer's shape; their values are ignored (timing is simulated, data is
//     generated). Constants read as a Reshape target shape, a Squeeze/Unsqueeze axes list or a
//     scalar operand (one element: `X[..] * 0.125`) are not tensors and add no parameters.
//   - Floating-point ONNX tensors (float, float16, bfloat16, double) map to Dtype::Fp16, the chip's
//     compute type; tensors of other element types are rejected when an operator reads them.
//   - Layout-only operators (Reshape, Transpose, Flatten, Squeeze, Unsqueeze, Identity, Dropout)
//     emit no operator: their consumers read the underlying tensor with rewritten indices
//     (`q[a0,a2,8*a1+r0]` reads a head-split, transposed view of q[1,S,32]).
//   - Tensor and operator names are the ONNX names with characters the expression parser does
//     not accept replaced by '_' (and made unique); unnamed nodes are called `<OpType>_<index>`.
//   - Every error is a tessera::Error starting with the file path, and names the node or tensor.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "compiler/ir/graph.h"

namespace tessera::ir {

struct ImportOptions {
  // Values of symbolic input dimensions, by name (`--dim batch_size=8`).
  std::map<std::string, std::int64_t> dims;
  // Symbolic dimensions not in `dims` named like a batch (batch, batch_size, N, B) or a sequence
  // length (seq, seq_len, sequence, sequence_length, T) take these values when set (--batch, --seq).
  std::int64_t batch = 0, seq = 0;
  // Keep the values of initializers and folded constants in Tensor::values (functional mode:
  // the simulator then computes with the model's own weights).
  bool keep_values = false;
};

// What an ONNX file holds, read without converting it (tessera inspect): node counts per op
// type, the opset, and the graph inputs with their dimensions (symbolic ones by name).
struct OnnxSummary {
  std::int64_t opset = 0, nodes = 0, initializers = 0;
  std::map<std::string, std::int64_t> op_counts;
  std::vector<std::pair<std::string, std::vector<std::string>>> inputs;
};
OnnxSummary summarize_onnx(const std::string& path);

// Reads and converts the model; the result is finalized. The workload is named after the file
// (its name without directory and extension). When nodes cannot be imported, the error lists
// every one of them (not only the first).
Workload import_onnx(const std::string& path, const ImportOptions& options = {});

}  // namespace tessera::ir
