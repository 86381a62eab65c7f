#include "compiler/lower/pipeline_lower.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "compiler/lower/pipeline_builder.h"
#include "sim/common/error.h"

namespace tessera::lower {

namespace {

using partition::PipeModel;
using partition::PipeOp;
using partition::PipePlan;
using partition::PipeStage;

// A share of samples: micro-batch `mb` of a stage, its replica `rep`, `samples` of them.
struct Piece {
  std::uint64_t mb;
  std::uint32_t rep;
  std::uint64_t samples;
};

// The (micro-batch, replica) shares of stage s that hold samples [lo, hi).
std::vector<Piece> pieces(const PipeStage& s, std::uint64_t lo, std::uint64_t hi) {
  std::vector<Piece> out;
  const std::uint64_t per = s.micro_batch / s.replicas;
  for (std::uint64_t x = lo / per * per; x < hi; x += per) {
    const std::uint64_t a = std::max(x, lo), b = std::min(x + per, hi);
    out.push_back({x / s.micro_batch, static_cast<std::uint32_t>(x % s.micro_batch / per), b - a});
  }
  return out;
}

class Lowering {
 public:
  Lowering(const PipeModel& m, const PipePlan& p) : m_(m), p_(p), b_(p.devices_used) {
    const std::size_t n = p.stages.size();
    edge_.assign(n, std::vector<double>(n, 0));
    for (std::uint32_t x = 0; x < n; ++x)
      for (std::uint32_t z : p.stages[x].succs) edge_[x][z] = partition::stage_edge_bytes(p, x, z);
  }

  sim::PipelineProgram run(const partition::PipeSchedule& sched) {
    for (std::uint32_t x = 0; x < p_.stages.size(); ++x) {
      const PipeStage& s = p_.stages[x];
      double params = 0;
      for (std::uint32_t l : s.layers) params += m_.layers[l].params;
      for (std::uint32_t q = 0; q < s.replicas; ++q) {
        const std::uint32_t dev = s.first_device + q;
        b_.prog.resident_bytes[dev] = static_cast<Bytes>(std::ceil(params * m_.state_bytes_per_param));
        for (const PipeOp& op : sched.order[x]) pass(x, q, op);
      }
      allreduce(x, params);
    }
    return std::move(b_.prog);
  }

 private:
  // A message: (sender stage, replica, micro-batch, receiver stage, replica, micro-batch, backward)
  using Key = std::tuple<std::uint32_t, std::uint32_t, std::uint64_t, std::uint32_t, std::uint32_t, std::uint64_t, bool>;

  // Messages between replica q of stage x (its share of micro-batch j) and the replicas of its
  // neighbours `others` that share samples with it: activations forward, gradients backward.
  void exchange(std::uint32_t x, std::uint32_t q, std::uint64_t j, bool backward, bool outgoing) {
    const PipeStage& s = p_.stages[x];
    const std::uint64_t per = s.micro_batch / s.replicas;
    const std::uint64_t lo = j * s.micro_batch + q * per, hi = lo + per;
    // forward: receive from predecessors, send to successors; backward the reverse
    const bool to_succ = outgoing != backward;
    const auto& others = to_succ ? s.succs : s.preds;
    const std::uint32_t me = s.first_device + q;
    for (std::uint32_t y : others) {
      const PipeStage& o = p_.stages[y];
      const double per_sample = to_succ ? edge_[x][y] : edge_[y][x];
      for (const Piece& pc : pieces(o, lo, hi)) {
        const std::uint32_t peer = o.first_device + pc.rep;
        const Key k = outgoing ? Key{x, q, j, y, pc.rep, pc.mb, backward} : Key{y, pc.rep, pc.mb, x, q, j, backward};
        const std::uint32_t src = outgoing ? me : peer, dst = outgoing ? peer : me;
        const std::uint32_t id = b_.block(k, {{src, dst, message_bytes(per_sample * double(pc.samples))}});
        b_.step(me, outgoing ? sim::PipeStep::Send : sim::PipeStep::Wait, id);
      }
    }
  }

  void pass(std::uint32_t x, std::uint32_t q, const PipeOp& op) {
    const PipeStage& s = p_.stages[x];
    const std::uint32_t dev = s.first_device + q;
    const double per = double(s.micro_batch / s.replicas);
    exchange(x, q, op.micro_batch, op.backward, false);
    // one label per pass, shared by the stage's replicas
    const auto [it, fresh] = labels_.try_emplace({x, op.backward, op.micro_batch}, static_cast<std::uint32_t>(b_.prog.labels.size()));
    if (fresh) b_.prog.labels.push_back(fmt::format("S{} {}{}", x, op.backward ? 'B' : 'F', op.micro_batch));
    const std::uint32_t label = it->second;
    double stash = 0;
    for (std::uint32_t l : s.layers) stash += m_.layers[l].stash_bytes;
    const auto held = static_cast<std::int64_t>(std::ceil(stash * per));
    const double factor = op.backward ? 2 : 1;
    for (std::size_t i = 0; i < s.layers.size(); ++i) {
      const std::uint32_t l = op.backward ? s.layers[s.layers.size() - 1 - i] : s.layers[i];
      const partition::PipeLayer& L = m_.layers[l];
      sim::PipeStep st;
      st.kind = sim::PipeStep::Compute;
      st.flops = factor * L.flops * per;
      st.bytes = factor * (L.weight_read_bytes + L.sample_bytes * per);
      st.label = label;
      if (i == 0) st.memory_delta = op.backward ? -held : held;
      b_.prog.devices[dev].push_back(st);
    }
    exchange(x, q, op.micro_batch, op.backward, true);
  }

  // A ring all-reduce of the stage's weight gradients over its replicas (one ring).
  void allreduce(std::uint32_t x, double params) {
    const PipeStage& s = p_.stages[x];
    const std::uint32_t r = s.replicas;
    if (r < 2) return;
    const auto device = [&](std::uint32_t q) { return s.first_device + q; };
    const std::uint32_t base =
        b_.add(PipelineBuilder<Key>::ring_messages(r, 1, message_bytes(params * m_.param_bytes / r), device));
    for (std::uint32_t q = 0; q < r; ++q) b_.ring_steps(device(q), base, r, 1, q);
  }

  const PipeModel& m_;
  const PipePlan& p_;
  std::vector<std::vector<double>> edge_;
  PipelineBuilder<Key> b_;
  std::map<std::tuple<std::uint32_t, bool, std::uint64_t>, std::uint32_t> labels_;
};

}  // namespace

sim::PipelineProgram lower_pipeline(const PipeModel& m, const PipePlan& plan, const partition::PipeSchedule& schedule) {
  if (schedule.order.size() != plan.stages.size())
    throw Error("pipeline lowering: the schedule is not of this plan (stage counts differ)");
  return Lowering(m, plan).run(schedule);
}

}  // namespace tessera::lower
