#include "compiler/partition/pipeline_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <queue>

#include "sim/common/error.h"

namespace tessera::partition {

namespace {

constexpr double kUnknown = -1;  // not known yet

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

// The estimated run of a plan, in time order. A pass that ends sends its outputs (forward: to
// the successors' micro-batches that share its samples; backward: the gradients to the
// predecessors'); a message waits for the sending stage's outbound port and the receiving
// stage's inbound port of its rate (a port per dimension each way) and takes bytes / rate.
// Fixed orders: a stage starts its next pass when it is free and the pass's inputs are in.
// Greedy: a free stage starts a backward whose inputs are in, else its next forward if it holds
// fewer than w micro-batches.
class TimedRun {
 public:
  TimedRun(const PipePlan& p, const DeviceSpec& dev, MicroSchedule kind, std::vector<std::vector<PipeOp>>& order)
      : p_(p), dev_(dev), kind_(kind), order_(order) {
    const std::size_t n = p.stages.size();
    mbs_.resize(n);
    pending_.resize(n);
    fwd_end_.resize(n);
    in_links_.resize(n);
    out_links_.resize(n);
    next_.assign(n, 0);
    nf_.assign(n, 0);
    nb_.assign(n, 0);
    w_.resize(n);
    free_.assign(n, 0);
    for (std::uint32_t x = 0; x < n; ++x) {
      const PipeStage& s = p.stages[x];
      mbs_[x] = static_cast<std::uint32_t>(p.mini_batch / s.micro_batch);
      w_[x] = warmup(s, mbs_[x]);
      fwd_end_[x].assign(mbs_[x], kUnknown);
      pending_[x].resize(2 * std::size_t{mbs_[x]});
      for (std::uint32_t j = 0; j < mbs_[x]; ++j)
        for (bool backward : {false, true})
          for (std::uint32_t y : backward ? s.succs : s.preds)
            pending_[x][2 * j + backward].missing += covering(x, j, y);
    }
  }

  void run() {
    for (std::uint32_t x = 0; x < p_.stages.size(); ++x) try_start(x, 0);
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      if (e.end) finished(e.stage, e.op, e.time);
      try_start(e.stage, e.time);
    }
    for (std::uint32_t x = 0; x < p_.stages.size(); ++x) {
      if (nb_[x] == mbs_[x]) continue;
      if (kind_ == MicroSchedule::KFKB) throw Error(deadlock(p_, x, order_[x][next_[x]]));
      const bool backward = nb_[x] < nf_[x];  // greedy: the pass it would take next
      throw Error(deadlock(p_, x, PipeOp{backward, backward ? nb_[x] : nf_[x]}));
    }
  }

 private:
  struct Pending {
    std::uint32_t missing = 0;
    double arrival = 0;
  };
  struct Event {
    double time;
    std::uint64_t seq;
    std::uint32_t stage;
    std::size_t op;  // index into the stage's order (an end)
    bool end;
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };

  // Micro-batches of stage y that hold some of stage x's micro-batch j.
  std::uint32_t covering(std::uint32_t x, std::uint32_t j, std::uint32_t y) const {
    const std::uint64_t bx = p_.stages[x].micro_batch, by = p_.stages[y].micro_batch;
    return static_cast<std::uint32_t>((j * bx + bx - 1) / by - j * bx / by + 1);
  }

  void push(double time, std::uint32_t stage, std::size_t op, bool end) {
    events_.push({time, seq_++, stage, op, end});
  }

  // A port of a stage for links of `rate`: when it is free again.
  static double& port(std::vector<std::pair<double, double>>& ports, double rate) {
    auto it = std::find_if(ports.begin(), ports.end(), [&](const auto& l) { return l.first == rate; });
    if (it == ports.end()) it = ports.insert(ports.end(), {rate, 0.0});
    return it->second;
  }

  // A message of `samples` samples at `per_sample` bytes from stage y to stage x, ready at t: it
  // leaves when y's outbound port of its rate is free, streams through, and ends when x's
  // inbound port has taken it (cut-through: the later of the two ports sets the pace).
  void deliver(std::uint32_t x, std::uint32_t y, std::uint32_t slot, double per_sample, double samples, double t) {
    const PipeStage& s = p_.stages[x];
    const double rate = dev_.link_between(s.first_device, p_.stages[y].first_device);
    // each replica sends and receives its share of the samples on its own ports
    const double bytes = per_sample * samples;
    double& out = port(out_links_[y], rate);
    double& in = port(in_links_[x], rate);
    const double leave = std::max(t, out);
    out = leave + bytes / (p_.stages[y].replicas * rate);
    in = std::max(leave, in) + bytes / (s.replicas * rate);
    Pending& q = pending_[x][slot];
    --q.missing;
    q.arrival = std::max(q.arrival, in);
    touched_.push_back(x);
  }

