#pragma once
// Training models for pipeline planning (GraphPipe, docs/pipeline.md): a DAG of layers, each
// described by what a pipeline planner needs per sample and per micro-batch — forward FLOPs,
// the memory traffic, the activation it hands to its consumers, what it keeps for its backward
// pass, its parameters. Built-in generators for the multi-branch models of the GraphPipe
// evaluation (MMT, CANDLE-Uno, DLRM) and its 2-branch case study.
#include <cstdint>
#include <string>
#include <vector>

namespace tessera::partition {

struct PipeLayer {
  std::string name;
  std::vector<std::uint32_t> inputs;  // producing layers, each earlier in the list
  double flops = 0;                   // forward, per sample
  double params = 0;                  // parameters (weights); optimiser state is per parameter
  // Memory traffic of the forward pass: the weights it reads once per micro-batch, and bytes
  // per sample (activations read and written, embedding rows gathered). Backward: twice both.
  double weight_read_bytes = 0;
  double sample_bytes = 0;
  double out_bytes = 0;    // per sample: the activation each consumer receives (its gradient comes back)
  double stash_bytes = 0;  // per sample: kept from the forward pass until the backward pass
};

struct PipeModel {
  std::string name;
  std::vector<PipeLayer> layers;  // topological order
  double param_bytes = 2;         // fp16 weights (and gradients) on the wire
  double state_bytes_per_param = 16;  // mixed-precision Adam: fp16 weight and gradient, fp32 master, m, v
  double total_flops() const;     // forward, per sample
  double total_params() const;
};

// Throws Error naming the layer when an input is not an earlier layer, or a figure is negative
// or not finite, or the model has no layers.
void validate(const PipeModel& m);

struct TransformerShape {
  std::uint64_t seq = 256, hidden = 1024, heads = 16, ffn = 4096;
};

// MMT: `branches` parallel stacks of `layers` transformer layers (one per modality), their
// outputs concatenated and fused by a linear layer (GraphPipe: 4 x 8, sequence 256, hidden
// 1024, 16 heads, FFN 4096).
PipeModel mmt_model(std::uint32_t branches = 4, std::uint32_t layers = 8, const TransformerShape& t = {});
// CANDLE-Uno: `branches` feature-encoder stacks of `layers` feed-forward layers of `width`,
// concatenated, then two feed-forward layers of `width` and the output (GraphPipe: 7 x 4 x 4096).
PipeModel candle_uno_model(std::uint32_t branches = 7, std::uint32_t layers = 4, std::uint64_t width = 4096);
// DLRM: `dense` branches of 4 feed-forward layers of `width`, `sparse` embedding branches
// (tables of `rows` rows of `dim`, `bag` lookups per sample), concatenated, then three
// feed-forward layers of `width` and the output (GraphPipe: 7 + 7, 4096, 1M x 64, bag 100).
PipeModel dlrm_model(std::uint32_t dense = 7, std::uint32_t sparse = 7, std::uint64_t width = 4096,
                     std::uint64_t rows = 1000000, std::uint64_t dim = 64, std::uint64_t bag = 100);
// The case study: two branches of 4 x [multi-head attention, two linear layers], concatenated
// and fused by a linear layer.
PipeModel two_branch_model(const TransformerShape& t = {});

// By name: mmt, candle-uno, dlrm, two-branch; `branches` 0 keeps the model's default (for mmt
// and candle-uno the branch count, for dlrm the count of each kind). Throws Error listing them.
PipeModel pipe_model_by_name(const std::string& name, std::uint32_t branches = 0);
const std::vector<std::string>& pipe_model_names();

}  // namespace tessera::partition
