#include "compiler/partition/pipeline_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "sim/common/error.h"

namespace tessera::partition {

namespace {

constexpr double kUnknown = -1;  // a pass not placed yet

// The estimated run of a plan: per stage the passes placed so far and their end times.
class Estimate {
 public:
  Estimate(const PipePlan& p, const DeviceSpec& dev) : p_(p), dev_(dev) {
    const std::size_t n = p.stages.size();
    fwd_.resize(n);
    bwd_.resize(n);
    edge_.assign(n, std::vector<double>(n, 0));
    for (std::uint32_t x = 0; x < n; ++x) {
      const std::uint64_t mbs = p.mini_batch / p.stages[x].micro_batch;
      fwd_[x].assign(mbs, kUnknown);
      bwd_[x].assign(mbs, kUnknown);
      for (std::uint32_t z : p.stages[x].succs) edge_[x][z] = stage_edge_bytes(p, x, z);
    }
  }

  std::uint32_t micro_batches(std::uint32_t x) const { return static_cast<std::uint32_t>(fwd_[x].size()); }

  // When the pass could start as far as its inputs go; kUnknown while one is not placed.
  double ready(std::uint32_t x, const PipeOp& op) const {
    const PipeStage& s = p_.stages[x];
    const std::uint64_t first = op.micro_batch * s.micro_batch, last = first + s.micro_batch - 1;
    double t = 0;
    if (op.backward) {
      t = fwd_[x][op.micro_batch];
      if (t == kUnknown) return kUnknown;
    }
    const auto& others = op.backward ? s.succs : s.preds;
    for (std::uint32_t y : others) {
      const std::uint64_t by = p_.stages[y].micro_batch;
      const auto& done = op.backward ? bwd_[y] : fwd_[y];
      const double bytes = op.backward ? edge_[x][y] : edge_[y][x];
      const double link = dev_.link_between(s.first_device, p_.stages[y].first_device);
      const double transfer = bytes * double(s.micro_batch) / (s.replicas * link);
      for (std::uint64_t j = first / by; j <= last / by; ++j) {
        if (done[j] == kUnknown) return kUnknown;
        t = std::max(t, done[j] + transfer);
      }
    }
    return t;
  }

  double duration(std::uint32_t x, const PipeOp& op) const {
    return op.backward ? p_.stages[x].backward_s : p_.stages[x].forward_s;
  }

  void place(std::uint32_t x, PipeOp& op, double start) {
    op.start_s = start;
    op.end_s = start + duration(x, op);
    (op.backward ? bwd_ : fwd_)[x][op.micro_batch] = op.end_s;
    ends_.insert(op.end_s);
  }

  // The first end time of a placed pass after t (kUnknown: none).
  double next_end_after(double t) const {
    const auto it = ends_.upper_bound(t);
    return it == ends_.end() ? kUnknown : *it;
  }

