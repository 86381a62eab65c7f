#include "sim/core/core.h"

#include "sim/common/clock.h"
#include "sim/common/error.h"
#include "sim/results/trace.h"

namespace tessera::sim {

const char* activity_name(Activity a) {
  static const char* names[kActivities] = {"compute", "send", "recv", "sync", "memory"};
  return names[static_cast<int>(a)];
}

Core::Core(sc_core::sc_module_name name, const CoreProgram& program, std::uint32_t chip,
           TraceRecorder* trace, int trace_track, RunStatus& status)
    : sc_core::sc_module(name), net("net"), barrier("barrier"), memory("memory"), prog_(program),
      chip_(chip), trace_(trace), track_(trace_track), status_(status) {
  SC_THREAD(run);
}

void Core::run() {
  try {
    // Loop counters live on a small stack; nesting depth is bounded by the program text.
    std::vector<std::uint32_t> remaining;
    const auto& code = prog_.code;
    while (pc_ < code.size()) {
      const Item& it = code[pc_];
      if (it.op == Op::LoopBegin) {
        remaining.push_back(it.arg);
        ++pc_;
      } else if (it.op == Op::LoopEnd) {
        if (--remaining.back() > 0) {
          pc_ = it.arg + 1;
        } else {
          remaining.pop_back();
          ++pc_;
        }
      } else {
        execute(it);
        ++pc_;
      }
    }
    done_ = true;
    finish_ = now_cycles();
  } catch (const std::exception& e) {
    status_.error = e.what();
    status_.simulation_error = dynamic_cast<const SimulationError*>(&e) != nullptr;
    sc_core::sc_stop();
  }
}

void Core::execute(const Item& it) {
  const Cycles start = now_cycles();
  Activity a = Activity::Compute;
  switch (it.op) {
    case Op::Compute: wait(cycles(it.value)); break;
    case Op::Send: a = Activity::Send; net->send(prog_.core, it.arg, it.value); break;
    case Op::Recv: a = Activity::Recv; net->recv(prog_.core, it.arg, it.value); break;
    case Op::Sync: a = Activity::Sync; barrier->arrive(it.arg, prog_.core); break;
    case Op::Load: a = Activity::Memory; memory->transfer(chip_, it.value, false); break;
    case Op::Store: a = Activity::Memory; memory->transfer(chip_, it.value, true); break;
    default: break;
  }
  const Cycles end = now_cycles();
  busy_[static_cast<int>(a)] += end - start;
  if (trace_) trace_->span(track_, activity_name(a), start, end - start);
}

}  // namespace tessera::sim
