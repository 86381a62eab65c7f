#include "sim/collective/collective.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/common/error.h"
#include "sim/collective/engines.h"
#include "sim/noc/flit_net.h"

namespace tessera::sim {

namespace {

constexpr const char* kOps[] = {"allreduce", "reducescatter", "allgather", "alltoall"};
constexpr const char* kAlgorithms[] = {"ring", "direct", "hierarchical", "halving-doubling"};

// Builds one chunk's messages. `last[c]` holds what chip c waits for before its next send in
// this chunk: the messages that brought its data so far.
class ChunkBuilder {
 public:
  // `start[c]`: what chip c waits for before its first send of this chunk.
  ChunkBuilder(CollectivePlan& plan, std::vector<std::vector<std::uint32_t>> start)
      : plan_(plan), last_(std::move(start)) {}
  // What each chip has received last: once it has, the chip is done with this chunk.
  std::vector<std::vector<std::uint32_t>> take_last() { return std::move(last_); }

  // The chunk and phase the next messages belong to.
  void at(std::uint32_t chunk, std::uint8_t phase) {
    chunk_ = chunk;
    phase_ = phase;
  }

  // `steps` ring steps over `ring`, member j sending to member j + 1 what it holds after the
  // step before; the first `reduce_steps` are reductions (reduce-scatter), the rest copies.
  void ring_steps(const std::vector<std::uint32_t>& ring, Bytes message_bytes, std::uint32_t steps,
                  std::uint32_t reduce_steps) {
    const std::size_t n = ring.size();
    std::vector<std::uint32_t> sent(n);
    for (std::uint32_t k = 0; k < steps; ++k) {
      for (std::size_t j = 0; j < n; ++j)
        sent[j] = add(ring[j], ring[(j + 1) % n], message_bytes, last_[ring[j]], k < reduce_steps);
      for (std::size_t j = 0; j < n; ++j) last_[ring[(j + 1) % n]].assign(1, sent[j]);  // reuses the vector: no allocation per step
    }
  }
  // Half the data each way round a bidirectional ring: two counter-rotating rings whose steps
  // wait only on their own ring; the next phase waits on both.
  void ring_both_ways(const std::vector<std::uint32_t>& ring, Bytes half_message_bytes, std::uint32_t steps,
                      std::uint32_t reduce_steps) {
    std::vector<std::vector<std::uint32_t>> start, forward;  // of the ring's members only
    for (std::uint32_t c : ring) start.push_back(last_[c]);
    ring_steps(ring, half_message_bytes, steps, reduce_steps);
    for (std::size_t i = 0; i < ring.size(); ++i) {
      forward.push_back(std::move(last_[ring[i]]));
      last_[ring[i]] = std::move(start[i]);
    }
    ring_steps(std::vector<std::uint32_t>(ring.rbegin(), ring.rend()), half_message_bytes, steps, reduce_steps);
    for (std::size_t i = 0; i < ring.size(); ++i)
      last_[ring[i]].insert(last_[ring[i]].end(), forward[i].begin(), forward[i].end());
  }
  // Recursive halving (reduce-scatter), then recursive doubling (all-gather), over `group` of a
  // power-of-two size n, members in index order: step by step each member exchanges with the
  // one at distance d = n/2, n/4, ..., 1 (xor) half of what it holds, and the doubling retraces
  // the steps in reverse with what it has gathered. Each step waits for the step before.
  void halving_doubling(const std::vector<std::uint32_t>& group, Bytes buffer, bool scatter, bool gather) {
    const std::size_t n = group.size();
    std::vector<std::size_t> distances;
    for (std::size_t d = n / 2; d >= 1; d /= 2) distances.push_back(d);
    std::vector<std::uint32_t> sent(n);
    const auto step = [&](std::size_t d, Bytes bytes, bool reduce) {
      for (std::size_t j = 0; j < n; ++j) sent[j] = add(group[j], group[j ^ d], bytes, last_[group[j]], reduce);
      for (std::size_t j = 0; j < n; ++j) last_[group[j ^ d]].assign(1, sent[j]);
    };
    Bytes held = buffer;
    if (scatter)
      for (std::size_t d : distances) step(d, held /= 2, true);
    else
      held = buffer / n;
    if (gather)
      for (auto it = distances.rbegin(); it != distances.rend(); ++it, held *= 2) step(*it, held, false);
  }
  // Every member sends `message_bytes` to every other at once (after what it waits for); each
  // then waits for all it received.
  void direct(const std::vector<std::uint32_t>& group, Bytes message_bytes, bool reduce) {
    std::vector<std::vector<std::uint32_t>> in(group.size());
    for (std::size_t j = 0; j < group.size(); ++j)
      for (std::size_t k = 1; k < group.size(); ++k) {
        const std::size_t to = (j + k) % group.size();  // spread: each starts with its next
        in[to].push_back(add(group[j], group[to], message_bytes, last_[group[j]], reduce));
      }
    for (std::size_t j = 0; j < group.size(); ++j) last_[group[j]] = std::move(in[j]);
  }

