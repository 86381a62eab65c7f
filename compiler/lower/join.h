#pragma once
// Programs of a model split across chips (compiler/partition): every chip's share is lowered on
// its own, for one chip's cores; join_chips makes them one program over the system, with the
// activations that cross chips moved between them and the chips' work repeated per micro-batch,
// so that chips work on different micro-batches at once (a pipeline). docs/partition.md.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/lower/lower.h"

namespace tessera::lower {

// Where `tensor` lives on the cores once the operator producing it has run: its home in lower()
// (T10: the producer's output layout; VGM: stripes over all cores).
std::vector<sim::View> home_views(const ir::Workload& w, const schedule::Schedule& s, const std::string& tensor,
                                  std::size_t cores);

// An activation moved from one chip to another: from its home on the producer's cores to the
// stripes the consumer's program expects of an input (core ids local to each chip).
struct ChipTransfer {
  std::string tensor;
  std::string producer;  // the operator that computes it: its cores send right after it
  std::vector<std::int64_t> shape;
  std::uint32_t from = 0, to = 0;
  std::vector<sim::View> src, dst;
};

// Chip c's program (lowered for one chip: cores 0..n-1) runs on cores c*n..c*n+n-1; its barriers
// stay on its own cores. Per micro-batch, each chip's cores: allocate the inputs, receive what
// earlier chips send (one relayout per transfer, in the order of `transfers`), run the
// operators, sending what later chips read as soon as the operator producing it is done, and
// free the outputs. Weights and the shift buffer are
// allocated once, before the first micro-batch. Sends are eager, so a chip that finished sending
// goes on with its next micro-batch while the receivers are still busy with the previous one.
// micro_batches 1: no repeat. Throws Error when the chips do not fit the system.
// `chips` are not copied: a search joins the same chip programs twice per sample.
// `chips_per_device` > 1: each program is a device's, lowered for that many consecutive chips'
// cores (n is then their cores together), and "chip" above reads "device".
Lowered join_chips(const std::vector<const Lowered*>& chips, const std::vector<ChipTransfer>& transfers,
                   const sim::Config& system, std::uint32_t micro_batches, const std::string& name,
                   std::uint32_t chips_per_device = 1);

}  // namespace tessera::lower
