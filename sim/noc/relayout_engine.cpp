#include "sim/noc/relayout_engine.h"

#include <algorithm>

namespace tessera::sim {

void RelayoutEngine::start(std::uint32_t core, std::uint32_t relayout, std::uint32_t pieces, const RelayoutStep* steps,
                           std::size_t count, Cycles t, StepSink& sink, Completion& done) {
  auto it = pieces_.find(relayout);
  if (it == pieces_.end()) it = pieces_.emplace(relayout, std::vector<Piece>(pieces)).first;
  Run& r = runs_[core];
  r.step = steps;
  r.end = steps + count;
  r.pieces = it->second.data();  // node-based map: the vector stays put while the relayout lives
  r.t = t;
  r.sink = &sink;
  r.done = &done;
  run(core);
}

// Runs the core's steps from the current one until one has to wait (for its send to leave or
// its message to arrive), or to the end, which completes the core's wait.
void RelayoutEngine::run(std::uint32_t core) {
  Run& r = runs_[core];
  while (r.step != r.end) {
    switch (r.step->kind) {
      case RelayoutStep::Copy: finish_step(r, r.t + r.step->value); break;
      case RelayoutStep::Send: send(core, r); return;
      case RelayoutStep::Recv:
        if (!receive(core, r)) return;
        break;
    }
  }
  Completion* done = r.done;
  const Cycles t = r.t;
  r = Run{};
  done->complete(t);
}

void RelayoutEngine::finish_step(Run& r, Cycles end) {
  r.sink->step_done(*r.step, r.t, end);
  r.t = end;
  ++r.step;
}

void RelayoutEngine::send(std::uint32_t core, Run& r) {
  const RelayoutStep& s = *r.step;
  const std::uint32_t m = messages_.acquire();
  Message& msg = messages_[m];
  msg = Message{};
  msg.sender = core;
  Piece& p = r.pieces[s.piece];
  if (p.waiter != kNone) {  // its receive is posted already
    msg.receiver = p.waiter;
    msg.posted = p.posted;
    msg.taken = true;
    p.waiter = kNone;
  } else {
    if (p.head == kNone) p.head = m;
    else messages_[p.tail].next = m;
    p.tail = m;
    ++pending_[s.peer];
  }
  inject_(kIds + m, core, s.peer, s.value, r.t);
}

// Takes the piece's oldest message; true when the step is done (the message is in).
bool RelayoutEngine::receive(std::uint32_t core, Run& r) {
  Piece& p = r.pieces[r.step->piece];
  if (p.head == kNone) {
    p.waiter = core;
    p.posted = r.t;
    return false;
  }
  const std::uint32_t m = p.head;
  Message& msg = messages_[m];
  p.head = msg.next;
  if (p.head == kNone) p.tail = kNone;
  --pending_[core];
  msg.taken = true;
  if (!msg.delivered) {
    msg.receiver = core;
    msg.posted = r.t;
    return false;
  }
  const Cycles end = std::max(msg.arrival, r.t);
  release_if_done(m);
  finish_step(r, end);
  return true;
}

void RelayoutEngine::release_if_done(std::uint32_t m) {
  const Message& msg = messages_[m];
  if (msg.sent && msg.delivered && msg.taken) messages_.release(m);
}

void RelayoutEngine::sent(std::uint64_t id, Cycles when) {
  const auto m = static_cast<std::uint32_t>(id - kIds);
  messages_[m].sent = true;
  const std::uint32_t core = messages_[m].sender;
  release_if_done(m);
  finish_step(runs_[core], when);
  run(core);  // may inject (and grow the pool): nothing of `m` is used after
}

void RelayoutEngine::delivered(std::uint64_t id, Cycles when) {
  const auto m = static_cast<std::uint32_t>(id - kIds);
  Message& msg = messages_[m];
  msg.delivered = true;
  msg.arrival = when;
  const std::uint32_t core = msg.receiver;
  const Cycles posted = msg.posted;
  release_if_done(m);
  if (core == kNone) return;  // its receive comes later and finds it in
  finish_step(runs_[core], std::max(when, posted));
  run(core);
}

}  // namespace tessera::sim
