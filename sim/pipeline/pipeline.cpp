#include "sim/pipeline/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>

#include "sim/common/error.h"
#include "sim/core/compute_model.h"
#include "sim/noc/flit_net.h"

namespace tessera::sim {

namespace {

constexpr std::uint32_t kNobody = ~0u;

void validate(const Config& cfg, const PipelineProgram& p) {
  if (p.devices.size() > cfg.system.chips)
    throw ProgramError(fmt::format("pipeline program: {} devices, config '{}' has {} chips", p.devices.size(), cfg.name,
                                   cfg.system.chips));
  if (!p.resident_bytes.empty() && p.resident_bytes.size() != p.devices.size())
    throw ProgramError("pipeline program: resident_bytes needs one entry per device");
  std::vector<std::uint8_t> sent(p.messages.size(), 0), waited(p.messages.size(), 0);
  for (std::uint32_t d = 0; d < p.devices.size(); ++d)
    for (std::size_t i = 0; i < p.devices[d].size(); ++i) {
      const PipeStep& s = p.devices[d][i];
      if (s.kind == PipeStep::Compute) {
        if (!(s.flops >= 0) || !(s.bytes >= 0) || !std::isfinite(s.flops) || !std::isfinite(s.bytes))
          throw ProgramError(fmt::format("pipeline program: device {} step {}: FLOPs and bytes must be finite, >= 0", d, i));
        if (!p.labels.empty() && s.label >= p.labels.size())
          throw ProgramError(fmt::format("pipeline program: device {} step {}: label {} out of range", d, i, s.label));
        continue;
      }
      if (s.message >= p.messages.size())
        throw ProgramError(fmt::format("pipeline program: device {} step {}: message {} out of range", d, i, s.message));
      const PipeMessage& m = p.messages[s.message];
      const bool send = s.kind == PipeStep::Send;
      if ((send ? m.src : m.dst) != d)
        throw ProgramError(fmt::format("pipeline program: device {} step {}: message {} goes from {} to {}", d, i,
                                       s.message, m.src, m.dst));
      if (++(send ? sent : waited)[s.message] > 1)
        throw ProgramError(fmt::format("pipeline program: message {} {} twice", s.message, send ? "sent" : "waited for"));
    }
  for (std::size_t m = 0; m < p.messages.size(); ++m) {
    if (!sent[m] || !waited[m])
      throw ProgramError(fmt::format("pipeline program: message {} is {}", m, sent[m] ? "never waited for" : "never sent"));
    if (p.messages[m].src == p.messages[m].dst)
      throw ProgramError(fmt::format("pipeline program: message {} goes from chip {} to itself", m, p.messages[m].src));
  }
}

// The chips' step lists against the packet network, in time order.
class Runner : public TransportListener {
 public:
  // the stages send from the AFIs only: no cores in the network
  Runner(const Config& cfg, const PipelineProgram& p) : cfg_(cfg), p_(p), links_(make_chip_links(cfg)), net_(*links_) {
    const std::size_t n = p.devices.size();
    pc_.assign(n, 0);
    time_.assign(n, 0);
    memory_.assign(n, 0);
    arrived_.assign(p.messages.size(), kNever);
    waiting_.assign(p.messages.size(), kNobody);
    r_.busy_cycles.assign(n, 0);
    r_.peak_memory_bytes.assign(n, 0);
    last_span_.assign(n, kNoSpan);
    for (std::uint32_t d = 0; d < n; ++d) {
      memory_[d] = p.resident_bytes.empty() ? 0 : static_cast<std::int64_t>(p.resident_bytes[d]);
      r_.peak_memory_bytes[d] = static_cast<Bytes>(memory_[d]);
      check_memory(d, 0);
      ready_.push({0, d});
    }
    net_.set_listener(this);
  }

  PipelineResult run() {
    while (true) {
      const Cycles td = ready_.empty() ? kNever : ready_.top().first;
      const Cycles tn = net_.next_event();
      if (td == kNever && tn == kNever) break;
      if (td <= tn) {
        const std::uint32_t d = ready_.top().second;
        ready_.pop();
        step(d);
      } else {
        net_.advance(tn);
        advanced_ = tn;
        any_advance_ = true;
      }
    }
    for (std::uint32_t d = 0; d < p_.devices.size(); ++d)
      if (pc_[d] < p_.devices[d].size()) {
        const PipeStep& s = p_.devices[d][pc_[d]];
        throw SimulationError(fmt::format("pipeline: chip {} waits at step {} for message {} from chip {}, which "
                                          "never arrives (deadlock)",
                                          d, pc_[d], s.message, p_.messages[s.message].src));
      }
    for (Cycles t : time_) r_.cycles = std::max(r_.cycles, t);
    return std::move(r_);
  }

