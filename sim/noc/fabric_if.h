#pragma once
// The interface between a core's DMA engine and the interconnect. Both calls return at once; the
// completion says when the transfer is done (docs/hardware-model.md).
#include <memory>
#include <systemc>

#include "sim/common/completion.h"
#include "sim/common/types.h"
#include "sim/functional/data.h"
#include "sim/noc/relayout_engine.h"

namespace tessera::sim {

class FabricIf : public virtual sc_core::sc_interface {
 public:
  // Starts a message; `done` completes when the source has sent its last byte. `payload`
  // carries values in functional mode (null otherwise).
  virtual void send(std::uint32_t src, std::uint32_t dst, Bytes bytes,
                    std::shared_ptr<const Payload> payload, Completion& done) = 0;
  // Posts a receive of the next message from `src` (messages between two cores match in send
  // order); `done` completes when it has fully arrived, with an error if its size is not `bytes`.
  virtual void recv(std::uint32_t dst, std::uint32_t src, Bytes bytes, Completion& done) = 0;
  // `core` takes its chip's part in the program's collective `index`; `done` completes when the
  // chip's part is done (the collective engine's say).
  virtual void collective(std::uint32_t core, std::uint32_t index, Completion& done) = 0;
  // `core` runs its `count` steps of relayout `relayout` (sends, copies, receives in order; the
  // relayout has `pieces` pieces) as the items they stand for; `done` completes when the last
  // is done. Each step is reported to `sink` as it finishes (relayout_engine.h).
  virtual void relayout(std::uint32_t core, std::uint32_t relayout, std::uint32_t pieces, const RelayoutStep* steps,
                        std::size_t count, StepSink& sink, Completion& done) = 0;
  // No core runs the relayout any more.
  virtual void relayout_finished(std::uint32_t relayout) = 0;
  // The relayout step `core` is at, or null (deadlock reports).
  virtual const RelayoutStep* relayout_step(std::uint32_t core) const = 0;
};

}  // namespace tessera::sim