 private:
  std::uint32_t add(std::uint32_t src, std::uint32_t dst, Bytes bytes, const std::vector<std::uint32_t>& waits,
                    bool reduce) {
    CollectiveMessage m;
    m.src = src;
    m.dst = dst;
    m.bytes = bytes;
    m.chunk = chunk_;
    m.phase = phase_;
    m.reduce = reduce;
    m.waits_first = static_cast<std::uint32_t>(plan_.waits.size());
    m.waits_count = static_cast<std::uint32_t>(waits.size());
    plan_.waits.insert(plan_.waits.end(), waits.begin(), waits.end());
    plan_.messages.push_back(m);
    return static_cast<std::uint32_t>(plan_.messages.size() - 1);
  }

  CollectivePlan& plan_;
  std::vector<std::vector<std::uint32_t>> last_;
  std::uint32_t chunk_ = 0;
  std::uint8_t phase_ = 0;
};

// The rings (groups) of dimension d: chips that differ only in coordinate d, in coordinate order.
std::vector<std::vector<std::uint32_t>> groups_of(const SystemConfig& s, std::size_t d) {
  std::vector<std::vector<std::uint32_t>> out;
  for (std::uint32_t c = 0; c < s.chips; ++c) {
    if (s.coordinate(c, d) != 0) continue;
    std::vector<std::uint32_t> g;
    for (std::uint32_t x = 0; x < s.dimensions[d].size; ++x) g.push_back(s.with_coordinate(c, d, x));
    out.push_back(std::move(g));
  }
  return out;
}

// Divides `bytes` into `parts` equal messages, or fails saying which division does not go.
Bytes share(Bytes bytes, std::uint64_t parts, const CollectiveSpec& spec, const std::string& what) {
  if (parts == 0 || bytes % parts != 0 || bytes / parts == 0)
    throw Error(fmt::format("collective: {} {} with chunk_bytes {}: {} bytes (a chunk's share in this phase) do "
                            "not divide into {} equal messages ({}); choose a chunk size that does",
                            collective_op_name(spec.op), collective_algorithm_name(spec.algorithm),
                            spec.chunk_bytes, bytes, parts, what));
  return bytes / parts;
}

struct Phase {
  enum Kind { ReduceScatter, AllGather, AllReduce } kind;
  std::size_t dimension;  // kAll: one ring over every chip in index order
  Bytes buffer;           // per member, before a reduce-scatter / after an all-gather
};
constexpr std::size_t kAll = ~std::size_t{0};

// The phases of a ring or hierarchical reduction collective on a chunk of `chunk` bytes.
std::vector<Phase> phases_of(const Config& cfg, const CollectiveSpec& spec, Bytes chunk) {
  const SystemConfig& s = cfg.system;
  std::vector<Phase> out;
  std::vector<std::size_t> dims;  // dimensions with more than one chip
  for (std::size_t d = 0; d < s.dimensions.size(); ++d)
    if (s.dimensions[d].size > 1) dims.push_back(d);
  if (spec.algorithm == CollectiveAlgorithm::Ring || spec.algorithm == CollectiveAlgorithm::HalvingDoubling) {
    // one ring over every chip: the system's one dimension if it has one (so a bidirectional
    // ring is used both ways), else the chips in index order
    const auto kind = spec.op == CollectiveOp::AllReduce ? Phase::AllReduce
                      : spec.op == CollectiveOp::ReduceScatter ? Phase::ReduceScatter : Phase::AllGather;
    if (spec.algorithm == CollectiveAlgorithm::HalvingDoubling) return {{kind, kAll, chunk}};
    return {{kind, dims.size() == 1 ? dims[0] : kAll, chunk}};
  }
  if (spec.op == CollectiveOp::AllReduce) {
    // reduce-scatter on the first dimension, all-reduce of that share on each other one,
    // all-gather on the first (the ACE paper's 4-phase torus all-reduce)
    const Bytes part = chunk / s.dimensions[dims[0]].size;
    out.push_back({Phase::ReduceScatter, dims[0], chunk});
    for (std::size_t i = 1; i < dims.size(); ++i) out.push_back({Phase::AllReduce, dims[i], part});
    out.push_back({Phase::AllGather, dims[0], chunk});
  } else if (spec.op == CollectiveOp::ReduceScatter) {
    Bytes b = chunk;
    for (std::size_t d : dims) {
      out.push_back({Phase::ReduceScatter, d, b});
      b /= s.dimensions[d].size;
    }
  } else {
    // the mirror of the reduce-scatter: the last dimension first, gathering the share each chip
    // holds after the dimensions before it; the first dimension last, gathering the whole chunk
    std::vector<Bytes> sizes(dims.size());
    Bytes b = chunk;
    for (std::size_t i = 0; i < dims.size(); ++i) {
      sizes[i] = b;
      b /= s.dimensions[dims[i]].size;
    }
    for (std::size_t i = dims.size(); i-- > 0;) out.push_back({Phase::AllGather, dims[i], sizes[i]});
  }
  return out;
}

// Adds one phase's messages; returns what the phase asks of a chip.
CollectivePhase add_phase(const Config& cfg, const CollectiveSpec& spec, const Phase& ph, ChunkBuilder& b) {
  std::vector<std::vector<std::uint32_t>> groups;
  if (ph.dimension == kAll) {
    groups.emplace_back(cfg.system.chips);
    for (std::uint32_t c = 0; c < cfg.system.chips; ++c) groups[0][c] = c;
  } else {
    groups = groups_of(cfg.system, ph.dimension);
  }
  const std::uint32_t n = static_cast<std::uint32_t>(groups[0].size());
  const std::string what = spec.algorithm == CollectiveAlgorithm::Direct ? fmt::format("one per chip of {}", n)
                           : ph.dimension == kAll ? fmt::format("a ring of {} chips", n)
                                                  : fmt::format("dimension {} of {} chips", ph.dimension, n);
  const std::uint32_t steps = ph.kind == Phase::AllReduce ? 2 * (n - 1) : n - 1;
  const std::uint32_t reduce_steps = ph.kind == Phase::AllGather ? 0 : n - 1;
  // a ring phase on a bidirectional ring dimension of 3 or more chips uses both directions
  const bool both_ways = spec.algorithm != CollectiveAlgorithm::Direct && ph.dimension != kAll && n > 2 &&
                         cfg.system.dimensions[ph.dimension].kind == DimensionKind::Ring;
  const Bytes message = share(ph.buffer, both_ways ? 2 * n : n, spec, both_ways ? what + ", half each way" : what);
  if (spec.algorithm == CollectiveAlgorithm::HalvingDoubling) {
    if (n & (n - 1))
      throw Error(fmt::format("collective: halving-doubling needs a power-of-two number of chips, not {}", n));
    b.halving_doubling(groups[0], ph.buffer, ph.kind != Phase::AllGather, ph.kind != Phase::ReduceScatter);
    std::uint32_t log2n = 0;
    while ((1u << log2n) < n) ++log2n;
    const Dimension& d0 = cfg.system.dimensions[0];
    const std::uint32_t rounds = ph.kind == Phase::AllReduce ? 2 * log2n : log2n;
    const Bytes sent = ph.buffer / n * (n - 1) * (ph.kind == Phase::AllReduce ? 2 : 1);
    return {ph.buffer, ph.kind == Phase::AllGather ? ph.buffer / n : ph.buffer, d0.bytes_per_cycle(), sent,
            rounds * double(d0.link_latency_cycles) + double(sent) / d0.bytes_per_cycle()};
  }
  for (const auto& g : groups) {
    if (spec.algorithm == CollectiveAlgorithm::Direct) {
      b.direct(g, message, spec.op != CollectiveOp::AllToAll);
      if (ph.kind == Phase::AllReduce) b.direct(g, message, false);
    } else if (both_ways) {
      b.ring_both_ways(g, message, steps, reduce_steps);
    } else {
      b.ring_steps(g, message, steps, reduce_steps);
    }
  }
  // the bandwidth a chip's links give the phase: its dimension's links (both ways on a
  // bidirectional ring); a phase over every chip counts the first dimension's
  const Dimension& dim = cfg.system.dimensions[ph.dimension == kAll ? 0 : ph.dimension];
  const std::uint32_t rounds = spec.algorithm == CollectiveAlgorithm::Direct ? (ph.kind == Phase::AllReduce ? 2 : 1)
                                                                              : steps;
  const Bytes sent = message * rounds * (spec.algorithm == CollectiveAlgorithm::Direct ? n - 1 : both_ways ? 2 : 1);
  return {ph.buffer, ph.kind == Phase::AllGather ? ph.buffer / n : ph.buffer,
          dim.bytes_per_cycle() * (both_ways ? 2 : 1), sent,
          rounds * (double(dim.link_latency_cycles) + double(message) / dim.bytes_per_cycle())};
}

}  // namespace

CollectiveOp parse_collective_op(const std::string& name) {
  for (int i = 0; i < 4; ++i)
    if (name == kOps[i]) return static_cast<CollectiveOp>(i);
  throw Error(fmt::format("unknown collective \"{}\" (expected allreduce, reducescatter, allgather or alltoall)", name));
}

CollectiveAlgorithm parse_collective_algorithm(const std::string& name) {
  for (int i = 0; i < 4; ++i)
    if (name == kAlgorithms[i]) return static_cast<CollectiveAlgorithm>(i);
  throw Error(fmt::format("unknown collective algorithm \"{}\" (expected ring, direct, hierarchical or "
                          "halving-doubling)", name));
}

const char* collective_op_name(CollectiveOp op) { return kOps[static_cast<int>(op)]; }
const char* collective_algorithm_name(CollectiveAlgorithm a) { return kAlgorithms[static_cast<int>(a)]; }

// At most this many messages in one plan (about 80 bytes of plan and engine state each: 10 GiB
// at the limit). The largest shipped case, GNMT's training on 128 NPUs with shares held while
// collectives are in flight (two iterations' all-reduces in one plan), has 67.2 M; the 1024-NPU
// ring all-reduce of 256 MiB at message granularity 2.1 M.
constexpr std::uint64_t kMaxPlanMessages = std::uint64_t{1} << 27;

void append_collective(const Config& cfg, const CollectiveSpec& spec, Cycles release, CollectivePlan& plan) {
  const std::uint32_t p = cfg.system.chips;
  if (p < 2) throw Error(fmt::format("collective: config {} has one chip; a collective needs two or more", cfg.name));
  if (spec.bytes == 0) throw Error("collective: bytes must be > 0");
  const Bytes chunk = spec.chunk_bytes == 0 ? spec.bytes : std::min(spec.chunk_bytes, spec.bytes);
  if (spec.bytes % chunk != 0)
    throw Error(fmt::format("collective: bytes {} is not a whole number of chunks of {} bytes (chunk_bytes)",
                            spec.bytes, chunk));
  if (spec.op == CollectiveOp::AllToAll && spec.algorithm != CollectiveAlgorithm::Direct)
    throw Error(fmt::format("collective: alltoall runs with the direct algorithm (routed in dimension order), "
                            "not {}", collective_algorithm_name(spec.algorithm)));
  if (spec.algorithm == CollectiveAlgorithm::Direct && spec.op != CollectiveOp::AllToAll &&
      spec.op != CollectiveOp::AllReduce)
    throw Error(fmt::format("collective: {} has the ring and hierarchical algorithms; direct is for "
                            "allreduce and alltoall", collective_op_name(spec.op)));
  // Every message of the plan is held in memory (and simulated): bound their number before
  // building them, so that a mistyped size is a named error and not an exhausted host.
  const std::uint64_t chunk_count = spec.bytes / chunk;
  if (chunk_count > kMaxPlanMessages)
    throw Error(fmt::format("collective: {} bytes in chunks of {} bytes make {} chunks; at most {} messages in a plan "
                            "(use larger chunks: chunk_bytes, --chunk-bytes)", spec.bytes, chunk, chunk_count,
                            kMaxPlanMessages));
  const auto chunks = static_cast<std::uint32_t>(chunk_count);
  const std::uint32_t first = plan.chunks, id = plan.collectives++;
  // A chip starts chunk c once it is done with chunk c - chunks_in_flight (of this collective).
  const std::uint32_t window = spec.chunks_in_flight == 0 ? chunks : spec.chunks_in_flight;
  std::vector<std::vector<std::vector<std::uint32_t>>> done;  // per chunk, per chip
  const std::size_t messages_before = plan.messages.size(), waits_before = plan.waits.size();
  for (std::uint32_t i = 0; i < chunks; ++i) {
    const std::uint32_t c = first + i;
    ChunkBuilder b(plan, i >= window ? std::move(done[i - window]) : std::vector<std::vector<std::uint32_t>>(p));
    std::vector<CollectivePhase> phases;
    if (spec.op == CollectiveOp::AllToAll) {
      std::vector<std::uint32_t> all(p);
      for (std::uint32_t j = 0; j < p; ++j) all[j] = j;
      b.at(c, 0);
      b.direct(all, share(chunk, p, spec, fmt::format("one per chip of {}", p)), false);
      const Dimension& d0 = cfg.system.dimensions[0];
      phases.push_back({chunk, chunk, d0.bytes_per_cycle(), chunk / p * (p - 1),
                        double(d0.link_latency_cycles) + double(chunk / p) / d0.bytes_per_cycle()});
    } else {
      Phase whole{Phase::AllReduce, kAll, chunk};
      const std::vector<Phase> list =
          spec.algorithm == CollectiveAlgorithm::Direct ? std::vector<Phase>{whole} : phases_of(cfg, spec, chunk);
      for (std::size_t k = 0; k < list.size(); ++k) {
        b.at(c, static_cast<std::uint8_t>(k));
        phases.push_back(add_phase(cfg, spec, list[k], b));
      }
    }
    // the collective with the most phases (then the largest chunk) sizes an engine's SRAM
    if (i == 0) {
      plan.collective_phases.push_back(phases);
      if (plan.phases.empty() || phases.size() > plan.phases.size() ||
          (phases.size() == plan.phases.size() && chunk > plan.chunk_bytes)) {
        plan.phases = std::move(phases);
        plan.chunk_bytes = chunk;
      }
    }
    done.push_back(b.take_last());
    if (i == 0) {  // every chunk has the first one's messages: room for them all at once
      const std::uint64_t per_chunk = plan.messages.size() - messages_before;
      if (messages_before + per_chunk * chunk_count > kMaxPlanMessages)
        throw Error(fmt::format("collective: {} chunks of {} bytes with {} messages each make {} messages{}; at most "
                                "{} in a plan (use larger chunks: chunk_bytes, --chunk-bytes)",
                                chunk_count, chunk, per_chunk, per_chunk * chunk_count,
                                messages_before ? fmt::format(" ({} with the plan's earlier collectives)",
                                                              messages_before + per_chunk * chunk_count)
                                                : std::string(),
                                kMaxPlanMessages));
      plan.messages.reserve(plan.messages.size() + std::size_t{chunks - 1} * per_chunk);
      plan.waits.reserve(plan.waits.size() + std::size_t{chunks - 1} * (plan.waits.size() - waits_before));
    }
    plan.chunk_sizes.push_back(chunk);
    plan.chunk_collective.push_back(id);
  }
  plan.chunks += chunks;
  plan.collective_release.push_back(release);
}

CollectivePlan plan_collective(const Config& cfg, const CollectiveSpec& spec) {
  CollectivePlan plan;
  append_collective(cfg, spec, 0, plan);
  return plan;
}

namespace {

double traffic_factor(CollectiveOp op, std::uint32_t p) {
  const double f = double(p - 1) / p;
  return op == CollectiveOp::AllReduce ? 2 * f : f;
}

void require_afi(const Config& cfg) {
  if (!cfg.system.afi)
    throw Error(fmt::format("collective: config {} has no system.afi: collective engines send through the AFI "
                            "(docs/config.md)", cfg.name));
}
// Link use of the chip links and switch ports over `cycles`.
void link_use(Transport& net, Cycles cycles, CollectiveResult& r) {
  r.packet_hops = net.hops();
  std::vector<ChannelStats*> stats;
  net.stats(stats);
  for (const ChannelStats* s : stats)
    if (s->name.rfind("link.", 0) == 0 || s->name.rfind("switch", 0) == 0)
      r.link_utilization.emplace_back(s->name, cycles ? double(s->busy_cycles) / double(cycles) : 0.0);
}


// Runs `plan` alone on a fresh network: the cycle each collective is done; r gets the totals.
std::vector<Cycles> run_plan(const Config& cfg, const std::string& engine, const CollectivePlan& plan,
                             CollectiveResult& r) {
  require_afi(cfg);
  const std::unique_ptr<RoutedTransport> links = make_chip_links(cfg);  // the collective sends from the AFIs only
  RoutedTransport& net = *links;
  std::vector<Cycles> done = run_engine(cfg, engine, plan, net, r);
  r.messages = plan.messages.size();
  link_use(net, r.cycles, r);
  return done;
}
}  // namespace

CollectivePlan plan_collectives(const Config& cfg, const std::string& engine,
                                const std::vector<std::pair<CollectiveSpec, Cycles>>& issued) {
  CollectivePlan plan;
  for (const auto& [spec, at] : issued) {
    CollectiveSpec planned = spec;
    if (engine == "ace") planned.chunks_in_flight = 0;
    append_collective(cfg, planned, at, plan);
  }
  return plan;
}

CollectiveBatchResult run_collectives(const Config& cfg, const std::string& engine,
                                      const std::vector<std::pair<CollectiveSpec, Cycles>>& issued) {
  CollectiveBatchResult out;
  out.done = run_plan(cfg, engine, plan_collectives(cfg, engine, issued), out.totals);
  return out;
}

CollectiveResult run_collective(const Config& cfg, const CollectiveSpec& spec) {
  const CollectivePlan plan = plan_collectives(cfg, spec.engine, {{spec, 0}});
  CollectiveResult r;
  run_plan(cfg, spec.engine, plan, r);
  r.sent_bytes.assign(cfg.system.chips, 0);
  for (const auto& m : plan.messages) r.sent_bytes[m.src] += m.bytes;
  const double seconds = double(r.cycles) / (cfg.clock_ghz * 1e9);
  r.algorithm_gb_per_s = double(spec.bytes) / seconds / 1e9;
  r.bus_gb_per_s = r.algorithm_gb_per_s * traffic_factor(spec.op, cfg.system.chips);
  r.injected_gb_per_s = double(*std::max_element(r.sent_bytes.begin(), r.sent_bytes.end())) / seconds / 1e9;
  return r;
}

Json collective_json(const Config& cfg, const CollectiveSpec& spec, const CollectiveResult& r) {
  Json links = Json::object();
  for (const auto& [name, u] : r.link_utilization) links[name] = u;
  return {{"config", cfg.name}, {"chips", cfg.system.chips},
          {"network_model", cfg.system.model == NocModel::Flit ? "flit" : "packet"},  // packet_hops: flit-hops at flit level
          {"op", collective_op_name(spec.op)},
          {"algorithm", collective_algorithm_name(spec.algorithm)}, {"engine", spec.engine},
          {"forwarding", spec.engine == "cores" || cfg.system.collective_forwarding == Forwarding::Message ? "message"
                                                                                                          : "packet"},
          {"bytes", spec.bytes}, {"chunk_bytes", spec.chunk_bytes}, {"cycles", r.cycles},
          {"seconds", double(r.cycles) / (cfg.clock_ghz * 1e9)}, {"messages", r.messages},
          {"algorithm_gb_per_s", r.algorithm_gb_per_s}, {"bus_gb_per_s", r.bus_gb_per_s},
          {"injected_gb_per_s", r.injected_gb_per_s}, {"sent_bytes_per_chip", r.sent_bytes},
          {"packet_hops", r.packet_hops}, {"link_utilization", links},
          {"memory_read_bytes_per_chip", r.memory_read_bytes}, {"memory_write_bytes_per_chip", r.memory_write_bytes},
          {"chunks_out_of_order", r.chunks_out_of_order}, {"admission_wait_cycles", r.admission_wait_cycles},
          {"ace_fsms_per_phase", r.ace_fsms_per_phase}, {"ace_partition_bytes", r.ace_partition_bytes}};
}

}  // namespace tessera::sim
