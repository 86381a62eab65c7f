#pragma once
// Pipeline-parallel training on a system of NPUs (docs/pipeline.md): each chip is a GPU-like
// NPU (system.npu) running its own list of steps — compute (a roofline: FLOPs at the NPU's rate
// or bytes at its memory bandwidth, whichever is longer), send a message to another chip (handed
// to the AFI: the NPU goes on at once), wait for a message to have arrived. Messages cross the
// packet network in time order (sim/noc/packet_net), from the sender's AFI port to the receiver's.
// Memory: each chip holds its resident bytes throughout, and compute steps add or free bytes
// (activations kept from a forward pass until its backward pass); more than the chip's
// chip.offchip.capacity_bytes is an error naming the chip and step.
//
// The compiler's pipeline planner writes these programs (compiler/lower/pipeline_lower); the
// simulator knows nothing of stages or micro-batches.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/config.h"

namespace tessera::sim {

struct PipeStep {
  enum Kind : std::uint8_t { Compute, Send, Wait } kind = Compute;
  double flops = 0, bytes = 0;       // Compute
  std::int64_t memory_delta = 0;     // Compute: bytes held from its start on (negative: freed)
  std::uint32_t message = 0;         // Send, Wait
  std::uint32_t label = 0;           // Compute: index into PipelineProgram::labels (trace)
};

struct PipeMessage {
  std::uint32_t src = 0, dst = 0;  // chips
  Bytes bytes = 0;
};

struct PipelineProgram {
  std::vector<std::vector<PipeStep>> devices;  // device d runs on chip d
  std::vector<Bytes> resident_bytes;           // per device
  std::vector<PipeMessage> messages;           // each sent once by its src, waited for once by its dst
  std::vector<std::string> labels;
};

struct PipeSpan {
  std::uint32_t device = 0, label = 0;
  Cycles start = 0, end = 0;
};

struct PipelineResult {
  Cycles cycles = 0;                     // the last step done
  std::vector<Cycles> busy_cycles;       // per device: computing
  std::vector<Bytes> peak_memory_bytes;  // per device
  std::uint64_t messages = 0;
  Bytes message_bytes = 0;
  std::vector<PipeSpan> spans;           // compute steps of equal label in a row merged
};

// Throws ProgramError for a malformed program (a message out of range, sent or waited for by the
// wrong chip or not exactly once, more devices than chips), SimulationError when a chip runs out
// of memory or waits for a message that never comes.
PipelineResult run_pipeline(const Config& cfg, const PipelineProgram& p);

}  // namespace tessera::sim
