#include "compiler/cost/features.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "sim/common/error.h"

namespace tessera::cost {

namespace {

double cdiv(std::uint64_t a, std::uint64_t b) { return static_cast<double>(ceil_div(a, b)); }

double op_cycles(const sim::CoreConfig& core, sim::VecOp op) {
  return static_cast<double>(core.vector.op_cycles[static_cast<int>(op)]);
}

// Row ops make passes over each row: per lane group, the ops of every pass; per row, trees that
// combine the lanes and a few scalar ops (docs/hardware-model.md gives the passes).
struct RowOp {
  std::vector<sim::VecOp> per_group, per_row;
  int trees = 0;
};

bool row_op(const std::string& kind, RowOp& r) {
  using V = sim::VecOp;
  if (kind == "reduce_sum") r = {{V::Add}, {}, 1};
  else if (kind == "reduce_max") r = {{V::Max}, {}, 1};
  else if (kind == "softmax") r = {{V::Max, V::Sub, V::Exp, V::Add, V::Mul}, {V::Div}, 2};
  else if (kind == "layernorm") r = {{V::Add, V::Sub, V::Mul, V::Add, V::Sub, V::Mul, V::Mul, V::Add}, {V::Rsqrt}, 2};
  else return false;
  return true;
}

}  // namespace

ComputeFeatures compute_features(const sim::CoreConfig& core, const StepShape& s, double steps) {
  ComputeFeatures f;
  if (s.kind == "matmul") {
    const auto& mu = core.matrix;
    const double fp16 = 2;
    const double tiles = static_cast<double>(s.batch) * cdiv(s.m, mu.tile_m) * cdiv(s.n, mu.tile_n) * cdiv(s.k, mu.tile_k);
    const double blocks = static_cast<double>(s.batch) * cdiv(s.m, mu.tile_m) * cdiv(s.n, mu.tile_n);
    const double tile_macs = static_cast<double>(mu.tile_m) * mu.tile_n * mu.tile_k;
    const auto rate = mu.macs_per_cycle.find(Dtype::Fp16);
    if (rate == mu.macs_per_cycle.end()) throw Error("cost model: the config's matrix unit has no fp16 MAC rate (matrix.macs_per_cycle.fp16)");
    const double mac_rate = static_cast<double>(rate->second);
    f.mac_cycles = steps * (static_cast<double>(mu.issue_cycles + mu.pipeline_fill_cycles) + tiles * tile_macs / mac_rate);
    f.fetch_cycles = steps * tiles * (static_cast<double>(mu.tile_m) * mu.tile_k + static_cast<double>(mu.tile_k) * mu.tile_n) *
                     fp16 / core.sram_read_bytes_per_cycle;
    f.writeback_cycles = steps * blocks * static_cast<double>(mu.tile_m) * mu.tile_n * fp16 / core.sram_write_bytes_per_cycle;
    return f;
  }
  const double issue = static_cast<double>(core.vector.issue_cycles);
  if (auto op = sim::parse_vec_op(s.kind)) {
    f.vector_cycles = steps * (issue + cdiv(s.elements, core.vector.lanes) * op_cycles(core, *op));
    return f;
  }
  RowOp r;
  if (!row_op(s.kind, r)) throw Error(fmt::format("cost model: compute kind '{}' has no features", s.kind));
  double group = 0, row = std::ceil(std::log2(std::max<double>(1, core.vector.lanes))) * r.trees;
  for (auto op : r.per_group) group += op_cycles(core, op);
  for (auto op : r.per_row) row += op_cycles(core, op);
  f.vector_cycles = steps * (issue + static_cast<double>(s.rows) * (cdiv(s.cols, core.vector.lanes) * group + row));
  return f;
}

double offchip_cycles(const sim::Config& cfg, Bytes bytes) {
  if (bytes == 0) return 0;
  const auto& o = cfg.chip.offchip;
  return static_cast<double>(o.latency_cycles) +
         static_cast<double>(bytes) / (static_cast<double>(cfg.system.chips) * o.channels * o.channel_bytes_per_cycle);
}

Fabric::Fabric(const sim::Config& cfg) : cfg_(cfg), chip_cores_(cfg.chip.cores) {
  if (cfg.chip.exchange) {
    send_bw_ = cfg.chip.exchange->send_bytes_per_cycle;
    recv_bw_ = cfg.chip.exchange->recv_bytes_per_cycle;
    latency_ = static_cast<double>(cfg.chip.exchange->latency_cycles);
  } else {
    const auto& m = *cfg.chip.mesh;
    send_bw_ = recv_bw_ = m.ni_bytes_per_cycle;
    link_bw_ = m.link_bytes_per_cycle;
    hop_latency_ = static_cast<double>(m.router_latency_cycles + m.link_latency_cycles);
    rows_ = m.rows;
    cols_ = m.cols;
    torus_ = m.torus;
    packet_bytes_ = m.packet_bytes;
  }
  dims_ = cfg.system.dimensions.size();
  for (const auto& d : cfg.system.dimensions)
    if (d.kind == sim::DimensionKind::FullyConnected) slots_ = std::max<std::size_t>(slots_, d.size);
  lanes_ = cfg.chip.core.vector.lanes;
  copy_cycles_per_group_ = op_cycles(cfg.chip.core, sim::VecOp::Copy);
  vector_issue_ = static_cast<double>(cfg.chip.core.vector.issue_cycles);
}

namespace {
// Steps from a to b along a ring or line of n positions, and the direction (+1 / -1).
std::pair<std::uint32_t, int> way(std::uint32_t a, std::uint32_t b, std::uint32_t n, bool wrap) {
  const std::uint32_t fwd = b >= a ? b - a : b + n - a;
  if (!wrap) return {b >= a ? b - a : a - b, b >= a ? 1 : -1};
  return fwd <= n - fwd ? std::make_pair(fwd, 1) : std::make_pair(n - fwd, -1);
}
}  // namespace

double Fabric::hops(std::uint32_t from, std::uint32_t to) const {
  if (rows_ == 0) return 0;
  const std::uint32_t a = from % chip_cores_, b = to % chip_cores_;
  return way(a % cols_, b % cols_, cols_, torus_).first + way(a / cols_, b / cols_, rows_, torus_).first;
}

// Adds `cycles` to every mesh link of the X-then-Y route (links indexed node * 4 + direction).
void Fabric::route(std::uint32_t from, std::uint32_t to, double cycles, std::vector<double>& link_cycles) const {
  const std::uint32_t chip = from / chip_cores_, base = chip * chip_cores_ * 4;
  std::uint32_t c = (from % chip_cores_) % cols_, r = (from % chip_cores_) / cols_;
  const std::uint32_t tc = (to % chip_cores_) % cols_, tr = (to % chip_cores_) / cols_;
  auto [nx, dx] = way(c, tc, cols_, torus_);
  for (; nx > 0; --nx) {
    link_cycles[base + (r * cols_ + c) * 4 + (dx > 0 ? 0 : 1)] += cycles;
    c = (c + cols_ + static_cast<std::uint32_t>(dx)) % cols_;
  }
  auto [ny, dy] = way(r, tr, rows_, torus_);
  for (; ny > 0; --ny) {
    link_cycles[base + (r * cols_ + c) * 4 + (dy > 0 ? 2 : 3)] += cycles;
    r = (r + rows_ + static_cast<std::uint32_t>(dy)) % rows_;
  }
}

// A chip link carries a message cut into packets of system.packet_bytes, each for its bytes'
// time but at least a flit's (system.flit_bytes): many small messages cost more than their bytes.
double Fabric::chip_link_bytes(Bytes bytes) const {
  const Bytes packet = cfg_.system.packet_bytes, flit = cfg_.system.flit_bytes;
  const Bytes full = bytes / packet, rest = bytes % packet;
  return static_cast<double>(full * std::max(packet, flit) + (rest > 0 ? std::max(rest, flit) : 0));
}

double Fabric::route_chips(std::uint32_t from, std::uint32_t to, double bytes) const {
  const sim::SystemConfig& s = cfg_.system;
  std::uint32_t c = from;
  double latency = 0;
  for (std::size_t d = 0; d < dims_; ++d) {
    const sim::Dimension& dim = s.dimensions[d];
    const std::uint32_t x = s.coordinate(c, d), y = s.coordinate(to, d), n = dim.size;
    if (x == y) continue;
    const std::uint32_t next = s.with_coordinate(c, d, y);
    const auto link_latency = static_cast<double>(dim.link_latency_cycles);
    switch (dim.kind) {
      case sim::DimensionKind::FullyConnected:
        chip_links_[link_index(c, d, y)] += bytes;
        latency += link_latency;
        break;
      case sim::DimensionKind::Switch:
        chip_links_[link_index(c, d, 0)] += bytes;
        chip_links_[link_index(next, d, 1)] += bytes;
        latency += 2 * link_latency;
        break;
      default: {  // a ring: hop by hop, the shorter way (ties up); a unidirectional ring: up
        const std::uint32_t up = (y + n - x) % n;
        const bool go_up = dim.kind == sim::DimensionKind::UnidirectionalRing || up <= n - up;
        for (std::uint32_t k = x, hops = go_up ? up : n - up; hops > 0; --hops) {
          chip_links_[link_index(s.with_coordinate(c, d, k), d, go_up ? 0 : 1)] += bytes;
          k = go_up ? (k + 1) % n : (k + n - 1) % n;
          latency += link_latency;
        }
      }
    }
    c = next;
  }
  return latency;
}

// A mesh channel (a link, an injection or ejection port) holds each packet for whole cycles
// (docs/hardware-model.md): a message's full packets and its last, partial one, each rounded
// up. Many small messages cost a cycle each, not their bytes.
double Fabric::packet_cycles(Bytes bytes, double bytes_per_cycle) const {
  const Bytes full = bytes / packet_bytes_, rest = bytes % packet_bytes_;
  const auto whole = [&](Bytes b) { return std::ceil(static_cast<double>(b) / bytes_per_cycle); };
  return static_cast<double>(full) * whole(packet_bytes_) + (rest > 0 ? whole(rest) : 0.0);
}

// A message holds its ports for whole cycles (an exchange transfer), or each of its packets for
// whole cycles (a mesh injection or ejection port).
double Fabric::port_time(Bytes bytes) const {
  const auto b = static_cast<double>(bytes);
  if (rows_ == 0) return std::max(std::ceil(b / send_bw_), std::ceil(b / recv_bw_));
  return packet_cycles(bytes, std::min(send_bw_, recv_bw_));
}

GatherFeatures Fabric::gather(const std::vector<Message>& messages) const {
  GatherFeatures f;
  if (messages.empty()) return f;
  const std::uint32_t cores = cfg_.total_cores(), chips = cfg_.system.chips;
  for (auto* v : {&sent_, &recv_, &local_, &sends_, &recvs_}) v->assign(cores, 0);
  links_.assign(rows_ ? static_cast<std::size_t>(cores) * 4 : 0, 0);
  chip_links_.assign(chips > 1 ? static_cast<std::size_t>(chips) * dims_ * slots_ : 0, 0);
  auto& sent = sent_;
  auto& recv = recv_;
  auto& local = local_;
  auto& sends = sends_;
  auto& recvs = recvs_;
  auto& links = links_;
  durations_.resize(messages.size());
  Bytes last_bytes = 0;
  double last_time = port_time(0);  // messages of one gather are mostly of one size: divide once
  for (std::size_t i = 0; i < messages.size(); ++i) {
    const Message& m = messages[i];
    if (m.from == m.to) {  // a copy on the vector unit, issued per piece
      local[m.from] += copy_cycles(m.bytes);
      continue;
    }
    if (m.bytes != last_bytes) {
      last_bytes = m.bytes;
      last_time = port_time(m.bytes);
    }
    const double d = durations_[i] = last_time;
    sent[m.from] += d;
    recv[m.to] += d;
    sends[m.from] += 1;
    recvs[m.to] += 1;
    const std::uint32_t cf = m.from / chip_cores_, ct = m.to / chip_cores_;
    double chip_latency = 0;
    if (cf != ct) chip_latency = route_chips(cf, ct, chip_link_bytes(m.bytes));
    else if (rows_) route(m.from, m.to, packet_cycles(m.bytes, link_bw_), links);
    const double lat = latency_ + hops(m.from, m.to) * hop_latency_ + chip_latency;
    f.latency_cycles = std::max(f.latency_cycles, lat);
  }
  for (std::uint32_t c = 0; c < cores; ++c) {
    f.port_cycles = std::max({f.port_cycles, sent[c], recv[c]});
    f.messages = std::max({f.messages, sends[c], recvs[c]});
    f.local_cycles = std::max(f.local_cycles, local[c]);
  }
  for (double l : links) f.link_cycles = std::max(f.link_cycles, l);
  for (std::size_t i = 0; i < chip_links_.size(); ++i)
    if (chip_links_[i] > 0)
      f.chip_link_cycles = std::max(f.chip_link_cycles,
                                    chip_links_[i] / cfg_.system.dimensions[i / slots_ % dims_].bytes_per_cycle());
  // On a mesh the recurrence holds ports only, and the busiest link can take longer than the
  // ports' order: the gather takes at least both (docs/cost.md, "Packets on a mesh").
  f.order_cycles = std::max(in_order(messages), f.link_cycles);
  return f;
}

// The gather as the program orders it: each core sends its messages one after another, in the
// order of the list, and a message holds its sender's port until the receiver's port takes it;
// a receiver takes the waiting messages oldest first, by the time their senders put them up.
// Oldest first makes every receiver first-in first-out in put-up time, so taking the messages in
// the order they are put up (a heap of the senders, keyed by when their next message goes up;
// ties to the lower core) schedules each at once: start = max(put up, its receiver free),
// a max-plus recurrence, O(messages log senders). Port times are gather()'s.
// An earlier version went through the list receiver by receiver, which is the same for one
// operand's messages sorted by receiver but ran a joint gather's operands one after the other
// at every receiver; where the second operand's messages were put up before the first one's
// last reached a receiver it came out at half the time (docs/cost.md, "Several operands").
double Fabric::in_order(const std::vector<Message>& messages) const {
  const std::size_t cores = sent_.size();
  // Each sender's messages in list order, as receivers and port times side by side (a counting
  // sort by sender: the loop below then reads them in sequence).
  // On a mesh the entries are packets, not messages: receivers take packets oldest first, so
  // messages to one receiver interleave, and a sender's next message waits for all of them.
  const auto pieces = [&](const Message& m) -> std::size_t {
    return rows_ > 0 ? std::max<std::size_t>(1, ceil_div(m.bytes, packet_bytes_)) : 1;
  };
  sender_start_.assign(cores + 1, 0);
  for (const Message& m : messages)
    if (m.from != m.to) sender_start_[m.from + 1] += pieces(m);
  for (std::size_t c = 0; c < cores; ++c) sender_start_[c + 1] += sender_start_[c];
  order_to_.resize(sender_start_[cores]);
  order_time_.resize(sender_start_[cores]);
  sender_next_.assign(sender_start_.begin(), sender_start_.end() - 1);
  const double full_packet = rows_ > 0 ? port_time(packet_bytes_) : 0;
  for (std::size_t i = 0; i < messages.size(); ++i)
    if (messages[i].from != messages[i].to) {
      const std::size_t n = pieces(messages[i]);
      std::size_t& k = sender_next_[messages[i].from];
      for (std::size_t j = 0; j + 1 < n; ++j, ++k) {  // the full packets of a message of several
        order_to_[k] = messages[i].to;
        order_time_[k] = full_packet;
      }
      order_to_[k] = messages[i].to;  // its last (or only) one
      order_time_[k++] = n == 1 ? durations_[i] : port_time(messages[i].bytes - (n - 1) * packet_bytes_);
    }
  sender_next_.assign(sender_start_.begin(), sender_start_.end() - 1);
  // Senders by when their next message is put up, earliest (then lowest core) first. The times
  // taken never decrease (a sender's next message goes up when its last is taken, no earlier),
  // so a radix heap serves: non-negative doubles order as their bit patterns, bucket i holds the
  // senders whose time first differs from the time last taken in bit i - 1. The senders of the
  // least time are taken together, by core, from a bitmap of cores. A binary heap of the 1,472
  // senders of an exchange chip mispredicted its way down eleven levels per message: it was
  // 55-59% of compiling Llama2-7B (perf, 2026-11-29); sorting each group instead of the bitmap,
  // another 5%.
  const auto key = [](double t) {
    std::uint64_t k;
    std::memcpy(&k, &t, sizeof k);
    return k;
  };
  std::uint64_t last = 0;  // the key of the group being taken
  double last_time = 0;    // and its time
  const auto bucket = [&](std::uint64_t k) { return 64 - static_cast<std::size_t>(__builtin_clzll(k ^ last)); };
  for (auto& b : radix_) b.clear();
  group_bits_.assign((cores + 63) / 64, 0);
  std::size_t lo_word = group_bits_.size(), hi_word = 0;  // the group's words: [lo_word, hi_word)
  const auto join = [&](std::uint32_t c) {
    group_bits_[c / 64] |= std::uint64_t{1} << (c % 64);
    lo_word = std::min<std::size_t>(lo_word, c / 64);
    hi_word = std::max<std::size_t>(hi_word, c / 64 + 1);
  };
  std::size_t waiting = 0;  // senders in radix_
  for (std::uint32_t c = 0; c < cores; ++c)
    if (sender_start_[c] < sender_start_[c + 1]) join(c);  // all at 0
  taken_.assign(cores, 0);  // when each receiver's port is next free
  double end = 0;
  for (;;) {
    for (std::size_t w = lo_word; w < hi_word; ++w) {
      for (std::uint64_t bits = group_bits_[w]; bits != 0; bits &= bits - 1) {
        const auto c = static_cast<std::uint32_t>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits)));
        double t = last_time;
        for (;;) {  // its messages while they take no time: it stays the group's lowest core
          const std::size_t k = sender_next_[c]++;
          double& receiver_free = taken_[order_to_[k]];
          receiver_free = std::max(receiver_free, t) + order_time_[k];
          end = std::max(end, receiver_free);
          t = receiver_free;
          if (sender_next_[c] == sender_start_[c + 1] || key(t) != last) break;
        }
        if (sender_next_[c] == sender_start_[c + 1]) continue;
        radix_[bucket(key(t))].push_back({t, c});
        ++waiting;
      }
      group_bits_[w] = 0;
    }
    if (waiting == 0) break;
    // The next group: the first non-empty bucket re-filed around its least time.
    std::size_t i = 1;
    while (radix_[i].empty()) ++i;
    std::uint64_t least = ~std::uint64_t{0};
    for (const PutUp& u : radix_[i]) least = std::min(least, key(u.time));
    last = least;
    std::memcpy(&last_time, &least, sizeof last_time);
    lo_word = group_bits_.size();
    hi_word = 0;
    for (const PutUp& u : radix_[i]) {
      if (key(u.time) == last) {
        join(u.core);
        --waiting;
      } else {
        radix_[bucket(key(u.time))].push_back(u);  // a lower bucket than i
      }
    }
    radix_[i].clear();
  }
  return end;
}

double Fabric::copy_cycles(Bytes bytes) const {
  return vector_issue_ + std::ceil(static_cast<double>(bytes) / 2 / lanes_) * copy_cycles_per_group_;
}

GatherFeatures Fabric::round(const std::vector<std::pair<std::size_t, std::size_t>>& pairs, Bytes bytes) const {
  std::vector<Message> m;
  m.reserve(pairs.size());
  for (const auto& [from, to] : pairs) m.push_back({static_cast<std::uint32_t>(from), static_cast<std::uint32_t>(to), bytes});
  return gather(m);
}

}  // namespace tessera::cost
