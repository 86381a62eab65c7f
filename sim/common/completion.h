#pragma once
// The end of an asynchronous transfer (a send, receive, load or store started by a core's DMA
// engine): the component that carries the transfer decides when it completes, possibly some
// cycles ahead, and the core that waits for it resumes at that cycle.
#include <memory>
#include <string>
#include <systemc>

#include "sim/common/clock.h"
#include "sim/common/types.h"
#include "sim/functional/data.h"

namespace tessera::sim {

struct Completion {
  Cycles at = kNever;                       // the cycle it completes, once known
  sc_core::sc_event done;                   // notified at `at`
  std::shared_ptr<const Payload> payload;   // what a receive carried (functional mode)
  std::string error;                        // set instead of a payload when it cannot complete

  void reset() {
    at = kNever;
    payload.reset();
    error.clear();
  }
  // Completes at cycle `when` (>= the current cycle; the caller may run at a half cycle).
  void complete(Cycles when) {
    at = when;
    const sc_core::sc_time t = cycles(when), now = sc_core::sc_time_stamp();
    if (t > now) done.notify(t - now);
    else done.notify(sc_core::SC_ZERO_TIME);
  }
  // Suspends the calling thread until complete.
  void wait() {
    while (at == kNever) sc_core::wait(done);
    wait_until(at);
  }
};

}  // namespace tessera::sim
