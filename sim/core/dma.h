#pragma once
// A core's DMA engine: starts sends, receives, loads and stores on the core's behalf and keeps
// one completion per handle, so a core can issue a transfer, compute while it moves, and wait for
// it later (program items with a "handle", then "wait"). Handle 0 is the blocking forms' own.
// The engine adds no time of its own: the interconnect and the memory decide when a transfer
// completes; the core pays `chip.dma.issue_cycles` to issue an asynchronous one.
#include <memory>
#include <systemc>
#include <vector>

#include "sim/common/completion.h"
#include "sim/memory/offchip.h"
#include "sim/noc/fabric_if.h"

namespace tessera::sim {

class DmaIf : public virtual sc_core::sc_interface {
 public:
  virtual void send(std::uint32_t handle, std::uint32_t dst, Bytes bytes, std::shared_ptr<const Payload> payload) = 0;
  virtual void recv(std::uint32_t handle, std::uint32_t src, Bytes bytes) = 0;
  virtual void memory(std::uint32_t handle, Bytes bytes, bool write) = 0;
  virtual void collective(std::uint32_t handle, std::uint32_t index) = 0;
  // The core's steps of a relayout, run back to back by the engine (relayout_engine.h); the
  // blocking handle's wait returns when the last is done.
  virtual void relayout(std::uint32_t relayout, std::uint32_t pieces, const RelayoutStep* steps, std::size_t count,
                        StepSink& sink) = 0;
  virtual void relayout_finished(std::uint32_t relayout) = 0;
  virtual const RelayoutStep* relayout_step() const = 0;
  // Blocks until the transfer on `handle` is complete; returns what a receive carried. Throws
  // SimulationError when it cannot complete (a receive whose size differs from the send's).
  virtual std::shared_ptr<const Payload> wait(std::uint32_t handle) = 0;
};

class Dma : public sc_core::sc_module, public DmaIf {
 public:
  sc_core::sc_port<FabricIf> net;
  sc_core::sc_port<MemoryIf> mem;

  Dma(sc_core::sc_module_name name, std::uint32_t core, std::uint32_t handles);
  void send(std::uint32_t handle, std::uint32_t dst, Bytes bytes, std::shared_ptr<const Payload> payload) override;
  void recv(std::uint32_t handle, std::uint32_t src, Bytes bytes) override;
  void memory(std::uint32_t handle, Bytes bytes, bool write) override;
  void collective(std::uint32_t handle, std::uint32_t index) override;
  void relayout(std::uint32_t relayout, std::uint32_t pieces, const RelayoutStep* steps, std::size_t count,
                StepSink& sink) override;
  void relayout_finished(std::uint32_t relayout) override { net->relayout_finished(relayout); }
  const RelayoutStep* relayout_step() const override { return net->relayout_step(core_); }
  std::shared_ptr<const Payload> wait(std::uint32_t handle) override;
  // No transfer started and not yet waited for (fast-forward).
  bool idle() const {
    for (const bool a : active_)
      if (a) return false;
    return true;
  }

 private:
  Completion& start(std::uint32_t handle);

  std::uint32_t core_;
  std::vector<std::unique_ptr<Completion>> slots_;
  std::vector<bool> active_;
};

}  // namespace tessera::sim
