#pragma once
// A DFModel-style mapping (compiler/partition/dfmodel, docs/parallel.md) as a program for the
// simulator's pipeline runner (sim/pipeline): `micro_batches` micro-batches through the pipeline
// (inference), or one training iteration of the mapping's micro-batches (1F1B, backward passes,
// then the DP replicas' gradient all-reduce as two rings). Every chip (TP index t, PP stage s, DP replica r, from the mapping's strategy per
// topology dimension) runs, per micro-batch: wait for the stage before it (its TP peer's share
// of the layer output), then for each of its stage's layers and each partition a compute step
// (the partition's FLOPs and DRAM bytes on one chip: the NPU prices it as the longer of the two,
// the model's max(compute, DRAM)) with a ring all-reduce of each row-sharded kernel's output
// over the TP group (2 (TP - 1) messages of 1/TP of it per chip, in two rings); then it sends its
// share of the output to the next stage. Chips hold their stage's weights throughout.
//
// `stream`: as the model assumes, a partition streams through in sequence tiles (micro-batch x
// seq / seq_tile of them) and each tile's all-reduces run while the next tile computes; only the
// last tile's are exposed. Without it, each partition's all-reduces run after all its compute.
#include "compiler/partition/dfmodel.h"
#include "sim/pipeline/pipeline.h"

namespace tessera::lower {

// Throws Error for an infeasible evaluation, a system whose dimensions differ from the
// mapping's, or a micro-batch count out of 1..4096. Training: `micro_batches` is ignored (the
// evaluation's own count is the iteration's).
sim::PipelineProgram lower_mapping(const partition::LlmSpec& llm, const partition::SystemSpec& sys,
                                   const partition::Evaluation& e, std::uint64_t micro_batches, bool stream = true);

// What the model says the same run takes: (micro-batches + PP - 1) intervals; training, its
// iteration.
double mapping_model_seconds(const partition::Evaluation& e, std::uint64_t micro_batches);

}  // namespace tessera::lower
