#pragma once
// Closed-form features of an operator's time (docs/cost.md, "Features"). Each is a quantity a
// researcher can read off a plan and the config — tile counts over the MAC rate, bytes over a
// port's bandwidth, the most-loaded link under dimension-order routing, hops times the per-hop
// latency — evaluated in microseconds, without running or replaying anything. The cost model
// (model.h) weighs them; calibration fits the weights on simulator runs.
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/common/types.h"
#include "sim/config/config.h"

namespace tessera::cost {

// One step of one core's compute, as a plan describes it: a block product on the matrix unit,
// an element-wise vector op, or a row-wise vector op (reduce_sum, reduce_max, softmax, layernorm).
struct StepShape {
  std::string kind;  // "matmul", a vector op name ("add", "gelu", ...), or a row op name
  std::uint64_t batch = 1, m = 1, k = 1, n = 1;  // matmul
  std::uint64_t elements = 0;                    // element-wise
  std::uint64_t rows = 0, cols = 0;              // row ops
};

struct ComputeFeatures {
  double mac_cycles = 0;        // ceil-tiled tiles x tile MACs / MAC rate, plus issue and fill, per step
  double fetch_cycles = 0;      // the tiles' operand bytes / scratchpad read bandwidth
  double writeback_cycles = 0;  // output blocks' bytes / scratchpad write bandwidth
  double vector_cycles = 0;     // vector unit: lane groups x the op's cycles per group (+ lane trees)
};
// `steps` steps of `s` on a core of `core`; an unknown kind is an error naming it.
ComputeFeatures compute_features(const sim::CoreConfig& core, const StepShape& s, double steps);

// Moving `bytes` between on-chip memory and off-chip memory, spread evenly over every chip's
// channels: the channels' latency plus the bytes at their combined bandwidth (model inputs loaded
// and outputs stored with --offchip-io: program-level time no operator owns).
double offchip_cycles(const sim::Config& cfg, Bytes bytes);

// One transfer of a re-layout or a shift round: `bytes` from core `from` to core `to` (global
// core ids; from == to is a local copy).
struct Message {
  std::uint32_t from = 0, to = 0;
  Bytes bytes = 0;
};

struct GatherFeatures {
  double port_cycles = 0;      // busiest core port: max over cores of its messages' port time (bytes / bandwidth, in whole cycles per exchange message or per mesh packet)
  double link_cycles = 0;      // busiest mesh link under X-then-Y routing, whole cycles per packet (0 on an exchange chip)
  double chip_link_cycles = 0; // busiest link between chips: bytes / its rate, routed in dimension order as the system routes
  double order_cycles = 0;     // the messages (on a mesh: packets) in program order under port holding (a max-plus recurrence), until the last is taken; on a mesh at least link_cycles
  double messages = 0;         // most messages any core sends or receives
  double local_cycles = 0;     // most local copying on a core, on the vector unit (per piece: issue + lane groups)
  double latency_cycles = 0;   // the longest path's fixed latency (exchange latency, or hops x hop latency)
};

// The config's fabric as the cost model sees it: per-core ports, mesh links (torus wrap taken the
// short way), and the links between chips, each dimension in order (a ring the shorter way, ties
// going up; a unidirectional ring up; fully connected directly; a switch up from the sender and
// down into the receiver), every link at its dimension's rate.
class Fabric {
 public:
  explicit Fabric(const sim::Config& cfg);
  // `messages` in the order the program issues them (each core sends its own in list order).
  GatherFeatures gather(const std::vector<Message>& messages) const;
  // A shift round: every (sender, receiver) pair moves `bytes` at once.
  GatherFeatures round(const std::vector<std::pair<std::size_t, std::size_t>>& pairs, Bytes bytes) const;
  // A local copy of `bytes` (fp16) on the vector unit: issue plus lane groups.
  double copy_cycles(Bytes bytes) const;

 private:
  double hops(std::uint32_t from, std::uint32_t to) const;
  double port_time(Bytes bytes) const;
  double in_order(const std::vector<Message>& messages) const;
  // Cycles a mesh channel at `bytes_per_cycle` is held by a message of `bytes`.
  double packet_cycles(Bytes bytes, double bytes_per_cycle) const;
  void route(std::uint32_t from, std::uint32_t to, double cycles, std::vector<double>& link_cycles) const;
  // What a message of `bytes` occupies a chip link for, in bytes at the link's rate.
  double chip_link_bytes(Bytes bytes) const;
  // Adds `bytes` to every chip link from chip `from` to chip `to` (chip_links_, by link_index);
  // returns the links' latency along the way.
  double route_chips(std::uint32_t from, std::uint32_t to, double bytes) const;
  // The slot of chip `chip`'s link `slot` of dimension d: ring 0 up, 1 down; unidirectional ring
  // 0; fully connected the coordinate it leads to; switch 0 up to the switch, 1 down into `chip`.
  std::size_t link_index(std::uint32_t chip, std::size_t d, std::uint32_t slot) const {
    return (static_cast<std::size_t>(chip) * dims_ + d) * slots_ + slot;
  }
  const sim::Config& cfg_;
  double send_bw_ = 1, recv_bw_ = 1, link_bw_ = 1, hop_latency_ = 0, latency_ = 0;
  std::uint32_t rows_ = 0, cols_ = 0, chip_cores_ = 1;
  std::size_t dims_ = 0, slots_ = 2;
  Bytes packet_bytes_ = 256;
  bool torus_ = false;
  double copy_cycles_per_group_ = 1, lanes_ = 1, vector_issue_ = 0;
  // Scratch of gather(), per core, per link and per chip (kept to allocate once per fabric).
  mutable std::vector<double> sent_, recv_, local_, sends_, recvs_, links_, chip_links_, taken_;
  struct PutUp {  // a sender's next message of in_order(), put up at `time`
    double time;
    std::uint32_t core;
  };
  mutable std::array<std::vector<PutUp>, 65> radix_;  // in_order()'s radix heap of senders
  mutable std::vector<std::uint64_t> group_bits_;     // and the senders of the least time, a bit per core
  mutable std::vector<std::size_t> sender_start_, sender_next_;  // per core: its first message in order_*, its next
  mutable std::vector<std::uint32_t> order_to_;                   // the messages' receivers, sender by sender, in list order
  mutable std::vector<double> order_time_;                        // and their port times
  mutable std::vector<double> durations_;  // per message of the gather: its port time
};

}  // namespace tessera::cost
