#pragma once
// The DMA engines' re-layout transfers, run where the messages are: in the fabric's event loop.
// A core hands its DMA engine its steps of a `relayout` item (its sends, local copies and
// receives, in order; sim/program/relayout.h) and waits once for the whole list. The engine runs
// the steps back to back on the core's behalf, exactly as the core would run the items they
// stand for: a send is injected when the step before it is done and is done when the transport
// says the source has sent its last byte; a receive posted at cycle P of a message that arrives
// at A is done at max(P, A); a copy takes its cycles. So the timing is the items' timing, cycle
// for cycle, without a SystemC context switch (and a wake-up) per message, and a receive finds
// its message by the piece it belongs to (a send and its receive share it) instead of matching
// by (source, destination) in a table of every pair in flight.
//
// The steps run ahead of simulated time where they can: when a send is reported done at cycle
// E while the network is at t < E, the next send is injected for cycle E there and then (the
// transport takes injections for later cycles, and orders a cycle's injections by source, so
// the result does not depend on when the call was made). Each piece keeps its messages in send
// order, so a relayout run several times (in a loop) pairs the k-th send with the k-th receive.
#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "sim/common/completion.h"
#include "sim/noc/index_pool.h"
#include "sim/program/relayout.h"

namespace tessera::sim {

class Transport;

// Where a core's steps are accounted as they finish (its busy time, tags and trace).
class StepSink {
 public:
  virtual ~StepSink() = default;
  virtual void step_done(const RelayoutStep& step, Cycles start, Cycles end) = 0;
};

class RelayoutEngine {
 public:
  // Message ids of the engine's messages in the transport start here (below them: the fabric's
  // own messages; the collective engine's are higher).
  static constexpr std::uint64_t kIds = std::uint64_t{1} << 39;

  // `inject` puts a message into the transport (the fabric counts it and wakes itself).
  using Inject = std::function<void(std::uint64_t id, std::uint32_t src, std::uint32_t dst, Bytes bytes, Cycles when)>;
  RelayoutEngine(std::uint32_t cores, Inject inject) : runs_(cores), pending_(cores, 0), inject_(std::move(inject)) {}

  // Core `core` starts `count` steps of relayout `relayout` (of `pieces` pieces in all) at cycle
  // t; `done` completes at the cycle its last step is done.
  void start(std::uint32_t core, std::uint32_t relayout, std::uint32_t pieces, const RelayoutStep* steps,
             std::size_t count, Cycles t, StepSink& sink, Completion& done);
  // No core runs the relayout any more (its pieces' state can go).
  void forget(std::uint32_t relayout) { pieces_.erase(relayout); }
  // The transport's reports for the engine's messages (ids from kIds).
  void sent(std::uint64_t id, Cycles when);
  void delivered(std::uint64_t id, Cycles when);

  // For deadlock reports: the step the core is at (null when it runs no relayout), and the
  // messages sent to `dst` that no receive of it has taken yet.
  const RelayoutStep* current(std::uint32_t core) const { return runs_[core].done ? runs_[core].step : nullptr; }
  std::size_t pending(std::uint32_t dst) const { return pending_[dst]; }
  // No core runs a relayout and no message of one is in flight (fast-forward).
  bool idle() const {
    if (messages_.live() != 0) return false;
    for (const Run& r : runs_)
      if (r.done) return false;
    return true;
  }

 private:
  static constexpr std::uint32_t kNone = ~0u;
  // A piece's messages sent and not yet taken by a receive (a FIFO through `next`), or the
  // receive posted before its message was sent.
  struct Piece {
    std::uint32_t head = kNone, tail = kNone;
    std::uint32_t waiter = kNone;
    Cycles posted = 0;
  };
  struct Message {
    std::uint32_t sender = 0, receiver = kNone;  // receiver: set once a receive has taken it
    Cycles posted = 0, arrival = 0;
    bool sent = false, delivered = false, taken = false;
    std::uint32_t next = kNone;
  };
  struct Run {
    const RelayoutStep* step = nullptr;
    const RelayoutStep* end = nullptr;
    Piece* pieces = nullptr;
    Cycles t = 0;  // when the current step started (or starts)
    StepSink* sink = nullptr;
    Completion* done = nullptr;  // null when the core runs no relayout
  };

  void run(std::uint32_t core);
  void send(std::uint32_t core, Run& r);
  bool receive(std::uint32_t core, Run& r);
  void finish_step(Run& r, Cycles end);
  void release_if_done(std::uint32_t m);

  std::vector<Run> runs_;  // by core
  std::vector<std::size_t> pending_;  // by destination core
  // by live relayout: 24 bytes per piece, beside the runner's 24 per step (two steps a piece)
  std::unordered_map<std::uint32_t, std::vector<Piece>> pieces_;
  IndexPool<Message> messages_;
  Inject inject_;
};

}  // namespace tessera::sim
