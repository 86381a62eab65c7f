#include "sim/collective/engines.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <numeric>
#include <queue>
#include <unordered_set>

#include "sim/common/error.h"

namespace tessera::sim {

namespace {

constexpr std::uint32_t kNone = ~0u;

// A resource that serves requests one after another, in the order they are made, at a rate: a
// memory channel, the pool of cores running collective kernels, the ALUs. The engines make a
// request at the simulated cycle it arises, so first come, first served is decided in time
// order and nothing is reserved for a request that has not been made yet.
class RateServer {
 public:
  explicit RateServer(double bytes_per_cycle = 1) : rate_(bytes_per_cycle) {}
  // Serves `bytes` asked for at cycle t; returns the cycle the last byte is done.
  Cycles serve(Cycles t, Bytes bytes) {
    const std::int64_t start = std::max(static_cast<std::int64_t>(t) * kFrac, free_fp_);
    free_fp_ = start + static_cast<std::int64_t>(std::ceil(double(bytes) * kFrac / rate_));
    bytes_ += bytes;
    return static_cast<Cycles>((free_fp_ + kFrac - 1) / kFrac);
  }
  Bytes bytes() const { return bytes_; }

 private:
  static constexpr std::int64_t kFrac = 1024;  // time in 1/1024 cycle, as in the network
  double rate_;
  std::int64_t free_fp_ = 0;
  Bytes bytes_ = 0;
};

// What the engines share: the plan's dependencies, the chips' issues, an event queue the
// owner interleaves with the network's, and injection through the AFI. A message is `ready`
// once its source chip has issued the collective and every message it waits for is complete
// (usable at its destination); the engine decides when it goes out and when a delivered
// message is complete.
class Engine : public CollectiveEngine {
 public:
  Engine(const CollectivePlan& plan, RoutedTransport& net, std::uint64_t id_base, std::uint32_t chips)
      : plan_(plan), net_(net), id_base_(id_base), chips_(chips) {
    const std::size_t n = plan.messages.size();
    waiting_.resize(n);
    children_first_.assign(n + 1, 0);
    for (const auto& m : plan.messages)
      for (std::uint32_t i = 0; i < m.waits_count; ++i) ++children_first_[plan.waits[m.waits_first + i] + 1];
    for (std::size_t i = 1; i < children_first_.size(); ++i) children_first_[i] += children_first_[i - 1];
    children_.resize(plan.waits.size());
    std::vector<std::uint32_t> at(children_first_.begin(), children_first_.end() - 1);
    const std::size_t parts = std::size_t{plan.collectives} * chips;
    by_src_first_.assign(parts + 1, 0);
    remaining_.assign(parts, 0);
    for (std::uint32_t m = 0; m < n; ++m) {
      const CollectiveMessage& x = plan.messages[m];
      waiting_[m] = x.waits_count + 1;  // + its source chip issuing the collective
      for (std::uint32_t i = 0; i < x.waits_count; ++i) children_[at[plan.waits[x.waits_first + i]]++] = m;
      ++by_src_first_[part(x.chunk, x.src) + 1];
      ++remaining_[part(x.chunk, x.dst)];  // a chip's part: what it receives
    }
    for (std::size_t i = 1; i <= parts; ++i) by_src_first_[i] += by_src_first_[i - 1];
    by_src_.resize(n);
    std::vector<std::uint32_t> fill(by_src_first_.begin(), by_src_first_.end() - 1);
    for (std::uint32_t m = 0; m < n; ++m) by_src_[fill[part(msg(m).chunk, msg(m).src)]++] = m;
    issued_at_.assign(parts, kNever);
    done_.assign(plan.collectives, 0);
  }
  // Forwarding by packet (engines whose endpoint holds what arrives in its own buffers: ideal,
  // ace): every message goes into the network as pieces of one packet each, and a message that
  // carries on the one it waits for streams behind it (forwards_piecewise).
  void forward_by_packet(Bytes packet_bytes) {
    piece_bytes_ = packet_bytes;
    const std::size_t n = plan_.messages.size();
    pieces_out_.assign(n, 0);
    pieces_sent_.assign(n, 0);
    pieces_done_.assign(n, 0);
    stream_parent_.assign(n, kNone);
    pieces_total_ = 0;
    // the AFI sources the plan sends from, numbered from the lowest, and each message's
    source_of_.resize(n);
    std::uint32_t lo = ~0u, hi = 0;
    for (std::uint32_t m = 0; m < n; ++m) {
      source_of_[m] = net_.topology().afi_source(msg(m).src, msg(m).dst);
      lo = std::min(lo, source_of_[m]);
      hi = std::max(hi, source_of_[m]);
    }
    first_source_ = n > 0 ? lo : 0;
    for (std::uint32_t& src : source_of_) src -= first_source_;
    source_queue_.resize(n > 0 ? hi - lo + 1 : 0);
    source_out_.assign(source_queue_.size(), 0);
    for (std::uint32_t m = 0; m < n; ++m) {
      pieces_total_ += pieces(m);
      if (forwards_piecewise(m)) stream_parent_[m] = plan_.waits[msg(m).waits_first];
    }
  }