 private:
  const PipePlan& p_;
  const DeviceSpec& dev_;
  std::vector<std::vector<double>> fwd_, bwd_, edge_;
  std::multiset<double> ends_;  // of every placed pass
};

// w: the micro-batches a stage holds at most (its in-flight samples over its micro-batch).
std::uint32_t warmup(const PipeStage& s, std::uint32_t micro_batches) {
  const std::uint64_t w = (s.in_flight + s.micro_batch - 1) / s.micro_batch;
  return static_cast<std::uint32_t>(std::clamp<std::uint64_t>(w, 1, micro_batches));
}

std::vector<PipeOp> kfkb_order(const PipeStage& s, std::uint32_t mbs) {
  std::vector<PipeOp> ops;
  std::uint32_t f = 0, b = 0;
  const std::uint32_t w = warmup(s, mbs);
  while (f < w) ops.push_back({false, f++});
  while (f < mbs) {
    for (std::uint32_t i = 0; i < s.k && b < f; ++i) ops.push_back({true, b++});
    for (std::uint32_t i = 0; i < s.k && f < mbs; ++i) ops.push_back({false, f++});
  }
  while (b < mbs) ops.push_back({true, b++});
  return ops;
}

std::string deadlock(const PipePlan& p, std::uint32_t x, const PipeOp& op) {
  return fmt::format("pipeline schedule: stage {} ({}) cannot run its {} of micro-batch {}: its inputs wait for it "
                     "(the orders deadlock)",
                     x, p.stages[x].name, op.backward ? "backward" : "forward", op.micro_batch);
}

// Fixed orders: each stage's passes start as soon as its last pass and their inputs are done.
void run_fixed(const PipePlan& p, Estimate& e, std::vector<std::vector<PipeOp>>& order) {
  const std::size_t n = p.stages.size();
  std::vector<std::size_t> next(n, 0);
  std::vector<double> free(n, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (std::uint32_t x = 0; x < n; ++x)
      while (next[x] < order[x].size()) {
        PipeOp& op = order[x][next[x]];
        const double r = e.ready(x, op);
        if (r == kUnknown) break;
        e.place(x, op, std::max(free[x], r));
        free[x] = op.end_s;
        ++next[x];
        progress = true;
      }
  }
  for (std::uint32_t x = 0; x < n; ++x)
    if (next[x] < order[x].size()) throw Error(deadlock(p, x, order[x][next[x]]));
}

// Greedy, in time order: the stage free first decides next. A stage with nothing it can do and
// nothing in sight (its inputs come from passes not placed yet) steps aside until another stage
// places a pass; when every stage with work left has stepped aside, the orders deadlock.
void run_greedy(const PipePlan& p, Estimate& e, std::vector<std::vector<PipeOp>>& order) {
  const std::size_t n = p.stages.size();
  std::vector<std::uint32_t> nf(n, 0), nb(n, 0), w(n);
  std::vector<double> free(n, 0);
  std::vector<char> aside(n, 0);
  for (std::uint32_t x = 0; x < n; ++x) w[x] = warmup(p.stages[x], e.micro_batches(x));
  const auto remaining = [&](std::uint32_t x) { return nb[x] < e.micro_batches(x); };
  const auto place = [&](std::uint32_t x, PipeOp op, double t) {
    e.place(x, op, t);
    order[x].push_back(op);
    ++(op.backward ? nb : nf)[x];
    free[x] = op.end_s;
    std::fill(aside.begin(), aside.end(), 0);
  };
  while (true) {
    std::uint32_t x = ~0u, stuck = ~0u;
    for (std::uint32_t y = 0; y < n; ++y) {
      if (!remaining(y)) continue;
      if (aside[y]) {
        stuck = y;
        continue;
      }
      if (x == ~0u || free[y] < free[x]) x = y;
    }
    if (x == ~0u) {
      if (stuck == ~0u) break;  // all done
      const PipeOp op{nb[stuck] < nf[stuck], nb[stuck] < nf[stuck] ? nb[stuck] : nf[stuck]};
      throw Error(deadlock(p, stuck, op));
    }
    const double t = free[x];
    const PipeOp bwd{true, nb[x]}, fwd{false, nf[x]};
    const double rb = nb[x] < nf[x] ? e.ready(x, bwd) : kUnknown;
    const double rf = nf[x] < e.micro_batches(x) && nf[x] - nb[x] < w[x] ? e.ready(x, fwd) : kUnknown;
    if (rb != kUnknown && rb <= t) {
      place(x, bwd, t);
    } else if (rf != kUnknown && rf <= t) {
      place(x, fwd, t);
    } else {  // nothing now: wait for the next thing that could change that
      double next = kUnknown;
      for (double c : {rb, rf, e.next_end_after(t)})
        if (c != kUnknown && c > t && (next == kUnknown || c < next)) next = c;
      if (next == kUnknown)
        aside[x] = 1;
      else
        free[x] = next;
    }
  }
}

}  // namespace

const char* micro_schedule_name(MicroSchedule s) { return s == MicroSchedule::KFKB ? "kfkb" : "greedy"; }

MicroSchedule parse_micro_schedule(const std::string& name) {
  if (name == "1f1b" || name == "kfkb") return MicroSchedule::KFKB;
  if (name == "greedy") return MicroSchedule::Greedy;
  throw Error(fmt::format("unknown micro-batch schedule '{}': expected 1f1b, kfkb or greedy", name));
}

double stage_edge_bytes(const PipePlan& plan, std::uint32_t from, std::uint32_t to) {
  const PipeStage& s = plan.stages[from];
  for (std::size_t i = 0; i < s.succs.size(); ++i)
    if (s.succs[i] == to) return s.succ_bytes[i];
  return 0;
}

PipeSchedule schedule_pipeline(const PipePlan& plan, const DeviceSpec& dev, MicroSchedule kind) {
  Estimate e(plan, dev);
  PipeSchedule s;
  s.kind = kind;
  const std::size_t n = plan.stages.size();
  s.order.resize(n);
  if (kind == MicroSchedule::KFKB) {
    for (std::uint32_t x = 0; x < n; ++x) s.order[x] = kfkb_order(plan.stages[x], e.micro_batches(x));
    run_fixed(plan, e, s.order);
  } else {
    run_greedy(plan, e, s.order);
  }
  s.peak_in_flight.assign(n, 0);
  s.busy_s.assign(n, 0);
  for (std::uint32_t x = 0; x < n; ++x) {
    // the planner priced the all-reduce at the slowest link; its ring runs over these devices
    const PipeStage& st = plan.stages[x];
    double ring = std::numeric_limits<double>::infinity();
    for (std::uint32_t q = 0; q < st.replicas && st.replicas > 1; ++q)
      ring = std::min(ring, dev.link_between(st.first_device + q, st.first_device + (q + 1) % st.replicas));
    const double allreduce = st.replicas > 1 ? st.allreduce_s * dev.link_bytes_per_s / ring : 0;
    std::int64_t held = 0, peak = 0;
    double end = 0;
    for (const PipeOp& op : s.order[x]) {
      held += op.backward ? -1 : 1;
      peak = std::max(peak, held);
      s.busy_s[x] += op.end_s - op.start_s;
      end = std::max(end, op.end_s);
    }
    s.peak_in_flight[x] = static_cast<std::uint64_t>(peak) * plan.stages[x].micro_batch;
    s.busy_s[x] += allreduce;
    s.iteration_s = std::max(s.iteration_s, end + allreduce);
  }
  s.samples_per_s = s.iteration_s > 0 ? double(plan.mini_batch) / s.iteration_s : 0;
  return s;
}

}  // namespace tessera::partition
