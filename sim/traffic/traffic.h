#pragma once
// Synthetic traffic on a mesh chip, for NoC studies without a program: every core injects
// single-packet messages by a Bernoulli process at a given rate, to destinations chosen by a
// pattern; the network runs at the config's level of detail (chip.mesh.model) with no cores and
// no receives (a message is consumed when its tail is ejected). Warm-up, then a measured window:
// latency (generation to ejection, so source queueing counts) of the packets generated in the
// window, accepted throughput (flits ejected per node per cycle in the window), per-link use.
// Deterministic: the random numbers come from a seeded mt19937_64 (its sequence is fixed by
// the C++ standard). docs/traffic.md.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/json_reader.h"
#include "sim/config/config.h"

namespace tessera::sim {

enum class Pattern : std::uint8_t { Uniform, Transpose, BitComplement, Neighbour, Hotspot };
Pattern parse_pattern(const std::string& name);  // throws Error listing the patterns
const char* pattern_name(Pattern p);

struct TrafficSpec {
  Pattern pattern = Pattern::Uniform;
  double rate = 0.01;            // injection rate, per node per cycle, in `unit`
  bool rate_in_flits = false;    // unit: flits (else packets)
  Cycles warmup_cycles = 1000;
  Cycles measure_cycles = 10000;
  Cycles drain_cycles = 100000;  // at most this long after the window for its packets to arrive
  bool inject_during_drain = true;  // keep the load on while the window's packets drain
  std::uint64_t seed = 1;
  std::uint32_t hotspot_core = ~0u;  // default: the middle of the mesh
  double hotspot_fraction = 0.2;     // share of packets sent to the hot spot (the rest uniform)
};

struct TrafficPoint {
  double offered_packets = 0, offered_flits = 0;    // per node per cycle, generated in the window
  double accepted_packets = 0, accepted_flits = 0;  // ejected per node per cycle in the window
  std::uint64_t measured_packets = 0, delivered_packets = 0;
  double latency_mean = 0, latency_p50 = 0, latency_p95 = 0, latency_p99 = 0, latency_max = 0;
  // the window's load was not carried (accepted < 95% of offered), or some of its packets had not
  // arrived when the drain time ran out
  bool saturated = false;
  Cycles simulated_cycles = 0;
  std::uint64_t hops = 0;  // packet-hops or flit-hops simulated
  std::vector<std::pair<std::string, double>> link_utilization;  // busy fraction in the window
};

// Checks the spec against the config (a mesh chip, one chip; the pattern's needs; 0 < rate < 1).
void validate_traffic(const Config& cfg, const TrafficSpec& spec);
// Flits per packet: chip.mesh.packet_bytes in flits of link_bytes_per_cycle.
std::uint32_t flits_per_packet(const Config& cfg);
// The channel-load bound of the pattern under dimension-order routing: the injection rate (flits
// per node per cycle) at which the most loaded channel (link or network interface) is busy every
// cycle. For uniform traffic on a k x k mesh it is 4/k.
double channel_load_bound(const Config& cfg, const TrafficSpec& spec);
TrafficPoint run_traffic(const Config& cfg, const TrafficSpec& spec);
Json point_json(const TrafficPoint& p, bool with_links);

}  // namespace tessera::sim