  void issue(std::uint32_t c, std::uint32_t chip, Cycles t) override {
    const std::size_t k = std::size_t{c} * chips_ + chip;
    if (issued_at_[k] != kNever)
      throw SimulationError(fmt::format("collective {}: chip {} issued it twice", c, chip));
    issued_at_[k] = t;
    for (std::uint32_t i = by_src_first_[k]; i < by_src_first_[k + 1]; ++i)
      if (--waiting_[by_src_[i]] == 0) on_ready(by_src_[i], t);
    if (remaining_[k] == 0) part_done(c, chip, t);  // nothing comes to it
    on_issue(c, chip, t);
  }
  void process(Cycles t) override {
    while (!events_.empty()) {
      const Cycles x = events_.next();
      if (x > t) break;
      batch_.clear();
      events_.take(x, batch_);  // what handling these schedules for cycle x comes round next
      for (const Event& e : batch_) {
        if (e.kind == kPieceSent) piece_sent(e.a, e.at);
        else handle(e);
      }
    }
  }
  Cycles next_event() const override { return events_.empty() ? kNever : events_.next(); }
  // A piece's id has its number + 1 above the message's (32 bits); a whole message's is the message.
  void sent(std::uint64_t id, Cycles when) override {
    schedule(when, id >> 32 == 0 ? kSent : kPieceSent, static_cast<std::uint32_t>(id));
  }
  void delivered(std::uint64_t id, Cycles when) override {
    ++delivered_;
    schedule(when, kDelivered, static_cast<std::uint32_t>(id), static_cast<std::uint32_t>(id >> 32));
  }
  void check_finished() const override {
    const std::uint64_t expected = piece_bytes_ > 0 ? pieces_total_ : plan_.messages.size();
    if (delivered_ != expected)  // what is stuck says whether the network or the plan is
      throw SimulationError(fmt::format(
          "collective: {} of {} {} never arrived ({} sent and not delivered, {} packets still in the network "
          "at cycle {}: {}; the others wait for them)",
          expected - delivered_, expected, piece_bytes_ > 0 ? "message pieces (forwarding by packet)" : "messages",
          injected_ - delivered_, net_.in_flight(), last_, net_.stuck_report()));
    check_more();
  }
  Cycles last() const override { return last_; }
  const std::vector<Cycles>& done() const override { return done_; }

 protected:
  // Event kinds; engines number theirs from kOwn.
  static constexpr std::uint8_t kInject = 0, kSent = 1, kDelivered = 2, kComplete = 3, kPieceSent = 4, kOwn = 5;
  struct Event {
    Cycles at;
    std::uint32_t a, b;
    std::uint8_t kind;
  };

