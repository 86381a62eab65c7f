#include "sim/traffic/traffic.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "sim/common/error.h"
#include "sim/noc/event_wheel.h"
#include "sim/noc/network.h"
#include "sim/noc/topology.h"

namespace tessera::sim {

namespace {

constexpr const char* kPatternNames[] = {"uniform", "transpose", "bit-complement", "neighbour", "hotspot"};

bool power_of_two(std::uint32_t n) { return n && !(n & (n - 1)); }

std::uint32_t hotspot_of(const MeshConfig& m, const TrafficSpec& s) {
  return s.hotspot_core != ~0u ? s.hotspot_core : (m.rows / 2) * m.cols + m.cols / 2;
}

// The destination of `src` under a pattern that fixes it (transpose, bit-complement, neighbour).
std::uint32_t fixed_destination(const Config& cfg, Pattern p, std::uint32_t src) {
  const MeshConfig& m = *cfg.chip.mesh;
  switch (p) {
    case Pattern::Transpose: return (src % m.cols) * m.cols + src / m.cols;
    case Pattern::BitComplement: return (cfg.chip.cores - 1) ^ src;
    case Pattern::Neighbour:
      return m.cols > 1 ? (src / m.cols) * m.cols + (src % m.cols + 1) % m.cols
                        : ((src / m.cols + 1) % m.rows) * m.cols;
    default: return src;
  }
}

// Destinations of `src` with their probabilities (the pattern's distribution).
void destinations(const Config& cfg, const TrafficSpec& s, std::uint32_t src,
                  std::vector<std::pair<std::uint32_t, double>>& out) {
  const MeshConfig& m = *cfg.chip.mesh;
  const std::uint32_t n = cfg.chip.cores;
  out.clear();
  auto uniform = [&](double weight) {
    for (std::uint32_t d = 0; d < n; ++d)
      if (d != src) out.push_back({d, weight / (n - 1)});
  };
  switch (s.pattern) {
    case Pattern::Uniform: uniform(1.0); break;
    case Pattern::Transpose:
    case Pattern::BitComplement:
    case Pattern::Neighbour: {
      const std::uint32_t d = fixed_destination(cfg, s.pattern, src);
      if (d != src) out.push_back({d, 1.0});
      break;
    }
    case Pattern::Hotspot: {
      const std::uint32_t h = hotspot_of(m, s);
      if (src == h) { uniform(1.0); break; }
      uniform(1.0 - s.hotspot_fraction);
      out.push_back({h, s.hotspot_fraction});
      break;
    }
  }
}

// Draws from a seeded mt19937_64: uniform reals in [0, 1) from its top 53 bits.
class Random {
 public:
  explicit Random(std::uint64_t seed) : gen_(seed) {}
  double real() { return static_cast<double>(gen_() >> 11) * 0x1.0p-53; }
  std::uint32_t below(std::uint32_t n) { return static_cast<std::uint32_t>(gen_() % n); }
  // Cycles until the next success of a Bernoulli(p) trial per cycle (0: this cycle).
  Cycles gap(double p) {
    if (p >= 1) return 0;
    if (p != gap_p_) {  // one rate per run: its logarithm once
      gap_p_ = p;
      gap_log_ = std::log1p(-p);
    }
    const double u = 1.0 - real();  // (0, 1]
    return static_cast<Cycles>(std::floor(std::log(u) / gap_log_));
  }

 private:
  std::mt19937_64 gen_;
  double gap_p_ = -1, gap_log_ = 0;
};

class Driver : public TransportListener {
 public:
  Driver(const Config& cfg, const TrafficSpec& spec)
      : cfg_(cfg), spec_(spec), net_(make_transport(cfg, nullptr)), rng_(spec.seed),
        flits_(flits_per_packet(cfg)), nodes_(cfg.chip.cores) {
    net_->set_listener(this);
    packet_rate_ = spec.rate_in_flits ? spec.rate / flits_ : spec.rate;
  }

