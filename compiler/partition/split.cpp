#include "compiler/partition/split.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "sim/common/error.h"

namespace tessera::partition {

Graph operator_graph(const ir::Workload& w, std::uint64_t chip_capacity_bytes) {
  Graph g;
  g.nodes = static_cast<std::uint32_t>(w.ops().size());
  g.chip_capacity_bytes = chip_capacity_bytes;
  g.node_bytes.assign(g.nodes, 0);
  std::set<std::string> counted;
  std::set<std::pair<std::uint32_t, std::uint32_t>> edges;
  for (std::uint32_t v = 0; v < g.nodes; ++v) {
    const ir::Operator& op = w.ops()[v];
    g.names.push_back(op.name);
    for (const auto& in : op.expr.inputs) {
      const ir::Tensor& t = w.tensor(in.tensor);
      if (t.role == ir::TensorRole::Weight && counted.insert(t.name).second) g.node_bytes[v] += t.bytes();
      const int u = w.producer(t.name);
      if (u >= 0 && edges.insert({static_cast<std::uint32_t>(u), v}).second)
        g.edges.emplace_back(static_cast<std::uint32_t>(u), v);
    }
  }
  return g;
}

namespace {

// The tensors operator `op` touches, inputs first, then its output.
std::vector<std::string> tensors_of(const ir::Operator& op) {
  std::vector<std::string> t;
  for (const auto& in : op.expr.inputs) t.push_back(in.tensor);
  t.push_back(op.expr.output.tensor);
  return t;
}

ir::Workload chip_share(const ir::Workload& w, const Placement& f, std::uint32_t chip,
                        const std::set<std::string>& leaves) {
  ir::Workload s;
  s.name = fmt::format("{}@chip{}", w.name, chip);
  std::set<std::string> declared;
  for (std::size_t i = 0; i < w.ops().size(); ++i) {
    if (f[i] != chip) continue;
    const ir::Operator& op = w.ops()[i];
    for (const auto& name : tensors_of(op)) {
      if (!declared.insert(name).second) continue;
      const ir::Tensor& t = w.tensor(name);
      const int p = w.producer(name);
      // Produced on an earlier chip: it arrives before this chip's operators run, as an input.
      const bool arrives = p >= 0 && f[static_cast<std::size_t>(p)] != chip;
      const ir::TensorRole role = arrives ? ir::TensorRole::Input : t.role;
      s.add_tensor(name, t.shape, role, t.dtype);
      if (!t.values.empty()) s.tensor_mut(name).values = t.values;
    }
    s.add_op(op.name, op.expr.text, op.extent, true);
    if (w.tensor(op.expr.output.tensor).output || leaves.count(op.expr.output.tensor))
      s.mark_output(op.expr.output.tensor);
  }
  s.finalize();
  return s;
}

}  // namespace

Split split_workload(const ir::Workload& w, const Placement& f, std::uint32_t chips) {
  const Graph g = operator_graph(w);
  if (auto v = check(g, f, chips)) throw Error(fmt::format("placement of '{}': {}", w.name, v->what));
  Split s;
  std::uint32_t used = 0;
  for (auto c : f) used = std::max(used, c + 1);
  // Crossings in the order the program sends them: producer chip, producing operator, consumer chip.
  std::set<std::string> leaves;
  for (std::uint32_t from = 0; from < used; ++from)
    for (std::size_t p = 0; p < w.ops().size(); ++p) {
      if (f[p] != from) continue;
      const ir::Tensor& t = w.tensor(w.ops()[p].expr.output.tensor);
      std::set<std::uint32_t> to;
      for (int c : w.consumers(t.name))
        if (f[static_cast<std::size_t>(c)] != from) to.insert(f[static_cast<std::size_t>(c)]);
      for (auto b : to) s.crossings.push_back({t.name, from, b, t.bytes()});
      if (!to.empty()) leaves.insert(t.name);
    }
  for (std::uint32_t c = 0; c < used; ++c) s.chips.push_back(chip_share(w, f, c, leaves));
  return s;
}

}  // namespace tessera::partition
