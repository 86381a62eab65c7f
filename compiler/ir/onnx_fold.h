#pragma once
// Constant folding for the ONNX importer. Exporters compute shapes, masks and index lists inside
// the graph (Shape -> Gather -> Concat -> Reshape, Range -> Equal -> Where, ...); when every input
// of such a node is known at import time, the node is evaluated here and its outputs become
// constants, so what reaches the planners is the model's data flow only. Values are kept as
// doubles (exact for the int64 shape arithmetic exporters write, up to 2^53).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace onnx {
class NodeProto;
class TensorProto;
}  // namespace onnx

namespace tessera::ir {

enum class DenseType { Float, Int, Bool };

struct Dense {
  std::vector<std::int64_t> shape;
  std::vector<double> v;  // row-major
  DenseType type = DenseType::Float;
  std::int64_t elements() const;
};

// "[1,3,224,224]": shapes in messages.
std::string shape_str(const std::vector<std::int64_t>& s);

// ONNX Reshape's target shape for an input of shape `in`: 0 copies the input's dimension (unless
// `allowzero`), one -1 takes what is left. Throws tessera::Error naming the entry that is wrong.
std::vector<std::int64_t> reshape_target(const std::vector<std::int64_t>& in, const std::vector<std::int64_t>& want,
                                         bool allowzero);

// A value kept as a double back to int64: exporters write INT64_MAX / INT64_MIN for "to the end"
// in Slice, which become +-2^63 as doubles; those saturate instead of overflowing.
std::int64_t to_int64(double x);

// The ops fold_node() evaluates (when all their inputs are known).
bool foldable_op(const std::string& op_type);
// The attributes fold_node() reads for an op at an opset; any other is not implemented there.
std::vector<std::string> fold_attributes(const std::string& op_type, std::int64_t opset);

// Evaluates `node` on known inputs (an empty optional for an absent optional input). Returns the
// outputs, or throws tessera::Error with a message that names what is wrong (without the node,
// which the caller adds). `opset` selects attribute-vs-input forms (Slice, Squeeze, Split...).
std::vector<Dense> fold_node(const onnx::NodeProto& node, const std::vector<std::optional<Dense>>& in,
                             std::int64_t opset);

// ONNX Slice bounds of one dimension of size `dim` (negative and out-of-range starts and ends
// clamped as the operator defines): first index, step and number of elements.
struct SliceBounds {
  std::int64_t start, step, len;
};
SliceBounds slice_bounds(std::int64_t dim, std::int64_t start, std::int64_t end, std::int64_t step);

// Conversions from and to ONNX tensors; nullopt when the element type is not numeric or the data
// is external or malformed.
std::optional<Dense> dense_from_tensor(const onnx::TensorProto& t);
onnx::TensorProto tensor_from_dense(const Dense& d, const std::string& name);

}  // namespace tessera::ir