  // Events come out by cycle, in the order they were scheduled within a cycle.
  void schedule(Cycles at, std::uint8_t kind, std::uint32_t a, std::uint32_t b = 0) {
    events_.push(at, {at, a, b, kind});
  }
  // Message m may go: whole, or (forwarding by packet) the pieces that may go by now, the rest
  // as the message it streams behind completes piece by piece (piece_complete).
  void inject(std::uint32_t m, Cycles t) {
    const CollectiveMessage& x = plan_.messages[m];
    const NetTopology& topo = net_.topology();
    if (piece_bytes_ == 0) {
      ++injected_;
      net_.inject(id_base_ + m, topo.afi_source(x.src, x.dst), topo.afi_sink(x.dst), x.bytes, t);
      return;
    }
    const std::uint32_t parent = stream_parent_[m];
    const std::uint32_t ready = parent == kNone ? pieces(m) : pieces_done_[parent];
    if (pieces_out_[m] >= ready) return;
    const std::uint32_t src = source_of_[m];
    source_queue_[src].push_back({m, pieces_out_[m], ready});
    pieces_out_[m] = ready;
    send_queued(src, t);
  }
  // The pieces a source has been given go to the network in the order given, at most
  // kPiecesAhead not yet sent at a time: the network's queue at the source then never runs dry
  // (a piece is sent no sooner than the one before it), and a message of a thousand pieces does
  // not hold a thousand of the network's messages at once.
  void send_queued(std::uint32_t src, Cycles t) {
    auto& q = source_queue_[src];
    const NetTopology& topo = net_.topology();
    while (!q.empty() && source_out_[src] < kPiecesAhead) {
      Queued& front = q.front();
      const CollectiveMessage& x = plan_.messages[front.message];
      const Bytes offset = Bytes{front.next} * piece_bytes_;
      ++injected_;
      ++source_out_[src];
      net_.inject(id_base_ + (std::uint64_t{front.next + 1} << 32 | front.message), first_source_ + src,
                  topo.afi_sink(x.dst),
                  std::min(piece_bytes_, x.bytes - offset), t);
      if (++front.next == front.end) q.pop_front();
    }
  }
  void piece_sent(std::uint32_t m, Cycles t) {
    const std::uint32_t src = source_of_[m];
    --source_out_[src];
    send_queued(src, t);
    if (++pieces_sent_[m] == pieces(m)) handle(Event{t, m, 0, kSent});
  }
  // Forwarding by packet: piece `k` of message m is complete at its destination at cycle t.
  // What streams behind m sends its pieces in order, each once m's piece of that number is
  // complete; m's first piece counts as m for its wait. Pieces may complete out of order (at the
  // flit level they take different virtual channels): those ahead of the first missing one wait
  // in early_ until it comes. True when m is complete.
  bool piece_complete(std::uint32_t m, std::uint32_t k, Cycles t) {
    std::uint32_t& done = pieces_done_[m];  // every piece below it is complete
    if (k != done) {
      early_.insert(std::uint64_t{k} << 32 | m);
      return false;
    }
    const std::uint32_t before = done++;
    while (!early_.empty() && early_.erase(std::uint64_t{done} << 32 | m) > 0) ++done;
    for (std::uint32_t i = children_first_[m]; i < children_first_[m + 1]; ++i) {
      const std::uint32_t c = children_[i];
      if (stream_parent_[c] != m) continue;
      if (before == 0) {
        if (--waiting_[c] == 0) on_ready(c, t);
      } else if (pieces_out_[c] > 0) {  // let go (with piece 0, which it had by then): send on
        inject(c, t);
      }
    }
    return done == pieces(m);
  }
  Bytes piece_bytes() const { return piece_bytes_; }
  std::uint32_t pieces(std::uint32_t m) const {
    return static_cast<std::uint32_t>(std::max<Bytes>(1, (msg(m).bytes + piece_bytes_ - 1) / piece_bytes_));
  }
  // (collective, chip) of a chunk's collective
  std::size_t part(std::uint32_t chunk, std::uint32_t chip) const {
    return std::size_t{plan_.chunk_collective[chunk]} * chips_ + chip;
  }
  // Something of `chunk` finished at cycle t: its collective is done no earlier.
  void note_time(std::uint32_t chunk, Cycles t) {
    last_ = std::max(last_, t);
    Cycles& d = done_[plan_.chunk_collective[chunk]];
    d = std::max(d, t);
  }
  // One of what the chip's part of collective c waits for is done; the last one ends the part.
  void part_done(std::uint32_t c, std::uint32_t chip, Cycles t) {
    const std::size_t k = std::size_t{c} * chips_ + chip;
    if (remaining_[k] > 0 && --remaining_[k] > 0) return;
    if (on_done) on_done(c, chip, t);
  }
  // A received message m is usable at its destination at cycle t.
  void complete(std::uint32_t m, Cycles t) {
    for (std::uint32_t i = children_first_[m]; i < children_first_[m + 1]; ++i) {
      const std::uint32_t c = children_[i];
      if (piece_bytes_ > 0 && stream_parent_[c] == m) continue;  // it stopped waiting at m's first piece
      if (--waiting_[c] == 0) on_ready(c, t);
    }
  }
  std::uint32_t children(std::uint32_t m) const { return children_first_[m + 1] - children_first_[m]; }
  std::uint32_t first_child(std::uint32_t m) const { return children_[children_first_[m]]; }
  bool waiting(std::uint32_t m) const { return waiting_[m] != 0; }
  Cycles issued_at(std::uint32_t chunk, std::uint32_t chip) const { return issued_at_[part(chunk, chip)]; }
  const CollectiveMessage& msg(std::uint32_t m) const { return plan_.messages[m]; }
  // Whether the one message m waits for is a reduction, of the same chunk and phase, whose sum
  // m carries on (a ring step forwarding what it just added up).
  bool forwards_reduction(std::uint32_t m) const {
    const CollectiveMessage& x = msg(m);
    if (x.waits_count != 1) return false;
    const std::uint32_t w = plan_.waits[x.waits_first];
    const CollectiveMessage& y = msg(w);
    return y.reduce && y.dst == x.src && y.chunk == x.chunk && y.phase == x.phase && children(w) == 1;
  }
  // Whether m, forwarding by packet, streams behind the one message it waits for: that message
  // ends at m's source, in the same chunk and phase, and is as large (a ring step carrying on
  // what the step before brought, added to or not), so m's piece k is that message's piece k.
  bool forwards_piecewise(std::uint32_t m) const {
    const CollectiveMessage& x = msg(m);
    if (x.waits_count != 1) return false;
    const CollectiveMessage& y = msg(plan_.waits[x.waits_first]);
    return y.dst == x.src && y.chunk == x.chunk && y.phase == x.phase && y.bytes == x.bytes;
  }
  // Whether the sum of reduction m leaves in the one message that forwards it.
  bool sum_forwarded(std::uint32_t m) const { return children(m) == 1 && forwards_reduction(first_child(m)); }

  virtual void on_issue(std::uint32_t, std::uint32_t, Cycles) {}
  virtual void on_ready(std::uint32_t m, Cycles t) = 0;
  virtual void handle(const Event& e) = 0;
  virtual void check_more() const {}

  const CollectivePlan& plan_;
  RoutedTransport& net_;
  std::uint64_t id_base_;
  std::uint32_t chips_;
  Cycles last_ = 0;
  std::vector<std::uint32_t> remaining_;  // per (collective, chip): what its part still waits for

 private:
  std::vector<std::uint32_t> waiting_, children_first_, children_;
  std::vector<std::uint32_t> by_src_first_, by_src_;  // per (collective, chip): the messages it sends
  std::vector<Cycles> issued_at_;                    // per (collective, chip), kNever before
  EventWheel<Event> events_;
  std::vector<Event> batch_;
  std::vector<Cycles> done_;
  std::uint64_t injected_ = 0, delivered_ = 0;  // network messages: whole, or pieces
  // Forwarding by packet (piece_bytes_ > 0): per message, its pieces given to its source, sent,
  // complete at the destination; the message it streams behind (or kNone).
  Bytes piece_bytes_ = 0;
  std::uint64_t pieces_total_ = 0;
  std::vector<std::uint32_t> pieces_out_, pieces_sent_, pieces_done_, stream_parent_;
  std::vector<std::uint32_t> source_of_;  // its AFI source - first_source_
  std::unordered_set<std::uint64_t> early_;  // (piece << 32 | message) complete ahead of an earlier piece
  // Per AFI source: pieces given and not yet in the network (runs of a message's pieces, in the
  // order given), and pieces in the network not yet sent.
  struct Queued {
    std::uint32_t message, next, end;
  };
  static constexpr std::uint32_t kPiecesAhead = 16;
  std::uint32_t first_source_ = 0;
  std::vector<std::deque<Queued>> source_queue_;  // by AFI source - first_source_
  std::vector<std::uint32_t> source_out_;
};

// The ACE paper's Ideal: a message goes out as soon as it is ready; a received one is complete
// one cycle after its last byte arrived.
class IdealEngine : public Engine {
 public:
  IdealEngine(const Config& cfg, const CollectivePlan& plan, RoutedTransport& net, std::uint64_t id_base)
      : Engine(plan, net, id_base, cfg.system.chips) {
    if (cfg.system.collective_forwarding == Forwarding::Packet) forward_by_packet(cfg.system.packet_bytes);
  }