  // Stage y's pass ended at t: its outputs (or gradients) go out.
  void finished(std::uint32_t y, std::size_t index, double t) {
    const PipeOp& op = order_[y][index];
    const PipeStage& s = p_.stages[y];
    if (!op.backward) fwd_end_[y][op.micro_batch] = t;
    const std::uint64_t lo = op.micro_batch * s.micro_batch, hi = lo + s.micro_batch;
    touched_.clear();
    for (std::uint32_t x : op.backward ? s.preds : s.succs) {
      const std::uint64_t bx = p_.stages[x].micro_batch;
      const double per_sample = op.backward ? stage_edge_bytes(p_, x, y) : stage_edge_bytes(p_, y, x);
      for (std::uint64_t j = lo / bx; j * bx < hi; ++j) {
        const double samples = double(std::min(hi, (j + 1) * bx) - std::max(lo, j * bx));
        deliver(x, y, static_cast<std::uint32_t>(2 * j + op.backward), per_sample, samples, t);
      }
    }
    for (std::uint32_t x : touched_) push(t, x, 0, false);  // they may start now (or later)
  }

  // When the pass's inputs are all in (kUnknown: not yet).
  double inputs(std::uint32_t x, const PipeOp& op) const {
    const Pending& q = pending_[x][2 * op.micro_batch + op.backward];
    if (q.missing) return kUnknown;
    if (!op.backward) return q.arrival;
    const double f = fwd_end_[x][op.micro_batch];
    return f == kUnknown ? kUnknown : std::max(f, q.arrival);
  }

  void start(std::uint32_t x, const PipeOp& op, std::size_t index, double at) {
    PipeOp& o = order_[x][index];
    o = op;
    o.start_s = at;
    o.end_s = at + (op.backward ? p_.stages[x].backward_s : p_.stages[x].forward_s);
    free_[x] = o.end_s;
    ++(op.backward ? nb_ : nf_)[x];
    push(o.end_s, x, index, true);
  }

  void try_start(std::uint32_t x, double now) {
    if (free_[x] > now || nb_[x] == mbs_[x]) return;  // running (its end is still to come), or done
    if (kind_ == MicroSchedule::KFKB) {
      if (next_[x] >= order_[x].size()) return;
      const PipeOp op = order_[x][next_[x]];
      const double r = inputs(x, op);
      if (r == kUnknown) return;
      start(x, op, next_[x]++, std::max({free_[x], r, now}));
      return;
    }
    const PipeOp bwd{true, nb_[x]}, fwd{false, nf_[x]};
    const double rb = nb_[x] < nf_[x] ? inputs(x, bwd) : kUnknown;
    const double rf = nf_[x] < mbs_[x] && nf_[x] - nb_[x] < w_[x] ? inputs(x, fwd) : kUnknown;
    if (rb != kUnknown && rb <= now) return grow(x, bwd, now);
    if (rf != kUnknown && rf <= now) return grow(x, fwd, now);
    double wake = kUnknown;  // an input that is on its way
    for (double r : {rb, rf})
      if (r != kUnknown && (wake == kUnknown || r < wake)) wake = r;
    if (wake != kUnknown) push(wake, x, 0, false);
  }

  void grow(std::uint32_t x, const PipeOp& op, double now) {
    order_[x].push_back(op);
    start(x, op, order_[x].size() - 1, now);
  }

  const PipePlan& p_;
  const DeviceSpec& dev_;
  MicroSchedule kind_;
  std::vector<std::vector<PipeOp>>& order_;
  std::vector<std::uint32_t> mbs_, nf_, nb_, w_;
  std::vector<std::size_t> next_;
  std::vector<double> free_;
  std::vector<std::vector<Pending>> pending_;  // per stage: per micro-batch, forward then backward
  std::vector<std::vector<double>> fwd_end_;
  std::vector<std::vector<std::pair<double, double>>> in_links_, out_links_;  // per stage: (rate, free from)
  std::vector<std::uint32_t> touched_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::uint64_t seq_ = 0;
};

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
  PipeSchedule s;
  s.kind = kind;
  const std::size_t n = plan.stages.size();
  s.order.resize(n);
  if (kind == MicroSchedule::KFKB)
    for (std::uint32_t x = 0; x < n; ++x)
      s.order[x] = kfkb_order(plan.stages[x], static_cast<std::uint32_t>(plan.mini_batch / plan.stages[x].micro_batch));
  TimedRun(plan, dev, kind, s.order).run();
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
