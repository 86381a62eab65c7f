#include "compiler/ir/graph.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/common/error.h"

namespace tessera::ir {

const char* role_name(TensorRole r) {
  switch (r) {
    case TensorRole::Input: return "input";
    case TensorRole::Weight: return "weight";
    case TensorRole::Activation: return "activation";
  }
  return "?";
}

std::int64_t Tensor::elements() const {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

std::int64_t Operator::flops() const {
  std::int64_t all = 1, out = 1;
  for (const auto& [a, e] : extent) all *= e;
  for (const auto& a : expr.output_axes()) out *= extent.at(a);
  switch (expr.kind) {
    case ExprKind::Contraction: return 2 * all;
    case ExprKind::Reduction: return all;
    case ExprKind::Elementwise: return out;
    case ExprKind::Softmax: return 5 * out;
    case ExprKind::Layernorm: return 8 * out;
  }
  return all;
}

void Workload::add_tensor(const std::string& tname, std::vector<std::int64_t> shape, TensorRole role,
                          Dtype dtype) {
  if (tname.empty()) throw Error("workload: a tensor needs a name");
  if (index_.count(tname)) throw Error(fmt::format("workload: tensor '{}' is declared twice", tname));
  if (shape.empty()) throw Error(fmt::format("workload: tensor '{}' needs at least one dimension", tname));
  for (auto d : shape)
    if (d <= 0) throw Error(fmt::format("workload: tensor '{}': dimension {} is not positive", tname, d));
  index_[tname] = tensors_.size();
  tensors_.push_back(Tensor{tname, std::move(shape), dtype, role, false, {}});
}

const Tensor& Workload::tensor(const std::string& tname) const {
  auto it = index_.find(tname);
  if (it == index_.end()) throw Error(fmt::format("workload: no tensor named '{}'", tname));
  return tensors_[it->second];
}

Tensor& Workload::tensor_mut(const std::string& tname) {
  return const_cast<Tensor&>(static_cast<const Workload*>(this)->tensor(tname));
}

int Workload::producer(const std::string& t) const {
  auto it = producer_.find(t);
  return it == producer_.end() ? -1 : it->second;
}

std::vector<int> Workload::consumers(const std::string& t) const {
  std::vector<int> out;
  for (std::size_t i = 0; i < ops_.size(); ++i)
    for (const auto& in : ops_[i].expr.inputs)
      if (in.tensor == t && (out.empty() || out.back() != static_cast<int>(i))) out.push_back(static_cast<int>(i));
  return out;
}

const Operator& Workload::add_op(const std::string& oname, const std::string& text,
                                 const std::map<std::string, std::int64_t>& output_extents, bool extents_rule) {
  auto fail = [&](const std::string& msg) -> void {
    throw Error(fmt::format("workload: operator '{}' ({}): {}", oname, text, msg));
  };
  if (oname.empty()) fail("an operator needs a name");
  for (const auto& op : ops_)
    if (op.name == oname) fail("an operator with this name already exists");
  Operator op;
  op.name = oname;
  try {
    op.expr = parse_expr(text);
  } catch (const Error& e) {
    throw Error(fmt::format("workload: operator '{}': {}", oname, e.what()));
  }
  const Expr& e = op.expr;
  auto bind = [&](const std::string& axis, std::int64_t ext, const std::string& from) {
    auto [it, fresh] = op.extent.emplace(axis, ext);
    if (!fresh && it->second != ext)
      fail(fmt::format("axis '{}' has extent {} elsewhere but {} in {}", axis, it->second, ext, from));
  };
  // With `extents_rule`, the given extents come first: a plain index may then read a prefix of a
  // longer dimension (a slice) or run past the end of a shorter one (concatenation; absent
  // elements are zero). Otherwise a plain index fixes its axis's extent, and every plain read
  // and given extent must agree.
  const auto axes = e.all_axes();
  for (const auto& [a, ext] : output_extents) {
    if (!extents_rule) break;
    if (std::find(axes.begin(), axes.end(), a) == axes.end())
      fail(fmt::format("an extent is given for axis '{}', which the expression does not use", a));
    if (ext <= 0) fail(fmt::format("extent of axis '{}' must be positive", a));
    bind(a, ext, "the given output extents");
  }
  for (const auto& in : e.inputs) {
    if (!has_tensor(in.tensor)) fail(fmt::format("reads tensor '{}', which is not declared and no earlier operator produces", in.tensor));
    if (in.tensor == e.output.tensor) fail("an operator cannot read its own output");
    const Tensor& t = tensor(in.tensor);
    if (t.role == TensorRole::Activation && producer(in.tensor) < 0)
      fail(fmt::format("reads activation '{}' before any operator produces it", in.tensor));
    if (t.shape.size() != in.indices.size())
      fail(fmt::format("tensor '{}' has {} dimensions but is indexed with {}", in.tensor, t.shape.size(), in.indices.size()));
    for (std::size_t d = 0; d < in.indices.size(); ++d)
      if (in.indices[d].plain() && !(extents_rule && output_extents.count(in.indices[d].terms[0].axis)))
        bind(in.indices[d].terms[0].axis, t.shape[d], in.str());
  }
  const bool declared = has_tensor(e.output.tensor);
  if (declared) {
    const Tensor& t = tensor(e.output.tensor);
    if (t.role != TensorRole::Activation || producer(t.name) >= 0)
      fail(fmt::format("output '{}' is already a {} or produced by another operator", t.name, role_name(t.role)));
    if (t.shape.size() != e.output.indices.size())
      fail(fmt::format("output '{}' has {} dimensions but is indexed with {}", t.name, t.shape.size(), e.output.indices.size()));
    for (std::size_t d = 0; d < t.shape.size(); ++d) bind(e.output.indices[d].terms[0].axis, t.shape[d], e.output.str());
  }
  for (const auto& [a, ext] : output_extents) {
    if (extents_rule) break;
    if (std::find(axes.begin(), axes.end(), a) == axes.end())
      fail(fmt::format("an extent is given for axis '{}', which the expression does not use", a));
    if (ext <= 0) fail(fmt::format("extent of axis '{}' must be positive", a));
    bind(a, ext, "the given output extents");
  }
  for (const auto& in : e.inputs)
    for (const auto& ix : in.indices)
      for (const auto& term : ix.terms)
        if (!op.extent.count(term.axis))
          fail(fmt::format("the extent of axis '{}' is not fixed by any plain index; declare the output tensor's shape", term.axis));
  std::vector<std::int64_t> shape;
  for (const auto& a : e.output_axes()) {
    if (!op.extent.count(a)) fail(fmt::format("output axis '{}' appears in no input; declare the output tensor's shape", a));
    shape.push_back(op.extent.at(a));
  }
  if (e.kind == ExprKind::Layernorm)
    for (std::size_t i = 1; i < e.inputs.size(); ++i)
      if (e.inputs[i].indices.size() != 1 || !e.inputs[i].indices[0].plain() ||
          e.inputs[i].indices[0].terms[0].axis != e.output_axes().back())
        fail("layernorm's gamma and beta are indexed by the last output axis only");
  if (!declared) {
    Dtype dt = e.inputs.empty() ? Dtype::Fp16 : tensor(e.inputs[0].tensor).dtype;
    add_tensor(e.output.tensor, shape, TensorRole::Activation, dt);
  }
  const int id = static_cast<int>(ops_.size());
  producer_[e.output.tensor] = id;
  boost::add_vertex(graph_);
  for (const auto& in : e.inputs) {
    int p = producer(in.tensor);
    if (p >= 0 && !boost::edge(p, id, graph_).second) boost::add_edge(p, id, graph_);
  }
  ops_.push_back(std::move(op));
  return ops_.back();
}

void Workload::mark_output(const std::string& t) { tensor_mut(t).output = true; }

void Workload::finalize() {
  if (ops_.empty()) throw Error(fmt::format("workload '{}': no operators", name));
  for (auto& t : tensors_)
    if (t.role == TensorRole::Activation && consumers(t.name).empty()) t.output = true;
  for (auto& t : tensors_)
    if (t.role == TensorRole::Activation && producer(t.name) < 0)
      throw Error(fmt::format("workload '{}': activation '{}' is declared but no operator produces it", name, t.name));
}

std::int64_t Workload::parameter_count() const {
  std::int64_t n = 0;
  for (const auto& t : tensors_)
    if (t.role == TensorRole::Weight) n += t.elements();
  return n;
}

Bytes Workload::weight_bytes() const {
  Bytes n = 0;
  for (const auto& t : tensors_)
    if (t.role == TensorRole::Weight) n += t.bytes();
  return n;
}

}  // namespace tessera::ir