 private:
  void on_ready(std::uint32_t m, Cycles t) override { inject(m, t); }
  void handle(const Event& e) override {
    if (e.kind == kDelivered) {  // b: a piece's number + 1, or 0 for a whole message
      note_time(msg(e.a).chunk, e.at);
      schedule(e.at + 1, kComplete, e.a, e.b);
    } else if (e.kind == kComplete) {
      if (e.b > 0 && !piece_complete(e.a, e.b - 1, e.at)) return;
      complete(e.a, e.at);
      part_done(plan_.chunk_collective[msg(e.a).chunk], msg(e.a).dst, e.at);
    }
  }
};

// Holds the plan the cores engine runs (relayed through neighbours) ahead of the Engine base.
struct OwnedPlan {
  CollectivePlan owned;
};

// The baseline: collective kernels on cores, through memory (see engines.h).
class CoresEngine : private OwnedPlan, public Engine {
 public:
  CoresEngine(const Config& cfg, CollectivePlan relayed, RoutedTransport& net, std::uint64_t id_base)
      : OwnedPlan{std::move(relayed)}, Engine(owned, net, id_base, cfg.system.chips) {
    const EndpointConfig& e = *cfg.system.endpoint;
    for (std::uint32_t c = 0; c < cfg.system.chips; ++c) {
      read_.emplace_back(e.memory_bytes_per_cycle);
      write_.emplace_back(e.memory_bytes_per_cycle);
      cores_.emplace_back(e.cores * e.core_bytes_per_cycle);
    }
  }
  void report(CollectiveResult& r) const override {
    for (std::size_t c = 0; c < read_.size(); ++c) {
      r.memory_read_bytes.push_back(read_[c].bytes());
      r.memory_write_bytes.push_back(write_[c].bytes());
    }
  }

 private:
  static constexpr std::uint8_t kSendCores = kOwn, kReduceRead = kOwn + 1, kReduceCores = kOwn + 2, kSumWrite = kOwn + 3,
                                 kKeepWrite = kOwn + 4;

  void on_ready(std::uint32_t m, Cycles t) override {
    if (forwards_reduction(m)) {
      inject(m, t);  // the kernel that added it up sends the sum straight to the AFI
      return;
    }
    schedule(read_[msg(m).src].serve(t, msg(m).bytes), kSendCores, m);
  }
  void handle(const Event& e) override {
    const CollectiveMessage& x = msg(e.a);
    switch (e.kind) {
      case kSendCores: schedule(cores_[x.src].serve(e.at, x.bytes), kInject, e.a); break;
      case kInject: inject(e.a, e.at); break;
      case kDelivered:  // the AFI writes what arrives to memory
        schedule(write_[x.dst].serve(e.at, x.bytes), x.reduce ? kReduceRead : kComplete, e.a);
        break;
      case kReduceRead: schedule(read_[x.dst].serve(e.at, 2 * x.bytes), kReduceCores, e.a); break;
      case kReduceCores: {
        const Cycles done = cores_[x.dst].serve(e.at, 2 * x.bytes);
        if (!sum_forwarded(e.a)) {
          schedule(done, kSumWrite, e.a);
        } else {
          // a partial sum only moves on; the chip's final sum (forwarded as a copy, all-reduce)
          // is also kept: written while it goes out
          if (!msg(first_child(e.a)).reduce) schedule(done, kKeepWrite, e.a);
          schedule(done, kComplete, e.a);
        }
        break;
      }
      case kSumWrite: schedule(write_[x.dst].serve(e.at, x.bytes), kComplete, e.a); break;
      case kKeepWrite: note_time(x.chunk, write_[x.dst].serve(e.at, x.bytes)); break;
      case kComplete:
        note_time(x.chunk, e.at);
        complete(e.a, e.at);
        part_done(plan_.chunk_collective[x.chunk], x.dst, e.at);
        break;
      default: break;
    }
  }

  std::vector<RateServer> read_, write_, cores_;
};

// The ACE engine (see engines.h).
class AceEngine : public Engine {
 public:
  AceEngine(const Config& cfg, const CollectivePlan& plan, RoutedTransport& net, std::uint64_t id_base)
      : Engine(plan, net, id_base, cfg.system.chips), phases_(static_cast<std::uint32_t>(plan.phases.size())),
        lifo_(cfg.system.ace->admission == AceAdmission::Lifo) {
    const AceConfig& ace = *cfg.system.ace;
    const EndpointConfig& e = *cfg.system.endpoint;
    size_partitions(ace);
    share_fsms(ace);
    if (cfg.system.collective_forwarding == Forwarding::Packet) forward_by_packet(cfg.system.packet_bytes);
    for (std::uint32_t c = 0; c < chips_; ++c) {
      read_.emplace_back(e.memory_bytes_per_cycle);
      write_.emplace_back(e.memory_bytes_per_cycle);
      alus_.emplace_back(ace.alus * ace.alu_bytes_per_cycle);
    }
    const std::size_t chunks = plan.chunks;
    free_.resize(std::size_t{chips_} * (phases_ + 1));
    for (std::uint32_t c = 0; c < chips_; ++c)
      for (std::uint32_t k = 0; k <= phases_; ++k) free_[c * (phases_ + 1) + k] = partition_[k];
    fsm_chunk_.assign(std::size_t{chips_} * fsms_, kNone);
    next_.assign(std::size_t{chips_} * phases_, 0);
    finished_phases_.assign(chips_ * chunks, 0);
    active_.assign(chips_ * chunks, kIdle);
    eligible_at_.assign(chips_ * chunks, 0);
    done_.assign(chips_ * chunks, false);
    lowest_open_.assign(chips_, 0);
    terminal_queue_.resize(chips_);
    if (lifo_) {
      index_collectives();
    } else {  // FIFO: the chunk numbers
      order_.resize(plan.chunks);
      std::iota(order_.begin(), order_.end(), 0u);
    }
    index_groups();
    // a chip's part of a collective is done when each of the collective's chunks is done there
    std::fill(remaining_.begin(), remaining_.end(), 0);
    for (std::uint32_t c = 0; c < plan.chunks; ++c)
      for (std::uint32_t chip = 0; chip < chips_; ++chip) ++remaining_[part(c, chip)];
  }

