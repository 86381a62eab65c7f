#include "compiler/lower/mapping_lower.h"

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <tuple>

#include "sim/common/error.h"

namespace tessera::lower {

namespace {

using partition::Strategy;

// Chip numbers from (TP index, PP stage, DP replica): each strategy's dimensions, in order, are
// the digits of its index (the first the fastest), as the system numbers chips (dimension 0
// fastest).
class ChipMap {
 public:
  ChipMap(const partition::SystemSpec& sys, const partition::Mapping& m) {
    std::uint32_t stride = 1;
    for (std::size_t d = 0; d < sys.dims.size(); ++d) {
      dims_[static_cast<int>(m.dims[d])].push_back({sys.dims[d].size, stride});
      stride *= sys.dims[d].size;
    }
  }
  std::uint32_t chip(std::uint32_t t, std::uint32_t s, std::uint32_t r) const {
    return part(Strategy::TP, t) + part(Strategy::PP, s) + part(Strategy::DP, r);
  }

 private:
  std::uint32_t part(Strategy k, std::uint32_t index) const {
    std::uint32_t c = 0;
    for (const auto& [size, stride] : dims_[static_cast<int>(k)]) {
      c += index % size * stride;
      index /= size;
    }
    return c;
  }
  std::vector<std::pair<std::uint32_t, std::uint32_t>> dims_[3];
};

Bytes whole(double bytes) { return std::max<Bytes>(1, static_cast<Bytes>(std::ceil(bytes))); }

class Lowering {
 public:
  Lowering(const partition::LlmSpec& llm, const partition::SystemSpec& sys, const partition::Evaluation& e)
      : llm_(llm), e_(e), map_(sys, e.mapping) {
    prog_.devices.resize(sys.chips());
    prog_.resident_bytes.assign(sys.chips(), 0);
    const std::vector<partition::Kernel> layer = partition::gpt_layer(llm);
    out_bytes_ = layer.back().out_bytes;
    for (const partition::Kernel& k : layer) layer_weights_ += k.weight_bytes;
    per_stage_ = (llm.layers + e.pp - 1) / e.pp;
  }

  sim::PipelineProgram run(std::uint64_t micro_batches) {
    for (std::uint32_t r = 0; r < e_.dp; ++r)
      for (std::uint32_t s = 0; s < e_.pp; ++s)
        for (std::uint32_t t = 0; t < e_.tp; ++t) {
          const std::uint32_t chip = map_.chip(t, s, r);
          const std::uint32_t first = s * per_stage_, last = std::min(llm_.layers, first + per_stage_);
          prog_.resident_bytes[chip] = whole(layer_weights_ / e_.tp * (last - first));
          for (std::uint64_t j = 0; j < micro_batches; ++j) micro_batch(t, s, r, j, first, last);
        }
    return std::move(prog_);
  }

 private:
  using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint64_t, std::uint32_t, std::uint32_t>;

  // The first id of the block of messages `key` names, made by whichever chip gets there first.
  std::uint32_t block(const Key& key, const std::vector<sim::PipeMessage>& messages) {
    auto it = ids_.find(key);
    if (it != ids_.end()) return it->second;
    const auto base = static_cast<std::uint32_t>(prog_.messages.size());
    prog_.messages.insert(prog_.messages.end(), messages.begin(), messages.end());
    ids_.emplace(key, base);
    return base;
  }

  void step(std::uint32_t chip, sim::PipeStep::Kind kind, std::uint32_t message) {
    sim::PipeStep st;
    st.kind = kind;
    st.message = message;
    prog_.devices[chip].push_back(st);
  }

  // An all-reduce of `bytes` over the TP group of (s, r) as two rings, half the data each, one
  // each way round the group (the model's ring uses both directions of every link): a block of
  // 2 x 2 (TP - 1) x TP messages, member q sending its k-th of a ring to its next member.
  void allreduce(std::uint32_t t, std::uint32_t s, std::uint32_t r, std::uint64_t j, std::uint32_t n, double bytes) {
    const std::uint32_t tp = e_.tp, steps = 2 * (tp - 1);
    const auto next = [&](std::uint32_t q, bool up) { return up ? (q + 1) % tp : (q + tp - 1) % tp; };
    std::vector<sim::PipeMessage> rings;
    for (bool up : {true, false})
      for (std::uint32_t k = 0; k < steps; ++k)
        for (std::uint32_t q = 0; q < tp; ++q)
          rings.push_back({map_.chip(q, s, r), map_.chip(next(q, up), s, r), whole(bytes / 2 / tp)});
    const std::uint32_t base = block({0, s, j, r, n}, rings);
    const std::uint32_t chip = map_.chip(t, s, r), half = steps * tp;
    for (std::uint32_t k = 0; k < steps; ++k) {
      step(chip, sim::PipeStep::Send, base + k * tp + t);
      step(chip, sim::PipeStep::Send, base + half + k * tp + t);
      step(chip, sim::PipeStep::Wait, base + k * tp + next(t, false));
      step(chip, sim::PipeStep::Wait, base + half + k * tp + next(t, true));
    }
  }

  void micro_batch(std::uint32_t t, std::uint32_t s, std::uint32_t r, std::uint64_t j, std::uint32_t first,
                   std::uint32_t last) {
    const std::uint32_t chip = map_.chip(t, s, r);
    const auto handoff = [&](std::uint32_t from) {  // stage `from` to from + 1, TP peer t
      return block({1, from, j, r, t}, {{map_.chip(t, from, r), map_.chip(t, from + 1, r), whole(out_bytes_ / e_.tp)}});
    };
    if (s > 0) step(chip, sim::PipeStep::Wait, handoff(s - 1));
    std::uint32_t n = 0;  // all-reduces of this micro-batch on this stage, in order
    for (std::uint32_t l = first; l < last; ++l)
      for (const partition::PartitionCost& p : e_.partitions) {
        sim::PipeStep c;
        c.flops = p.flops;
        c.bytes = p.dram_bytes;
        prog_.devices[chip].push_back(c);
        if (e_.tp > 1)
          for (double b : p.allreduce_bytes) allreduce(t, s, r, j, n++, b);
      }
    if (s + 1 < e_.pp) step(chip, sim::PipeStep::Send, handoff(s));
  }

  const partition::LlmSpec& llm_;
  const partition::Evaluation& e_;
  ChipMap map_;
  double out_bytes_ = 0, layer_weights_ = 0;
  std::uint32_t per_stage_ = 1;
  std::map<Key, std::uint32_t> ids_;
  sim::PipelineProgram prog_;
};

}  // namespace

sim::PipelineProgram lower_mapping(const partition::LlmSpec& llm, const partition::SystemSpec& sys,
                                   const partition::Evaluation& e, std::uint64_t micro_batches) {
  if (llm.training)
    throw Error("plan-parallel --simulate: training mappings do not run on the simulator yet (inference only)");
  if (!e.feasible) throw Error(fmt::format("plan-parallel --simulate: the mapping does not fit: {}", e.why));
  if (e.mapping.dims.size() != sys.dims.size())
    throw Error("plan-parallel --simulate: the mapping has a strategy per dimension of another system");
  if (micro_batches == 0 || micro_batches > 4096)
    throw Error(fmt::format("plan-parallel --simulate: {} micro-batches: expected 1 to 4096", micro_batches));
  return Lowering(llm, sys, e).run(micro_batches);
}

double mapping_model_seconds(const partition::Evaluation& e, std::uint64_t micro_batches) {
  return static_cast<double>(micro_batches + e.pp - 1) * e.interval_s;
}

}  // namespace tessera::lower
