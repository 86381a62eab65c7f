#include "compiler/oracle/replay.h"

#include <algorithm>

#include "sim/core/compute_model.h"

namespace tessera::oracle {

namespace {

// Runs messages on a fresh engine: each core's sends go one after another (the next is issued
// when the previous one's source is done), all cores start at cycle 0.
class Run : public sim::TransportListener {
 public:
  struct Send { std::uint32_t to; Bytes bytes; };

  Run(sim::PacketNetwork& net, std::vector<std::vector<Send>> sends)
      : net_(net), sends_(std::move(sends)), next_(sends_.size(), 0), sent_(sends_.size(), 0),
        arrived_(sends_.size(), 0) {
    net_.reset();
    net_.set_listener(this);
  }

  void go() {
    for (std::size_t c = 0; c < sends_.size(); ++c) issue(static_cast<std::uint32_t>(c), 0);
    for (Cycles t = net_.next_event(); t != kNever; t = net_.next_event()) net_.advance(t);
  }
  Cycles sent(std::size_t core) const { return sent_[core]; }
  Cycles arrived(std::size_t core) const { return arrived_[core]; }

 private:
  void issue(std::uint32_t core, Cycles t) {
    if (next_[core] >= sends_[core].size()) return;
    const Send& s = sends_[core][next_[core]++];
    const std::uint64_t id = (std::uint64_t{core} << 32) | s.to;
    net_.inject(id, core, s.to, s.bytes, t);
  }
  void sent(std::uint64_t message, Cycles when) override {
    const auto core = static_cast<std::uint32_t>(message >> 32);
    sent_[core] = when;
    issue(core, when);
  }
  void delivered(std::uint64_t message, Cycles when) override {
    auto& a = arrived_[message & 0xffffffffu];
    a = std::max(a, when);
  }

  sim::PacketNetwork& net_;
  std::vector<std::vector<Send>> sends_;
  std::vector<std::size_t> next_;
  std::vector<Cycles> sent_, arrived_;
};

}  // namespace

Replay::Replay(const sim::Config& cfg) : cfg_(cfg), net_(cfg) {}

double Replay::copy(Bytes bytes) const {
  return static_cast<double>(sim::elementwise_cycles(cfg_.chip.core, sim::VecOp::Copy, bytes / 2));
}

double Replay::gather(const std::vector<cost::Message>& messages) {
  if (messages.empty()) return 0;
  std::size_t cores = 0;
  for (const auto& m : messages) cores = std::max<std::size_t>({cores, m.from + 1, m.to + 1});
  std::vector<std::vector<Run::Send>> sends(cores);
  std::vector<Cycles> copy_cycles(cores, 0);
  for (const auto& m : messages) {
    if (m.from == m.to)
      copy_cycles[m.to] += sim::elementwise_cycles(cfg_.chip.core, sim::VecOp::Copy, m.bytes / 2);
    else
      sends[m.from].push_back({m.to, m.bytes});
  }
  Run run(net_, std::move(sends));
  run.go();
  Cycles end = 0;
  for (std::size_t c = 0; c < cores; ++c) end = std::max({end, run.sent(c) + copy_cycles[c], run.arrived(c)});
  return static_cast<double>(end);
}

double Replay::round(const std::vector<std::pair<std::size_t, std::size_t>>& pairs, Bytes bytes) {
  std::size_t cores = 0;
  for (const auto& [from, to] : pairs) cores = std::max({cores, from + 1, to + 1});
  std::vector<std::vector<Run::Send>> sends(cores);
  for (const auto& [from, to] : pairs)
    if (from != to) sends[from].push_back({static_cast<std::uint32_t>(to), bytes});
  Run run(net_, std::move(sends));
  run.go();
  Cycles end = 0;
  for (std::size_t c = 0; c < cores; ++c) end = std::max(end, run.arrived(c));
  return static_cast<double>(end);
}

}  // namespace tessera::oracle
