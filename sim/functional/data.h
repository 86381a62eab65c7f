#pragma once
// Functional mode: the simulator carries real values. Each buffer on a core holds a box of one
// global tensor (its "view"); a dimension may be cyclic, holding a window of a rotating partition
// (local index = (global - origin) mod extent). Sends carry a box of values, receives write it
// where their buffer's view puts it, and compute items evaluate their tensor expression over the
// axis ranges of the step. Off by default: timing never depends on it.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/ir/expr.h"

namespace tessera::sim {

struct Box {
  std::vector<std::int64_t> origin, extent;  // global coordinates
  std::int64_t elements() const;
};

struct View {
  std::string tensor;
  std::vector<std::int64_t> origin, extent;
  std::vector<bool> cyclic;
  std::int64_t elements() const;
};

// Values a message carries: a box of a tensor, in row-major order.
struct Payload {
  std::string tensor;
  Box box;
  std::vector<float> values;
};

// Deterministic initial value of element `i` of tensor `name` (model inputs and weights): the
// simulator and the compiler's reference evaluation draw the same numbers.
float initial_value(const std::string& name, std::int64_t i);

struct DataTensor {
  std::string name;
  std::vector<std::int64_t> shape;
  std::vector<float> values;
  bool written = false;  // stored to by the program (reported as an output)
};

// Global tensors (off-chip memory, and the values weights are preloaded from).
class DataStore {
 public:
  void add(const std::string& name, std::vector<std::int64_t> shape);
  DataTensor& at(const std::string& name);
  const std::map<std::string, DataTensor>& tensors() const { return tensors_; }
 private:
  std::map<std::string, DataTensor> tensors_;
};

class Buffer {
 public:
  Buffer() = default;
  Buffer(View view, std::vector<std::int64_t> shape);
  const View& view() const { return view_; }
  // Local offset of a global coordinate, or -1 when the view does not hold it.
  std::int64_t locate(const std::int64_t* g) const;
  float get(const std::int64_t* g) const;  // throws when not held
  void set(const std::int64_t* g, float v);
  // Copy a box between this buffer and a row-major value array (elements outside the global
  // shape are skipped: they are padding).
  std::vector<float> read_box(const Box& b) const;
  void write_box(const Box& b, const std::vector<float>& values);
  // Copy between this buffer's region and a global tensor.
  void load_from(const DataTensor& t);
  void store_to(DataTensor& t) const;
  const std::vector<std::int64_t>& shape() const { return shape_; }

 private:
  // Visits the elements of the view's region inside the tensor: (global coordinate, row-major
  // offset in the tensor).
  template <class F>
  void for_held(F&& fn) const;

  View view_;
  std::vector<std::int64_t> shape_;  // of the global tensor
  std::vector<std::int64_t> stride_;
  std::vector<float> data_;
};

// A tensor expression bound to axis ranges: evaluates out[...] (op)= f(inputs) over the box
// ranges[a] = [lo, hi) of every axis in expr.all_axes() order. Elements outside a tensor's global
// shape are absent (zero in sums, skipped in max and mean), as in the expression language.
void evaluate(const ir::Expr& expr, const std::vector<std::pair<std::int64_t, std::int64_t>>& ranges,
              const std::vector<const Buffer*>& inputs, Buffer& output);

}  // namespace tessera::sim
