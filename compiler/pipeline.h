#pragma once
// A model placed across chips, compiled and run as a pipeline (docs/partition.md): every chip's
// share (partition::split_workload) is planned, scheduled and lowered for one chip's cores and
// memory, the shares are joined into one program over the system (lower::join_chips), and the
// simulator runs it with micro-batches flowing through the chips.
#include <cstdint>
#include <vector>

#include "compiler/compile.h"
#include "compiler/partition/split.h"
#include "compiler/lower/join.h"

namespace tessera::compiler {

// A chip's share does not fit its memory: the compiler's own lowering of that share (the
// dynamic check of the MCM paper), not the static byte count.
struct ChipFitError : Error {
  std::uint32_t chip;
  ChipFitError(const std::string& msg, std::uint32_t c) : Error(msg), chip(c) {}
};

// The config of one of the system's chips on its own (no system section).
sim::Config one_chip(const sim::Config& cfg);

// The config of a device of `chips_per_device` consecutive chips of the system, on its own: one
// chip (one_chip) for 1; the whole system for all of them; otherwise the system's one dimension
// cut to that size, which needs a system of one dimension whose size it divides, and, for a ring,
// 2 chips (joined both ways by one link each, as in the ring) or all of them (a segment of more
// than two chips of a ring has no link from its last chip back to its first), and none of a
// unidirectional ring but all of it. Throws Error naming what does not hold.
sim::Config device_config(const sim::Config& cfg, std::uint32_t chips_per_device);

// A placement's units are devices: groups of `chips_per_device` consecutive chips (1: every
// chip on its own). A device's share is planned over all its chips' cores as one flat space
// (the cost model prices the links between them), so one operator can span chips.
struct PlacedModel {
  std::string workload;
  std::uint32_t chips_per_device = 1;
  partition::Split split;                        // its "chips" are the devices
  std::vector<Compiled> chips;                   // device c's share, compiled for one device
  std::vector<lower::ChipTransfer> transfers;    // split.crossings with their layouts
  std::vector<Bytes> sent_bytes;                 // per chip, what it sends to later chips
  double compile_seconds = 0;
  // The cost model's pipeline: the slowest chip, counting the bytes it sends at the chip link's
  // rate (the fast estimate a search ranks placements by before simulating).
  double predicted_interval_cycles = 0;
};

// Throws Error for a placement that fails the constraints, ChipFitError when a device's share
// does not fit its memory (its `chip` is the device's index).
PlacedModel compile_placed(const ir::Workload& w, const partition::Placement& f, const sim::Config& cfg,
                           const CompileOptions& o, std::uint32_t chips_per_device = 1);

// The placed model as one program: `micro_batches` micro-batches (each of the workload's batch)
// through the chips.
lower::Lowered join(const PlacedModel& m, const sim::Config& cfg, std::uint32_t micro_batches);

struct PipelineRun {
  std::uint64_t latency_cycles = 0;    // one micro-batch through every chip
  std::uint64_t total_cycles = 0;      // all micro-batches
  double interval_cycles = 0;          // steady state: (total - latency) / (micro-batches - 1)
  std::uint32_t micro_batches = 0;
  std::vector<std::uint64_t> chip_cycles;  // each device's share of one micro-batch, simulated alone
  double throughput_per_second = 0;    // micro-batches per second at the steady-state interval
  double sim_seconds = 0;              // host CPU time of the two pipeline runs
};

// Simulates the placed model with one micro-batch (latency) and with `micro_batches` (the
// interval; at least 2), and with `chip_alone`, each chip's share on its own.
PipelineRun run_pipeline(const PlacedModel& m, const sim::Config& cfg, std::uint32_t micro_batches, bool chip_alone);

}  // namespace tessera::compiler
