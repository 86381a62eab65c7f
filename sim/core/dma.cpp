#include "sim/core/dma.h"

#include <fmt/format.h>

#include "sim/common/error.h"

namespace tessera::sim {

Dma::Dma(sc_core::sc_module_name name, std::uint32_t core, std::uint32_t handles)
    : sc_core::sc_module(name), net("net"), mem("mem"), core_(core), active_(handles + 1, false) {
  for (std::uint32_t i = 0; i <= handles; ++i) slots_.push_back(std::make_unique<Completion>());
}

Completion& Dma::start(std::uint32_t handle) {
  // The program reader rejects a handle reused before its wait; this guards the invariant.
  if (active_[handle])
    throw SimulationError(fmt::format("core {}: DMA handle {} started again before it was waited for", core_, handle));
  active_[handle] = true;
  Completion& c = *slots_[handle];
  c.reset();
  return c;
}

void Dma::send(std::uint32_t handle, std::uint32_t dst, Bytes bytes, std::shared_ptr<const Payload> payload) {
  Completion& c = start(handle);
  net->send(core_, dst, bytes, std::move(payload), c);
}

void Dma::recv(std::uint32_t handle, std::uint32_t src, Bytes bytes) {
  Completion& c = start(handle);
  net->recv(core_, src, bytes, c);
}

void Dma::memory(std::uint32_t handle, Bytes bytes, bool write) {
  Completion& c = start(handle);
  mem->transfer(core_, bytes, write, c);
}

void Dma::collective(std::uint32_t handle, std::uint32_t index) {
  Completion& c = start(handle);
  net->collective(core_, index, c);
}

void Dma::relayout(std::uint32_t relayout, std::uint32_t pieces, const RelayoutStep* steps, std::size_t count,
                   StepSink& sink) {
  Completion& c = start(0);
  net->relayout(core_, relayout, pieces, steps, count, sink, c);
}

std::shared_ptr<const Payload> Dma::wait(std::uint32_t handle) {
  Completion& c = *slots_[handle];
  c.wait();
  active_[handle] = false;
  if (!c.error.empty()) throw SimulationError(c.error);
  return std::move(c.payload);
}

}  // namespace tessera::sim
