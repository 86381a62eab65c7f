#pragma once
// A model: named tensors with shapes, and operators (tensor expressions) in execution order.
// The dependency graph between operators is a Boost.Graph; every operator reads tensors that are
// model inputs, weights, or outputs of earlier operators (a workload is checked when it is built,
// and every error names the operator or tensor).
#include <absl/container/flat_hash_map.h>
#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/expr.h"
#include "sim/common/types.h"

namespace tessera::ir {

enum class TensorRole { Input, Weight, Activation };
const char* role_name(TensorRole r);

struct Tensor {
  std::string name;
  std::vector<std::int64_t> shape;
  Dtype dtype = Dtype::Fp16;
  TensorRole role = TensorRole::Activation;
  bool output = false;  // a model output (stored off-chip at the end)
  // Functional mode: the tensor's values, row-major (an imported model's weights, inputs given
  // with --inputs). Empty: generated from the name (sim::initial_value).
  std::vector<float> values;
  std::int64_t elements() const;
  Bytes bytes() const { return static_cast<Bytes>(elements()) * dtype_bytes(dtype); }
};

struct Operator {
  std::string name;
  Expr expr;
  std::map<std::string, std::int64_t> extent;  // every axis of the expression -> its extent
  std::int64_t flops() const;                    // 2 per multiply-add, 1 per element op
};

using OpGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;

class Workload {
 public:
  std::string name;

  // Declares a tensor; throws if the name is taken or a dimension is not positive.
  void add_tensor(const std::string& name, std::vector<std::int64_t> shape, TensorRole role,
                  Dtype dtype = Dtype::Fp16);
  // Parses `expr`, declares its output as an activation with the shape implied by the inputs
  // (or checks it, if already declared), infers axis extents, and adds the operator.
  // `output_extents` gives extents of output axes that no input fixes (rare). With `extents_rule`
  // (the ONNX importer, which gives every axis) they are authoritative instead: a plain index may
  // then read a prefix of a longer dimension (Slice) or past the end of a shorter one (Concat).
  const Operator& add_op(const std::string& name, const std::string& expr,
                         const std::map<std::string, std::int64_t>& output_extents = {},
                         bool extents_rule = false);
  void mark_output(const std::string& tensor);
  // Marks every activation that no operator reads as an output; checks there is at least one op.
  void finalize();

  const std::vector<Operator>& ops() const { return ops_; }
  const std::vector<Tensor>& tensors() const { return tensors_; }
  const Tensor& tensor(const std::string& name) const;
  bool has_tensor(const std::string& name) const { return index_.count(name) != 0; }
  Tensor& tensor_mut(const std::string& name);
  // Index of the operator producing `tensor`, or -1 for inputs and weights.
  int producer(const std::string& tensor) const;
  // Operators reading `tensor`, in order.
  std::vector<int> consumers(const std::string& tensor) const;
  const OpGraph& graph() const { return graph_; }

  std::int64_t parameter_count() const;  // elements of all weights
  Bytes weight_bytes() const;

 private:
  std::vector<Tensor> tensors_;
  // by name; looked up for every plan the scheduler prices, so hashed
  absl::flat_hash_map<std::string, std::size_t> index_;
  std::vector<Operator> ops_;
  absl::flat_hash_map<std::string, int> producer_;
  OpGraph graph_;
};

}  // namespace tessera::ir