  void sent(std::uint64_t, Cycles) override {}
  void delivered(std::uint64_t message, Cycles when) override {
    arrived_[message] = when;
    const std::uint32_t d = waiting_[message];
    if (d == kNobody) return;
    waiting_[message] = kNobody;
    time_[d] = std::max(time_[d], when);
    ready_.push({time_[d], d});
  }

 private:
  void check_memory(std::uint32_t d, std::size_t step) const {
    if (memory_[d] > static_cast<std::int64_t>(cfg_.chip.offchip.capacity_bytes))
      throw SimulationError(fmt::format("pipeline: chip {} holds {} B at step {}, more than its memory "
                                        "(chip.offchip.capacity_bytes = {})",
                                        d, memory_[d], step, cfg_.chip.offchip.capacity_bytes));
  }

  // Runs device d's steps at its time until it computes (then it comes back at the end), blocks
  // on a message, or finishes.
  void step(std::uint32_t d) {
    const auto& steps = p_.devices[d];
    while (pc_[d] < steps.size()) {
      const PipeStep& s = steps[pc_[d]];
      switch (s.kind) {
        case PipeStep::Compute: {
          const NpuConfig& npu = *cfg_.system.npu;
          const Cycles cycles =
              roofline_cycles(s.flops, s.bytes, npu.fp16_flops_per_cycle, npu.memory_bytes_per_cycle);
          memory_[d] += s.memory_delta;
          r_.peak_memory_bytes[d] = std::max(r_.peak_memory_bytes[d], static_cast<Bytes>(std::max<std::int64_t>(memory_[d], 0)));
          check_memory(d, pc_[d]);
          record(d, s.label, time_[d], time_[d] + cycles);
          time_[d] += cycles;
          r_.busy_cycles[d] += cycles;
          ++pc_[d];
          ready_.push({time_[d], d});
          return;
        }
        case PipeStep::Send: {
          const PipeMessage& m = p_.messages[s.message];
          const NetTopology& topo = net_.topology();
          // never behind what the network has already processed
          const Cycles at = any_advance_ && advanced_ >= time_[d] ? advanced_ + 1 : time_[d];
          net_.inject(s.message, topo.afi_source(m.src, m.dst), topo.afi_sink(m.dst), m.bytes, at);
          ++r_.messages;
          r_.message_bytes += m.bytes;
          ++pc_[d];
          break;
        }
        case PipeStep::Wait:
          if (arrived_[s.message] == kNever) {
            waiting_[s.message] = d;  // comes back to this step when the message is in
            return;
          }
          time_[d] = std::max(time_[d], arrived_[s.message]);
          ++pc_[d];
          break;
      }
    }
  }

  void record(std::uint32_t d, std::uint32_t label, Cycles start, Cycles end) {
    if (last_span_[d] != kNoSpan) {
      PipeSpan& last = r_.spans[last_span_[d]];
      if (last.label == label && last.end == start) {
        last.end = end;
        return;
      }
    }
    last_span_[d] = r_.spans.size();
    r_.spans.push_back({d, label, start, end});
  }

  using Entry = std::pair<Cycles, std::uint32_t>;  // (time, device): earliest, then lowest chip
  const Config& cfg_;
  const PipelineProgram& p_;
  std::unique_ptr<RoutedTransport> links_;  // the chip links and AFIs at system.model's level
  RoutedTransport& net_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> ready_;
  std::vector<std::size_t> pc_;
  std::vector<Cycles> time_;
  std::vector<std::int64_t> memory_;
  std::vector<Cycles> arrived_;
  std::vector<std::uint32_t> waiting_;
  static constexpr std::size_t kNoSpan = ~std::size_t{0};
  std::vector<std::size_t> last_span_;  // per device: its last span
  Cycles advanced_ = 0;
  bool any_advance_ = false;
  PipelineResult r_;
};

}  // namespace

PipelineResult run_pipeline(const Config& cfg, const PipelineProgram& p) {
  if (!cfg.system.npu)
    throw ConfigError(fmt::format("pipeline: config '{}' has no system.npu (docs/config.md)", cfg.name));
  if (!p.messages.empty() && !cfg.system.afi)
    throw ConfigError(fmt::format("pipeline: config '{}' has no system.afi: messages leave a chip through it", cfg.name));
  validate(cfg, p);
  Runner runner(cfg, p);
  return runner.run();
}

}  // namespace tessera::sim