  void report(CollectiveResult& r) const override {
    for (std::uint32_t c = 0; c < chips_; ++c) {
      r.memory_read_bytes.push_back(read_[c].bytes());
      r.memory_write_bytes.push_back(write_[c].bytes());
    }
    r.chunks_out_of_order = out_of_order_;
    r.admission_wait_cycles = admission_wait_;
    r.ace_fsms_per_phase = fsm_count_;
    for (std::int64_t b : partition_) r.ace_partition_bytes.push_back(static_cast<Bytes>(b));
  }

 private:
  static constexpr std::uint8_t kActivate = kOwn, kChunkDone = kOwn + 1;
  static constexpr std::uint8_t kIdle = 0xff;

  // Partition k in proportion to the phase's bandwidth times its initial chunk; the terminal
  // one as large as the last phase's (the ACE paper's rule). Every chunk must fit where it goes.
  void size_partitions(const AceConfig& ace) {
    std::vector<double> weight;
    for (const auto& ph : plan_.phases) weight.push_back(ph.bytes_per_cycle * double(ph.initial_bytes));
    weight.push_back(weight.back());
    double sum = 0;
    for (double w : weight) sum += w;
    for (double w : weight) partition_.push_back(static_cast<std::int64_t>(double(ace.sram_bytes) * w / sum));
    const auto fit = [&](std::uint32_t k, std::uint32_t c) {
      if (fp(k, c) <= partition_[k]) return;
      throw Error(fmt::format(
          "system.ace.sram_bytes: {} bytes split into {} partitions gives {} {} bytes, less than one chunk's {} "
          "bytes there; use a larger SRAM or smaller chunks (--chunk-bytes)",
          ace.sram_bytes, phases_ + 1, k < phases_ ? fmt::format("phase {}", k) : std::string("the terminal partition"),
          partition_[k], fp(k, c)));
    };
    for (std::uint32_t c = 0; c < plan_.chunks; ++c) {
      for (std::uint32_t k = 0; k < phases_of(c); ++k) fit(k, c);
      fit(phases_, c);
    }
  }
  // FSMs shared out among the phases in proportion to the chunks each phase needs in flight to
  // keep its links busy: a chunk's time through the phase on idle links over its time on the
  // links' bandwidth (the paper gives no rule; this is the partition rule's counterpart).
  // Largest remainders, at least one each.
  void share_fsms(const AceConfig& ace) {
    if (ace.fsms < phases_)
      throw Error(fmt::format("system.ace.fsms: {} FSMs for a collective of {} phases; each phase needs one",
                              ace.fsms, phases_));
    fsms_ = ace.fsms;
    std::vector<double> need;
    double sum = 0;
    for (const auto& ph : plan_.phases) {
      const double bandwidth_cycles = std::max(1.0, double(ph.sent_bytes) / ph.bytes_per_cycle);
      need.push_back(std::max(1.0, ph.zero_load_cycles / bandwidth_cycles));
      sum += need.back();
    }
    fsm_count_.assign(phases_, 1);
    std::uint32_t left = ace.fsms - phases_;
    std::vector<double> share(phases_);
    for (std::uint32_t k = 0; k < phases_; ++k) {
      share[k] = std::max(0.0, double(ace.fsms) * need[k] / sum - 1.0);
      const auto whole = std::min(left, static_cast<std::uint32_t>(share[k]));
      fsm_count_[k] += whole;
      left -= whole;
      share[k] -= whole;
    }
    // the largest remainders first, the earlier phase on a tie (fewer are left than phases:
    // each whole share lost less than one)
    for (; left > 0; --left) {
      std::uint32_t best = 0;
      for (std::uint32_t k = 1; k < phases_; ++k)
        if (share[k] > share[best]) best = k;
      ++fsm_count_[best];
      share[best] = -1;
    }
    std::uint32_t first = 0;
    for (std::uint32_t k = 0; k < phases_; ++k) {
      fsm_first_.push_back(first);
      first += fsm_count_[k];
    }
  }
  // LIFO admission: each collective's chunks (numbered one after the other), the first not yet
  // in the admission order.
  void index_collectives() {
    coll_end_.assign(plan_.collectives, 0);
    unordered_.assign(plan_.collectives, kNone);
    for (std::uint32_t c = 0; c < plan_.chunks; ++c) {
      const std::uint32_t coll = plan_.chunk_collective[c];
      if (unordered_[coll] == kNone) unordered_[coll] = c;
      else if (coll_end_[coll] != c) throw std::logic_error("collective plan: a collective's chunks are not consecutive");
      coll_end_[coll] = c + 1;
    }
    for (std::uint32_t coll = 0; coll < plan_.collectives; ++coll)
      if (unordered_[coll] == kNone) unordered_[coll] = 0;  // no chunks: none to order (end 0)
    issued_order_.resize(chips_);
  }
  // Per (chip, chunk, phase): how many of the chip's messages are open, and its sends.
  void index_groups() {
    const std::size_t groups = std::size_t{chips_} * plan_.chunks * phases_;
    open_.assign(groups, 0);
    sends_first_.assign(groups + 1, 0);
    for (const auto& m : plan_.messages) {
      ++open_[group(m.src, m.chunk, m.phase)];
      ++open_[group(m.dst, m.chunk, m.phase)];
      ++sends_first_[group(m.src, m.chunk, m.phase) + 1];
    }
    for (std::size_t g = 1; g <= groups; ++g) sends_first_[g] += sends_first_[g - 1];
    sends_.resize(plan_.messages.size());
    std::vector<std::uint32_t> at(sends_first_.begin(), sends_first_.end() - 1);
    for (std::uint32_t m = 0; m < plan_.messages.size(); ++m) sends_[at[group(msg(m).src, msg(m).chunk, msg(m).phase)]++] = m;
  }
  std::size_t group(std::uint32_t chip, std::uint32_t chunk, std::uint32_t phase) const {
    return (std::size_t{chip} * plan_.chunks + chunk) * phases_ + phase;
  }
  std::size_t at(std::uint32_t chip, std::uint32_t chunk) const { return std::size_t{chip} * plan_.chunks + chunk; }
  std::int64_t& free(std::uint32_t chip, std::uint32_t k) { return free_[chip * (phases_ + 1) + k]; }
  // Chunk c's room in partition k (the terminal one: k = phases_): its collective's footprint
  // in that phase, or its size.
  std::int64_t fp(std::uint32_t k, std::uint32_t c) const {
    if (k == phases_) return static_cast<std::int64_t>(plan_.chunk_sizes[c]);
    return static_cast<std::int64_t>(plan_.collective_phases[plan_.chunk_collective[c]][k].footprint_bytes);
  }
  // The phases chunk c goes through (a collective with fewer phases than the plan's most uses
  // the first partitions and FSMs: an all-to-all beside a torus all-reduce uses phase 0's).
  std::uint32_t phases_of(std::uint32_t c) const {
    return static_cast<std::uint32_t>(plan_.collective_phases[plan_.chunk_collective[c]].size());
  }

