#pragma once
// Lowering a schedule to the program the simulator runs (docs/program.md). Every tensor has a home
// layout (model inputs: striped over all cores and loaded from off-chip; weights: their idle plan
// for T10, the VGM stripes for VGM; activations: their producer's output layout for T10, VGM
// stripes for VGM). Before an operator runs, its operands are laid out for its active plan by
// exchange (the setup phase for weights, the input phase for activations); then every core runs
// the plan's compute steps, rotating partitions to ring neighbours through the bounded shift
// buffer; buffers are freed when their last reader has run.
#include <string>

#include "compiler/ir/graph.h"
#include "compiler/schedule/schedule.h"
#include "sim/common/json_reader.h"
#include "sim/config/config.h"

namespace tessera::lower {

struct Options {
  bool functional = false;         // unrolled, with the values-carrying details
  Bytes shift_buffer_bytes = 8192;
};

Json lower(const ir::Workload& w, const schedule::Schedule& s, const sim::Config& cfg,
           const Options& o);

// Reference evaluation of the whole graph with the functional mode's initial values: every
// model output, in row-major order.
std::map<std::string, std::vector<float>> reference_outputs(const ir::Workload& w);

}  // namespace tessera::lower