  TrafficPoint run();

  void sent(std::uint64_t, Cycles) override {}
  void delivered(std::uint64_t id, Cycles when) override {
    if (when >= window_begin() && when < window_end()) ++accepted_;
    const Cycles born = born_[id];
    if (born >= window_begin() && born < window_end()) {
      const Cycles latency = when - born;
      if (latency >= latency_count_.size()) latency_count_.resize(latency + 1, 0);
      ++latency_count_[latency];
      --measured_left_;
    }
  }

 private:
  Cycles window_begin() const { return spec_.warmup_cycles; }
  Cycles window_end() const { return spec_.warmup_cycles + spec_.measure_cycles; }
  std::uint32_t destination(std::uint32_t src);
  void generate(Cycles t);
  void snapshot(std::vector<Cycles>& busy);
  TrafficPoint summary(const std::vector<Cycles>& busy_begin, const std::vector<Cycles>& busy_end, Cycles end);

  const Config& cfg_;
  const TrafficSpec& spec_;
  std::unique_ptr<Transport> net_;
  Random rng_;
  std::uint32_t flits_, nodes_;
  double packet_rate_ = 0;
  // Each node's next injection, by cycle (a calendar: a heap of 64 nodes cost more per packet
  // than the network's own arbitration, in mispredicted comparisons).
  EventWheel<std::uint32_t> next_;
  std::vector<std::uint32_t> injecting_;  // the nodes injecting this cycle
  std::vector<Cycles> born_;  // by message id
  // Latencies of the window's packets as counts per latency (cycles are whole): the percentiles
  // are read off in one pass, where a list of a million latencies needed three selections.
  std::vector<std::uint64_t> latency_count_;
  std::uint64_t generated_in_window_ = 0, accepted_ = 0, measured_left_ = 0;
};

std::uint32_t Driver::destination(std::uint32_t src) {
  auto uniform = [&] {
    const std::uint32_t d = rng_.below(nodes_ - 1);
    return d >= src ? d + 1 : d;
  };
  switch (spec_.pattern) {
    case Pattern::Uniform: return uniform();
    case Pattern::Hotspot: {
      const std::uint32_t h = hotspot_of(*cfg_.chip.mesh, spec_);
      if (src != h && rng_.real() < spec_.hotspot_fraction) return h;
      return uniform();
    }
    default: return fixed_destination(cfg_, spec_.pattern, src);
  }
}

// Every node whose next injection is at cycle t injects one packet, in node order.
void Driver::generate(Cycles t) {
  const Bytes bytes = cfg_.chip.mesh->packet_bytes;
  injecting_.clear();
  next_.take(t, injecting_);
  std::sort(injecting_.begin(), injecting_.end());
  for (const std::uint32_t node : injecting_) {
    const std::uint32_t dst = destination(node);
    if (dst != node) {
      const std::uint64_t id = born_.size();
      born_.push_back(t);
      if (t >= window_begin() && t < window_end()) {
        ++generated_in_window_;
        ++measured_left_;
      }
      net_->inject(id, node, dst, bytes, t);
    }
    next_.push(t + 1 + rng_.gap(packet_rate_), node);
  }
}

void Driver::snapshot(std::vector<Cycles>& busy) {
  std::vector<ChannelStats*> st;
  net_->stats(st);
  busy.clear();
  for (const ChannelStats* s : st) busy.push_back(s->busy_cycles);
}

TrafficPoint Driver::run() {
  for (std::uint32_t n = 0; n < nodes_; ++n) next_.push(rng_.gap(packet_rate_), n);
  const Cycles stop_generating = window_end() + spec_.drain_cycles;
  std::vector<Cycles> busy_begin, busy_end;
  bool began = false, ended = false;
  Cycles t = 0;
  for (;;) {
    const Cycles inj = next_.empty() ? kNever : next_.next();
    t = std::min(inj, net_->next_event());
    if (t == kNever || t >= stop_generating) break;
    if (!began && t >= window_begin()) { snapshot(busy_begin); began = true; }
    if (!ended && t >= window_end()) { snapshot(busy_end); ended = true; }
    // the window's packets have all arrived: stop (the network keeps its load until then)
    if (ended && measured_left_ == 0) break;
    if (ended && !spec_.inject_during_drain) next_.clear();
    if (inj == t && !next_.empty()) generate(t);
    net_->advance(t);
  }
  if (!began) snapshot(busy_begin);
  if (!ended) snapshot(busy_end);
  return summary(busy_begin, busy_end, std::min(t, stop_generating));
}

TrafficPoint Driver::summary(const std::vector<Cycles>& busy_begin, const std::vector<Cycles>& busy_end, Cycles end) {
  TrafficPoint p;
  const double node_cycles = static_cast<double>(nodes_) * static_cast<double>(spec_.measure_cycles);
  p.offered_packets = static_cast<double>(generated_in_window_) / node_cycles;
  p.offered_flits = p.offered_packets * flits_;
  p.accepted_packets = static_cast<double>(accepted_) / node_cycles;
  p.accepted_flits = p.accepted_packets * flits_;
  p.measured_packets = generated_in_window_;
  std::uint64_t delivered = 0, sum = 0, longest = 0;
  for (Cycles l = 0; l < latency_count_.size(); ++l) {
    delivered += latency_count_[l];
    sum += latency_count_[l] * l;
    if (latency_count_[l]) longest = l;
  }
  p.delivered_packets = delivered;
  // saturated: the window's load was not carried (5% slack for the window's edges), or some of
  // its packets had not arrived when the drain time ran out
  p.saturated = measured_left_ > 0 || p.accepted_flits < 0.95 * p.offered_flits;
  p.simulated_cycles = end;
  p.hops = net_->hops();
  if (delivered > 0) {
    p.latency_mean = static_cast<double>(sum) / static_cast<double>(delivered);
    // the k-th smallest latency, k = floor(q * n) (at most n - 1)
    auto pct = [&](double q) {
      const auto k = static_cast<std::uint64_t>(
          std::min<double>(static_cast<double>(delivered - 1), std::floor(q * static_cast<double>(delivered))));
      std::uint64_t below = 0;
      Cycles l = 0;
      while (below + latency_count_[l] <= k) below += latency_count_[l++];
      return static_cast<double>(l);
    };
    p.latency_p50 = pct(0.50);
    p.latency_p95 = pct(0.95);
    p.latency_p99 = pct(0.99);
    p.latency_max = static_cast<double>(longest);
  }
  std::vector<ChannelStats*> st;
  net_->stats(st);
  for (std::size_t i = 0; i < st.size(); ++i)
    p.link_utilization.push_back({st[i]->name, static_cast<double>(busy_end[i] - busy_begin[i]) /
                                                   static_cast<double>(spec_.measure_cycles)});
  return p;
}

}  // namespace

Pattern parse_pattern(const std::string& name) {
  for (int i = 0; i < 5; ++i)
    if (name == kPatternNames[i]) return static_cast<Pattern>(i);
  throw Error(fmt::format("unknown traffic pattern \"{}\" (expected uniform, transpose, "
                          "bit-complement, neighbour or hotspot)", name));
}

const char* pattern_name(Pattern p) { return kPatternNames[static_cast<int>(p)]; }

std::uint32_t flits_per_packet(const Config& cfg) {
  const MeshConfig& m = *cfg.chip.mesh;
  const auto flit = static_cast<Bytes>(std::max(1.0, m.link_bytes_per_cycle));
  return static_cast<std::uint32_t>((m.packet_bytes + flit - 1) / flit);
}

void validate_traffic(const Config& cfg, const TrafficSpec& s) {
  if (!cfg.chip.mesh || cfg.system.chips != 1)
    throw Error(fmt::format("config '{}': synthetic traffic needs a single mesh chip (chip.mesh, "
                            "system.chips = 1)", cfg.name));
  const MeshConfig& m = *cfg.chip.mesh;
  const std::uint32_t n = cfg.chip.cores;
  if (n < 2) throw Error("synthetic traffic needs at least 2 cores");
  if (!(s.rate > 0 && s.rate < 1))
    throw Error(fmt::format("injection rate {} {} per node per cycle: expected more than 0 and less than 1",
                            s.rate, s.rate_in_flits ? "flits" : "packets"));
  if (s.pattern == Pattern::Transpose && m.rows != m.cols)
    throw Error(fmt::format("pattern transpose needs a square mesh; config '{}' is {} x {}", cfg.name, m.rows, m.cols));
  if (s.pattern == Pattern::BitComplement && !power_of_two(n))
    throw Error(fmt::format("pattern bit-complement needs a power-of-two core count; config '{}' has {} cores",
                            cfg.name, n));
  if (s.pattern == Pattern::Hotspot) {
    if (hotspot_of(m, s) >= n)
      throw Error(fmt::format("hot spot core {} does not exist (the config has {} cores)", s.hotspot_core, n));
    if (!(s.hotspot_fraction >= 0 && s.hotspot_fraction <= 1))
      throw Error(fmt::format("hot spot fraction {}: expected 0..1", s.hotspot_fraction));
  }
  if (s.measure_cycles == 0) throw Error("the measured window must be at least 1 cycle");
}

double channel_load_bound(const Config& cfg, const TrafficSpec& spec) {
  TrafficSpec any_rate = spec;
  any_rate.rate = 0.5;
  validate_traffic(cfg, any_rate);  // the pattern fits the mesh
  NetTopology topo(cfg);
  const MeshConfig& m = *cfg.chip.mesh;
  const double flit = std::max(1.0, m.link_bytes_per_cycle);
  std::vector<double> load(topo.channels().size(), 0.0);  // flits per cycle per unit rate
  std::vector<std::pair<std::uint32_t, double>> dsts;
  std::vector<Hop> hops;
  for (std::uint32_t s = 0; s < cfg.chip.cores; ++s) {
    destinations(cfg, spec, s, dsts);
    for (const auto& [d, prob] : dsts) {
      hops.clear();
      topo.route(s, d, hops);
      for (const Hop& h : hops) load[h.channel] += prob;
    }
  }
  double bound = std::numeric_limits<double>::infinity();
  for (std::size_t c = 0; c < load.size(); ++c)
    if (load[c] > 0) bound = std::min(bound, topo.channels()[c].bytes_per_cycle / flit / load[c]);
  return bound;
}

TrafficPoint run_traffic(const Config& cfg, const TrafficSpec& spec) {
  validate_traffic(cfg, spec);
  Driver d(cfg, spec);
  return d.run();
}

Json point_json(const TrafficPoint& p, bool with_links) {
  Json j = {{"offered_packets_per_node_cycle", p.offered_packets},
            {"offered_flits_per_node_cycle", p.offered_flits},
            {"accepted_packets_per_node_cycle", p.accepted_packets},
            {"accepted_flits_per_node_cycle", p.accepted_flits},
            {"measured_packets", p.measured_packets},
            {"delivered_packets", p.delivered_packets},
            {"saturated", p.saturated},
            {"latency_cycles", {{"mean", p.latency_mean}, {"p50", p.latency_p50}, {"p95", p.latency_p95},
                                {"p99", p.latency_p99}, {"max", p.latency_max}}},
            {"simulated_cycles", p.simulated_cycles},
            {"hops", p.hops}};
  if (with_links) {
    Json links = Json::array();
    for (const auto& [name, u] : p.link_utilization) links.push_back({{"name", name}, {"busy_fraction", u}});
    j["links"] = std::move(links);
  }
  return j;
}

}  // namespace tessera::sim