  // The chip may start the collective's chunks (in chunk order, as FSMs and room allow).
  void on_issue(std::uint32_t coll, std::uint32_t chip, Cycles t) override {
    if (lifo_) issued_order_[chip].push_back(coll);
    admit(chip, 0, t);
  }
  void on_ready(std::uint32_t m, Cycles t) override {
    if (active_[at(msg(m).src, msg(m).chunk)] == msg(m).phase) inject(m, t);
    // otherwise it goes when its chunk enters the phase on its chip (activate)
  }
  void handle(const Event& e) override {
    switch (e.kind) {
      case kSent: close(msg(e.a).src, msg(e.a).chunk, msg(e.a).phase, e.at); break;
      case kDelivered:  // into the SRAM; a reduction goes through the ALUs first (b: a piece's number + 1, or 0)
        if (msg(e.a).reduce)
          schedule(alus_[msg(e.a).dst].serve(e.at, delivered_bytes(e)), kComplete, e.a, e.b);
        else
          received(e.a, e.b, e.at);
        break;
      case kComplete: received(e.a, e.b, e.at); break;
      case kActivate: activate(e.a, e.b, 0, e.at); break;
      case kChunkDone: chunk_done(e.a, e.b, e.at); break;
      default: break;
    }
  }
  // What a delivery brought: the message, or one piece of it.
  Bytes delivered_bytes(const Event& e) const {
    if (e.b == 0) return msg(e.a).bytes;
    const Bytes offset = Bytes{e.b - 1} * piece_bytes();
    return std::min(piece_bytes(), msg(e.a).bytes - offset);
  }
  void received(std::uint32_t m, std::uint32_t piece, Cycles t) {
    if (piece > 0 && !piece_complete(m, piece - 1, t)) return;
    complete(m, t);
    close(msg(m).dst, msg(m).chunk, msg(m).phase, t);
  }
  // One of the chip's messages of (chunk, phase) is done; the last one ends the phase there.
  void close(std::uint32_t chip, std::uint32_t chunk, std::uint32_t phase, Cycles t) {
    // a chip that only receives in a phase may hear everything before the chunk entered the
    // phase there; it then finishes when it enters (activate)
    if (--open_[group(chip, chunk, phase)] != 0 || active_[at(chip, chunk)] != phase) return;
    active_[at(chip, chunk)] = kIdle;
    const std::uint32_t fsm = fsm_first_[phase] + chunk % fsm_count_[phase];
    fsm_chunk_[std::size_t{chip} * fsms_ + fsm] = kNone;
    finished_phases_[at(chip, chunk)] = static_cast<std::uint8_t>(phase + 1);
    eligible_at_[at(chip, chunk)] = t;
    if (phase + 1 == phases_of(chunk)) terminal_queue_[chip].push_back(chunk);
    if (phase + 1 < phases_of(chunk))  // on into the next partition (its room here comes back) ...
      admit(chip, phase + 1, t);
    else
      to_terminal(chip, t);
    admit(chip, phase, t);  // ... and the FSM is free for its next chunk
  }
  // Admits chunks into phase k on the chip while the chunk's FSM is free and the partition has
  // room; the room the chunk held in phase k - 1 comes back. Every chip admits the chunks into
  // every phase in one order, strictly (a chunk waits for the one before it): FIFO, the chunks'
  // numbers (issue order); LIFO, the order they were first let into phase 0, where a chip that
  // finds nothing more in that order lets in the next chunk of the collective it issued last
  // (the ACE paper's policy). One order for all chips is what keeps either free of deadlock:
  // chips admitting in different orders could each hold an FSM with a chunk that waits for the
  // other's messages.
  void admit(std::uint32_t chip, std::uint32_t k, Cycles t) {
    for (;;) {
      bool fresh = false;  // LIFO: a chunk not yet in the order, which joins it if it goes
      const std::uint32_t c = next_chunk(chip, k, t, fresh);
      if (c == kNone || !take(chip, k, c, t)) return;
      if (fresh) {
        order_.push_back(c);
        ++unordered_[plan_.chunk_collective[c]];
      }
    }
  }
  // The chip's next chunk for phase k in the order, if it may go now (kNone if not).
  std::uint32_t next_chunk(std::uint32_t chip, std::uint32_t k, Cycles t, bool& fresh) {
    std::uint32_t& pos = next_[chip * phases_ + k];
    while (pos < order_.size() && phases_of(order_[pos]) <= k) ++pos;  // chunks that never enter phase k
    if (pos == order_.size()) {
      if (!lifo_ || k != 0) return kNone;
      fresh = true;
      return newest_unordered(chip);  // issued here by now, and in no phase yet
    }
    const std::uint32_t c = order_[pos];
    if (finished_phases_[at(chip, c)] != k || issued_at(c, chip) > t) return kNone;
    return c;
  }
  // LIFO: the next chunk of the collective the chip issued last that has chunks not yet in the
  // order, or kNone.
  std::uint32_t newest_unordered(std::uint32_t chip) {
    auto& issued = issued_order_[chip];
    while (!issued.empty() && unordered_[issued.back()] == coll_end_[issued.back()]) issued.pop_back();
    return issued.empty() ? kNone : unordered_[issued.back()];
  }
  // Chunk c enters phase k if its FSM is free and the partition has room.
  bool take(std::uint32_t chip, std::uint32_t k, std::uint32_t c, Cycles t) {
    std::uint32_t& fsm = fsm_chunk_[std::size_t{chip} * fsms_ + fsm_first_[k] + c % fsm_count_[k]];
    if (fsm != kNone || free(chip, k) < fp(k, c)) return false;
    fsm = c;
    ++next_[chip * phases_ + k];
    free(chip, k) -= fp(k, c);
    admission_wait_ += t - std::max(eligible_at_[at(chip, c)], issued_at(c, chip));
    if (k == 0) {  // the TX DMA brings the chunk from memory
      schedule(read_[chip].serve(t, plan_.chunk_sizes[c]), kActivate, chip, c);
      return true;
    }
    free(chip, k - 1) += fp(k - 1, c);
    activate(chip, c, k, t);
    admit(chip, k - 1, t);
    return true;
  }
  void activate(std::uint32_t chip, std::uint32_t c, std::uint32_t k, Cycles t) {
    active_[at(chip, c)] = static_cast<std::uint8_t>(k);
    const std::size_t g = group(chip, c, k);
    for (std::uint32_t i = sends_first_[g]; i < sends_first_[g + 1]; ++i)
      if (!waiting(sends_[i])) inject(sends_[i], t);
    if (open_[g] == 0) {  // nothing left of this phase here: none, or all heard before it entered
      ++open_[g];
      close(chip, c, k, t);
    }
  }
  // Chunks that finished their last phase move to the terminal partition in the order they
  // finished, as room allows, and the RX DMA writes them back.
  void to_terminal(std::uint32_t chip, Cycles t) {
    auto& q = terminal_queue_[chip];
    while (!q.empty() && free(chip, phases_) >= fp(phases_, q.front())) {
      const std::uint32_t c = q.front();
      q.pop_front();
      const std::uint32_t last = phases_of(c) - 1;
      free(chip, phases_) -= fp(phases_, c);
      free(chip, last) += fp(last, c);
      admission_wait_ += t - eligible_at_[at(chip, c)];
      schedule(write_[chip].serve(t, plan_.chunk_sizes[c]), kChunkDone, chip, c);
      admit(chip, last, t);
    }
  }
  void chunk_done(std::uint32_t chip, std::uint32_t c, Cycles t) {
    free(chip, phases_) += fp(phases_, c);
    done_[at(chip, c)] = true;
    ++chunks_done_;
    if (c != lowest_open_[chip]) ++out_of_order_;
    while (lowest_open_[chip] < plan_.chunks && done_[at(chip, lowest_open_[chip])]) ++lowest_open_[chip];
    note_time(c, t);
    part_done(plan_.chunk_collective[c], chip, t);
    to_terminal(chip, t);
  }
  void check_more() const override {
    if (chunks_done_ == std::uint64_t{chips_} * plan_.chunks) return;
    for (std::uint32_t chip = 0; chip < chips_; ++chip)
      if (lowest_open_[chip] < plan_.chunks)
        throw SimulationError(fmt::format(
            "collective (ace): chunk {} never finished on chip {} (it finished {} of {} phases; {} of {} chunk-chips "
            "done)",
            lowest_open_[chip], chip, finished_phases_[at(chip, lowest_open_[chip])], phases_, chunks_done_,
            std::uint64_t{chips_} * plan_.chunks));
  }

