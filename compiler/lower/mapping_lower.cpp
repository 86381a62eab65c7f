#include "compiler/lower/mapping_lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "compiler/lower/pipeline_builder.h"
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

class Lowering {
 public:
  Lowering(const partition::LlmSpec& llm, const partition::SystemSpec& sys, const partition::Evaluation& e, bool stream)
      : llm_(llm), e_(e), map_(sys, e.mapping), b_(sys.chips()),
        tiles_(stream ? static_cast<std::uint32_t>(std::llround(1 / partition::tile_share(llm))) : 1) {
    const std::vector<partition::Kernel> layer = partition::gpt_layer(llm);
    out_bytes_ = layer.back().out_bytes;
    for (const partition::Kernel& k : layer) layer_weights_ += k.weight_bytes;
    per_stage_ = (llm.layers + e.pp - 1) / e.pp;
  }

  sim::PipelineProgram run(std::uint64_t micro_batches) {
    const auto orders = partition::stage_orders(e_.pp, micro_batches, llm_.training);
    for (std::uint32_t r = 0; r < e_.dp; ++r)
      for (std::uint32_t s = 0; s < e_.pp; ++s)
        for (std::uint32_t t = 0; t < e_.tp; ++t) {
          const std::uint32_t chip = map_.chip(t, s, r);
          // ceil(layers / PP) per stage, as the model has it; stages past the last layer only hand on
          const std::uint32_t first = std::min(llm_.layers, s * per_stage_);
          const std::uint32_t last = std::min(llm_.layers, first + per_stage_);
          // training keeps 8 x the fp16 weights (weights, gradients, fp32 master, two moments)
          const double weights = layer_weights_ / e_.tp * (last - first);
          b_.prog.resident_bytes[chip] = message_bytes(llm_.training ? 8 * weights : weights);
          for (const auto& [forward, j] : orders[s]) pass(t, s, r, j, first, last, forward);
          if (llm_.training && e_.dp > 1) gradient_allreduce(t, s, r, weights);
        }
    return std::move(b_.prog);
  }

 private:
  // A block of messages: (kind: 0 TP forward, 1 hand-off forward, 2 TP backward, 3 hand-off
  // backward, 4 DP; stage, micro-batch, DP replica or TP index, index within the pass)
  using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint64_t, std::uint32_t, std::uint32_t>;

  // An all-reduce of `bytes` over `n` chips, member q at chip `member(q)`, as two rings, half the
  // data each, one each way round (the model's ring uses both directions of every link);
  // `between()` after each ring step's sends (PipelineBuilder::ring_steps).
  template <class Member, class Between>
  void ring_allreduce(const Key& key, std::uint32_t n, std::uint32_t me, double bytes, Member member, Between between) {
    const std::uint32_t base = b_.block(key, PipelineBuilder<Key>::ring_messages(n, 2, message_bytes(bytes / 2 / n), member));
    b_.ring_steps(member(me), base, n, 2, me, between);
  }

  // The n-th TP all-reduce of a pass of micro-batch j on stage s of replica r.
  template <class Between>
  void tp_allreduce(std::uint32_t t, std::uint32_t s, std::uint32_t r, std::uint64_t j, bool forward, std::uint32_t n,
                    double bytes, Between between) {
    ring_allreduce({forward ? 0u : 2u, s, j, r, n}, e_.tp, t, bytes, [&](std::uint32_t q) { return map_.chip(q, s, r); },
                   between);
  }

  // A partition's compute step c and its all-reduces (`bytes`, each) on TP index t. Streamed in
  // tiles_ sequence tiles, as the model has it: tile i's all-reduces run while tile i + 1
  // computes (its compute split into one slice per ring step), and only the last tile's are
  // exposed. Not streamed (tiles_ 1): the compute, then the all-reduces.
  void partition_with_allreduces(std::uint32_t t, std::uint32_t s, std::uint32_t r, std::uint64_t j, bool forward,
                                 std::uint32_t& n, sim::PipeStep c, const std::vector<double>& bytes) {
    const std::uint32_t chip = map_.chip(t, s, r);
    const auto none = [] {};
    if (tiles_ <= 1 || bytes.empty()) {
      b_.prog.devices[chip].push_back(c);
      for (double b : bytes) tp_allreduce(t, s, r, j, forward, n++, b, none);
      return;
    }
    c.flops /= tiles_;
    c.bytes /= tiles_;
    b_.prog.devices[chip].push_back(c);  // tile 0
    sim::PipeStep slice = c;
    const double slices = static_cast<double>(bytes.size() * 2 * (e_.tp - 1));
    slice.flops /= slices;
    slice.bytes /= slices;
    const auto compute = [&] { b_.prog.devices[chip].push_back(slice); };
    for (std::uint32_t i = 1; i < tiles_; ++i)  // tile i - 1's all-reduces beside tile i's compute
      for (double b : bytes) tp_allreduce(t, s, r, j, forward, n++, b / tiles_, compute);
    for (double b : bytes) tp_allreduce(t, s, r, j, forward, n++, b / tiles_, none);  // the last tile's
  }

