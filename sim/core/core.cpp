#include "sim/core/core.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/common/clock.h"
#include "sim/common/error.h"
#include "sim/results/trace.h"

namespace tessera::sim {

const char* activity_name(Activity a) {
  static const char* names[kActivities] = {"compute", "send", "recv", "sync", "memory"};
  return names[static_cast<int>(a)];
}

Core::Core(sc_core::sc_module_name name, const CoreProgram& program, Cycles dma_issue_cycles,
           TraceRecorder* trace, int trace_track, RunStatus& status, TagStats& tags,
           FunctionalContext* functional, RelayoutRunner& relayouts, bool relayouts_by_items,
           SegmentHook* segments, std::size_t index)
    : sc_core::sc_module(name), dma("dma"), barrier("barrier"), prog_(program),
      issue_cycles_(dma_issue_cycles), trace_(trace), track_(trace_track), status_(status), tags_(tags),
      fx_(functional), relayouts_(relayouts), relayouts_by_items_(relayouts_by_items), segments_(segments),
      index_(index) {
  SC_THREAD(run);
}

void Core::run() {
  try {
    // Loop counters live on a small stack; nesting depth is bounded by the program text.
    std::vector<std::uint32_t> remaining;
    const auto& code = prog_.code;
    static const std::vector<std::uint32_t> kNoBounds;
    const std::vector<std::uint32_t>& bounds = segments_ ? segments_->bounds(index_) : kNoBounds;
    std::size_t segment = 0;  // the stretch pc_ is in: it ends at bounds[segment]
    while (pc_ < code.size()) {
      const Item& it = code[pc_];
      if (segment < bounds.size() && pc_ == bounds[segment]) {
        at_bound(bounds, segment);
      } else if (it.op == Op::LoopBegin) {
        remaining.push_back(it.arg);
        ++pc_;
      } else if (it.op == Op::LoopEnd) {
        if (--remaining.back() > 0) {
          pc_ = it.arg + 1;
        } else {
          remaining.pop_back();
          ++pc_;
        }
      } else if (it.op == Op::Relayout) {
        run_relayout(it);
        ++pc_;
      } else {
        execute(it);
        ++pc_;
      }
    }
    done_ = true;
    finish_ = now_cycles();
    // Parked, not returned: SystemC 2.3 unregisters a thread that ends by scanning the list of
    // every process, so cores finishing one by one cost O(cores^2) (14% of an idle run of
    // vipu-4's 5,888 cores). A parked thread is no event: the run still ends when nothing is left.
    wait(never_);
  } catch (const std::exception& e) {
    status_.error = e.what();
    status_.simulation_error = dynamic_cast<const SimulationError*>(&e) != nullptr;
    status_.failed_core = index_;  // System names the item it failed in
    sc_core::sc_stop();
  }
}

// The global barrier that closes a stretch: report it, take part, and at the start of the next
// stretch either run it or add what it did the last time it ran from the same idle state.
void Core::at_bound(const std::vector<std::uint32_t>& bounds, std::size_t& segment) {
  segments_->end(segment, index_, now_cycles(), busy_, items_run_);
  execute(prog_.code[pc_]);
  ++pc_;
  if (++segment >= bounds.size()) return;  // the rest of the program closes at no barrier
  const SegmentHook::CoreDelta* d = segments_->begin(segment, index_, now_cycles(), busy_, items_run_);
  if (!d) return;
  if (d->cycles) wait(cycles(d->cycles));
  for (int a = 0; a < kActivities; ++a) busy_[a] += d->busy[a];
  items_run_ += d->items;
  pc_ = bounds[segment];
}

Buffer& Core::buffer(std::uint32_t slot) {
  if (slot >= buffers_.size() || !buffers_[slot])
    throw SimulationError(fmt::format("core {}: functional mode: buffer slot {} is not allocated", prog_.core, slot));
  return *buffers_[slot];
}

// The values side of an item, done at the item's start (sends read what the buffer holds when
// they are issued) or, for receives, once the message is in.
void Core::functional(const Item& it) {
  const FunctionalItem& f = prog_.functional[it.where];
  const Program& prog = *fx_->program;
  switch (it.op) {
    case Op::Alloc: {
      const View& v = prog_.views[f.buffer];
      if (buffers_.size() <= f.buffer) buffers_.resize(f.buffer + 1);
      if (v.tensor.empty()) break;  // scratch space (the shift buffer): no values tracked
      buffers_[f.buffer] = std::make_unique<Buffer>(v, fx_->store.at(v.tensor).shape);
      break;
    }
    case Op::Free:
      if (f.buffer < buffers_.size()) buffers_[f.buffer].reset();
      break;
    case Op::Init:
    case Op::Load: buffer(f.buffer).load_from(fx_->store.at(buffer(f.buffer).view().tensor)); break;
    case Op::Store: buffer(f.buffer).store_to(fx_->store.at(buffer(f.buffer).view().tensor)); break;
    case Op::Compute: {
      if (f.expr < 0) break;  // timing only (the copy out of the shift buffer)
      std::vector<const Buffer*> ins;
      for (auto s : f.inputs) ins.push_back(&buffer(s));
      evaluate(prog.exprs[static_cast<std::size_t>(f.expr)], f.ranges, ins, buffer(f.buffer));
      break;
    }
    case Op::Recv:
    case Op::Wait: {
      if (!received_)
        throw SimulationError(fmt::format("core {}: functional mode: a message without values arrived at {}",
                                          prog_.core, item_location(prog, prog_, it)));
      Buffer& b = buffer(f.buffer);
      if (received_->tensor != b.view().tensor)
        throw SimulationError(fmt::format("core {}: {}: received values of tensor '{}' into a buffer of '{}'",
                                          prog_.core, item_location(prog, prog_, it), received_->tensor, b.view().tensor));
      b.write_box(received_->box, received_->values);
      received_.reset();
      break;
    }
    default: break;
  }
}

// Functional mode: the values a send carries, read from its buffer when it is issued.
std::shared_ptr<const Payload> Core::payload(const Item& it) {
  const FunctionalItem& f = prog_.functional[it.where];
  auto p = std::make_shared<Payload>();
  p->tensor = buffer(f.buffer).view().tensor;
  p->box = f.box;
  p->values = buffer(f.buffer).read_box(f.box);
  return p;
}

// A send, receive, load or store: blocking (handle 0) or started on a DMA handle; and the wait
// for a handle. Returns the activity its cycles count as.
Activity Core::transfer(const Item& it) {
  const std::uint32_t h = it.handle;
  switch (it.op) {
    case Op::Send: dma->send(h, it.arg, it.value, fx_ ? payload(it) : nullptr); break;
    case Op::Recv: dma->recv(h, it.arg, it.value); break;
    case Op::Load: dma->memory(h, it.value, false); break;
    case Op::Store: dma->memory(h, it.value, true); break;
    case Op::Collective: dma->collective(h, it.arg); break;
    case Op::Wait: break;
    default: return Activity::Compute;
  }
  const Op kind = it.op == Op::Wait ? static_cast<Op>(it.value) : it.op;
  if (it.op != Op::Wait && h != 0) {
    wait(cycles(issue_cycles_));  // issued: the core goes on
  } else {
    received_ = dma->wait(h);
    if (fx_ && kind == Op::Recv) functional(it);
  }
  switch (kind) {
    case Op::Send: return Activity::Send;
    case Op::Recv: return Activity::Recv;
    case Op::Collective: return Activity::Sync;  // waiting for the other chips' parts
    default: return Activity::Memory;
  }
}

// A relayout's steps run on the DMA engine as the items they stand for, with the same timing
// (the fabric runs them back to back: no wake-up of this thread per message); a functional
// program has them written out at load time instead.
void Core::run_relayout(const Item& it) {
  if (fx_)
    throw SimulationError(fmt::format("core {}: functional mode: relayout at {} was not expanded at load time",
                                      prog_.core, item_location(*fx_->program, prog_, it)));
  const RelayoutRunner::Steps steps = relayouts_.steps(it.arg, prog_.core);
  relayout_ = &it;
  if (relayouts_by_items_) {
    run_relayout_items(it, steps);
  } else {
    dma->relayout(it.arg, steps.pieces, steps.first, steps.count, *this);
    dma->wait(0);
  }
  relayout_ = nullptr;
  if (relayouts_.done(it.arg)) dma->relayout_finished(it.arg);
}

namespace {
// The item a relayout step stands for (a copy is element-wise compute of its cycles).
Item step_item(const Item& relayout, const RelayoutStep& s) {
  Item x;
  x.where = relayout.where;
  x.op = s.kind == RelayoutStep::Send ? Op::Send : s.kind == RelayoutStep::Recv ? Op::Recv : Op::Compute;
  x.kind = ComputeKind::Elementwise;
  x.arg = s.peer;
  x.tag = s.tag;
  x.value = s.value;
  return x;
}
}  // namespace

// The reference: the steps as items on this thread, each send and receive through the DMA
// engine's blocking handle and matched with the plain messages (SimOptions::relayouts_by_items).
void Core::run_relayout_items(const Item& it, const RelayoutRunner::Steps& steps) {
  for (const RelayoutStep& s : steps) {
    step_ = step_item(it, s);
    execute(step_);
  }
}

void Core::step_done(const RelayoutStep& s, Cycles start, Cycles end) {
  const Activity a = s.kind == RelayoutStep::Send   ? Activity::Send
                     : s.kind == RelayoutStep::Recv ? Activity::Recv
                                                    : Activity::Compute;
  ++items_run_;
  account(a, s.tag, start, end);
}

const Item& Core::current() const {
  if (!relayout_) return prog_.code[pc_];
  if (relayouts_by_items_) return step_;  // the step being executed
  const RelayoutStep* s = dma->relayout_step();
  step_ = s ? step_item(*relayout_, *s) : *relayout_;
  return step_;
}

void Core::account(Activity a, std::uint32_t tag, Cycles start, Cycles end) {
  busy_[static_cast<int>(a)] += end - start;
  if (tag != kNoTag) {
    tags_.busy[tag][static_cast<int>(a)] += end - start;
    tags_.first[tag] = std::min(tags_.first[tag], start);
    tags_.last[tag] = std::max(tags_.last[tag], end);
  }
  if (trace_) trace_->span(track_, activity_name(a), start, end - start);
  if (segments_ && segments_->recording) segments_->note(index_, tag, a, start, end);
}

void Core::execute(const Item& it) {
  const bool moves = it.op == Op::Send || it.op == Op::Recv || it.op == Op::Wait;
  if (fx_ && !moves) functional(it);
  if (it.op == Op::Alloc || it.op == Op::Free || it.op == Op::Init) return;
  ++items_run_;
  const Cycles start = now_cycles();
  Activity a = Activity::Compute;
  switch (it.op) {
    case Op::Compute: wait(cycles(it.value)); break;
    case Op::Sync: a = Activity::Sync; barrier->arrive(it.arg, prog_.core); break;
    default: a = transfer(it); break;
  }
  account(a, it.tag, start, now_cycles());
}

}  // namespace tessera::sim