  std::uint32_t phases_, fsms_ = 0;
  bool lifo_;
  // The admission order (chunks; FIFO: all of them, by number; LIFO: grown as chunks first go)
  // and, for LIFO, per collective one past its last chunk and its first chunk not yet in the
  // order, per chip the collectives it issued (in issue order)
  std::vector<std::uint32_t> order_, coll_end_, unordered_;
  std::vector<std::vector<std::uint32_t>> issued_order_;
  std::vector<std::int64_t> partition_;  // per phase, then the terminal partition
  std::vector<std::uint32_t> fsm_first_, fsm_count_;
  std::vector<RateServer> read_, write_, alus_;
  std::vector<std::int64_t> free_;          // per chip and partition
  std::vector<std::uint32_t> fsm_chunk_;    // per chip and FSM: its chunk, or kNone
  std::vector<std::uint32_t> next_;         // per chip and phase: the place in order_ of the next chunk to admit
  std::vector<std::uint8_t> finished_phases_, active_;  // per chip and chunk
  std::vector<Cycles> eligible_at_;         // per chip and chunk: since when it may enter its next partition
  std::vector<bool> done_;
  std::vector<std::uint32_t> lowest_open_;  // per chip: the lowest chunk not done
  std::vector<std::deque<std::uint32_t>> terminal_queue_;
  std::vector<std::uint32_t> open_, sends_first_, sends_;
  std::uint64_t chunks_done_ = 0, out_of_order_ = 0;
  Cycles admission_wait_ = 0;
};

void require_parts(const Config& cfg, const std::string& engine) {
  if (!cfg.system.endpoint)
    throw Error(fmt::format("engine {}: config {} has no system.endpoint (the memory bandwidth and cores a "
                            "collective may use; docs/config.md)", engine, cfg.name));
  if (engine == "ace" && !cfg.system.ace)
    throw Error(fmt::format("engine ace: config {} has no system.ace (the engine's SRAM, FSMs and ALUs; "
                            "docs/config.md)", cfg.name));
}

}  // namespace

CollectivePlan relay_through_neighbours(const CollectivePlan& plan, const NetTopology& topo) {
  CollectivePlan out = plan;  // the same chunks and phases; the messages and waits are redone
  out.messages.clear();
  out.waits.clear();
  std::vector<std::uint32_t> last_hop(plan.messages.size());
  for (std::uint32_t i = 0; i < plan.messages.size(); ++i) {
    const CollectiveMessage& m = plan.messages[i];
    CollectiveMessage hop = m;
    hop.waits_first = static_cast<std::uint32_t>(out.waits.size());
    for (std::uint32_t w = 0; w < m.waits_count; ++w) out.waits.push_back(last_hop[plan.waits[m.waits_first + w]]);
    for (std::uint32_t at = m.src; at != m.dst;) {
      hop.src = at;
      hop.dst = topo.next_chip(at, m.dst);
      hop.reduce = hop.dst == m.dst && m.reduce;
      out.messages.push_back(hop);
      at = hop.dst;
      hop.waits_first = static_cast<std::uint32_t>(out.waits.size());  // the next hop waits for this one
      hop.waits_count = 1;
      out.waits.push_back(static_cast<std::uint32_t>(out.messages.size() - 1));
    }
    out.waits.pop_back();  // the last hop has no next
    last_hop[i] = static_cast<std::uint32_t>(out.messages.size() - 1);
  }
  return out;
}

std::unique_ptr<CollectiveEngine> make_engine(const Config& cfg, const std::string& engine, const CollectivePlan& plan,
                                              RoutedTransport& net, std::uint64_t id_base) {
  if (engine == "ideal") return std::make_unique<IdealEngine>(cfg, plan, net, id_base);
  if (engine != "cores" && engine != "ace")
    throw Error(fmt::format("engine {}: unknown engine (expected ideal, cores or ace)", engine));
  require_parts(cfg, engine);
  if (engine == "cores")
    return std::make_unique<CoresEngine>(cfg, relay_through_neighbours(plan, net.topology()), net, id_base);
  return std::make_unique<AceEngine>(cfg, plan, net, id_base);
}

std::vector<Cycles> run_engine(const Config& cfg, const std::string& engine, const CollectivePlan& plan,
                               RoutedTransport& net, CollectiveResult& r) {
  const std::unique_ptr<CollectiveEngine> e = make_engine(cfg, engine, plan, net, 0);
  net.set_listener(e.get());
  // every chip issues each collective at its release cycle, the collectives in release order
  std::vector<std::uint32_t> order(plan.collectives);
  for (std::uint32_t c = 0; c < plan.collectives; ++c) order[c] = c;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return plan.collective_release[a] < plan.collective_release[b]; });
  std::size_t next = 0;
  for (;;) {
    const Cycles release = next < order.size() ? plan.collective_release[order[next]] : kNever;
    const Cycles t = std::min({net.next_event(), e->next_event(), release});
    if (t == kNever) break;
    for (; next < order.size() && plan.collective_release[order[next]] == t; ++next)
      for (std::uint32_t chip = 0; chip < cfg.system.chips; ++chip) e->issue(order[next], chip, t);
    e->process(t);
    net.advance(t);  // what it reports comes back as engine events after t
  }
  net.set_listener(nullptr);
  e->check_finished();
  r.cycles = e->last();
  e->report(r);
  if (engine == "ideal") {
    r.memory_read_bytes.assign(cfg.system.chips, 0);
    r.memory_write_bytes.assign(cfg.system.chips, 0);
  }
  return e->done();
}

}  // namespace tessera::sim