  // The DP replicas of stage s, TP index t, all-reduce their weight gradients.
  void gradient_allreduce(std::uint32_t t, std::uint32_t s, std::uint32_t r, double bytes) {
    ring_allreduce({4, s, 0, t, 0}, e_.dp, r, bytes, [&](std::uint32_t q) { return map_.chip(t, s, q); }, [] {});
  }

  // A forward pass of micro-batch j: the hand-off from the stage before, its layers partition by
  // partition with the all-reduces of row-sharded outputs, the hand-off on. A backward pass: the
  // gradient from the stage after, the layers and partitions in reverse (twice the FLOPs; twice
  // the DRAM traffic and the weight gradients written) with the all-reduces of column-sharded
  // kernels' input gradients, the gradient back.
  void pass(std::uint32_t t, std::uint32_t s, std::uint32_t r, std::uint64_t j, std::uint32_t first, std::uint32_t last,
            bool forward) {
    const std::uint32_t chip = map_.chip(t, s, r);
    const auto handoff = [&](std::uint32_t from, std::uint32_t to) {
      return b_.block({forward ? 1u : 3u, from, j, r, t},
                      {{map_.chip(t, from, r), map_.chip(t, to, r), message_bytes(out_bytes_ / e_.tp)}});
    };
    if (forward && s > 0) b_.step(chip, sim::PipeStep::Wait, handoff(s - 1, s));
    if (!forward && s + 1 < e_.pp) b_.step(chip, sim::PipeStep::Wait, handoff(s + 1, s));
    std::uint32_t n = 0;  // all-reduces of this pass on this chip, in order
    const auto& parts = e_.partitions;
    for (std::uint32_t i = 0; i < last - first; ++i)
      for (std::size_t k = 0; k < parts.size(); ++k) {
        const partition::PartitionCost& p = forward ? parts[k] : parts[parts.size() - 1 - k];
        sim::PipeStep c;
        c.flops = forward ? p.flops : 2 * p.flops;
        c.bytes = forward ? p.dram_bytes : 2 * p.dram_bytes + p.weight_bytes;
        static const std::vector<double> kNone;
        const std::vector<double>& bytes = e_.tp < 2 ? kNone : forward ? p.allreduce_bytes : p.backward_allreduce_bytes;
        partition_with_allreduces(t, s, r, j, forward, n, c, bytes);
      }
    if (forward && s + 1 < e_.pp) b_.step(chip, sim::PipeStep::Send, handoff(s, s + 1));
    if (!forward && s > 0) b_.step(chip, sim::PipeStep::Send, handoff(s, s - 1));
  }

  const partition::LlmSpec& llm_;
  const partition::Evaluation& e_;
  ChipMap map_;
  double out_bytes_ = 0, layer_weights_ = 0;
  std::uint32_t per_stage_ = 1;
  PipelineBuilder<Key> b_;
  std::uint32_t tiles_;  // sequence tiles a partition's all-reduces stream in (1: after its compute)
};

}  // namespace

sim::PipelineProgram lower_mapping(const partition::LlmSpec& llm, const partition::SystemSpec& sys,
                                   const partition::Evaluation& e, std::uint64_t micro_batches, bool stream) {
  if (!e.feasible) throw Error(fmt::format("plan-parallel --simulate: the mapping does not fit: {}", e.why));
  if (e.mapping.dims.size() != sys.dims.size())
    throw Error("plan-parallel --simulate: the mapping has a strategy per dimension of another system");
  const std::uint64_t m = llm.training ? e.micro_batches : micro_batches;
  if (m == 0 || m > 4096)
    throw Error(fmt::format("plan-parallel --simulate: {} micro-batches{}: expected 1 to 4096", m,
                            llm.training ? " per iteration (global batch / (DP x micro-batch))" : ""));
  return Lowering(llm, sys, e, stream).run(m);
}

double mapping_model_seconds(const partition::Evaluation& e, std::uint64_t micro_batches) {
  if (e.backward_layer_s > 0) return e.interval_s;  // training: the iteration
  return static_cast<double>(micro_batches + e.pp - 1) * e.interval_s;
}

}  // namespace tessera::lower
