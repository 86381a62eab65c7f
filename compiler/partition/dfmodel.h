#pragma once
// Dataflow mappings of a large language model onto a system of chips, DFModel-style (docs/
// parallel.md): per dimension of the system's topology one of tensor (TP), pipeline (PP) or data
// parallelism (DP); per chip, the layer's kernels cut into partitions that run one after
// another, the kernels of a partition fused into a spatial pipeline (their tensors stay in SRAM,
// tensors between partitions go through DRAM), or one kernel per partition (kernel by kernel).
// A partition takes max(compute, DRAM, network) — they overlap — and a layer the sum over its
// partitions. An analytical first-order model: nothing here runs the simulator.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/config/config.h"

namespace tessera::partition {

// A GPT decoder layer's shape (the DFModel paper's Fig. 2A), forward pass for `micro_batch`
// sequences of `seq` tokens.
struct LlmSpec {
  std::string name = "gpt";
  std::uint32_t layers = 1;
  std::uint64_t hidden = 0, heads = 0, ffn = 0;  // ffn 0: 4 x hidden
  std::uint64_t seq = 0, micro_batch = 1;
  std::uint32_t word_bytes = 2;
  std::uint64_t seq_tile = 256;  // tokens per tile streamed through a fused partition
  // Weights stream through SRAM in this many chunks, two resident at a time (the DFModel code's
  // weight tiling; re-reading activations per chunk is not charged, as there).
  std::uint32_t weight_tiles = 4;
  // Training: every micro-batch also runs backward, and an iteration of `global_batch` sequences
  // (0: one micro-batch per DP replica) ends with the DP gradient all-reduce (docs/parallel.md).
  bool training = false;
  std::uint64_t global_batch = 0;
  // How a partition's compute is priced (docs/parallel.md, "Compute"): at the chip's peak, or
  // as the DFModel code does, on the chip's peak cut into arrays of array_rows x array_cols MACs
  // (`systolic`), each kernel of a partition given whole arrays and its work quantised onto them
  // per sequence tile. `weight_setup`: a partition's weights are loaded before it starts (their
  // DRAM time added to the partition's, as the DFModel code's setup latency) instead of
  // streaming beside its compute.
  bool systolic = false;
  std::uint32_t array_rows = 16, array_cols = 16;
  bool weight_setup = false;
};

// How a kernel's work divides over a tensor-parallel group (Megatron-LM's scheme): its output
// split by columns or by heads (no communication), or its weights split by rows (every chip
// holds a partial sum of the whole output: an all-reduce), or element-wise on the whole
// activation (repeated on every chip of the group).
enum class Shard : std::uint8_t { Column, Heads, Row, Replicated };

struct Kernel {
  std::string name;
  double flops = 0;           // whole layer, not yet sharded
  double weight_bytes = 0;
  double out_bytes = 0;       // its output tensor, whole (a sequence tile holds tile_share() of it)
  std::vector<int> inputs;    // producing kernels (indices into the layer); -1: the layer's input
  Shard shard = Shard::Replicated;
  // Its shape per token, whole layer, for the systolic compute model: the outputs a token has
  // (rows; heads x keys for the scores), the length of each output's dot product (depth); an
  // element-wise kernel takes one element of `rows` per lane per cycle. The kind says which
  // GEMMs its backward pass runs (docs/parallel.md, "Compute").
  enum class Kind : std::uint8_t { Weighted, Scores, Context, Elementwise };
  Kind kind = Kind::Elementwise;
  double rows = 0, depth = 0;
};

// Kernels in a topological (execution) order: Q, K, V, MHA1 (scores), softmax, MHA2, proj,
// add, FFN0 (with its activation), FFN1, add. Throws on a spec that has no layer.
std::vector<Kernel> gpt_layer(const LlmSpec& s);
// The share of a micro-batch's tokens one sequence tile holds.
double tile_share(const LlmSpec& s);

enum class Strategy : std::uint8_t { TP, PP, DP };
const char* strategy_name(Strategy s);

// What the model needs from a simulator config (sim::Config): the chip's peak and memories and
// the topology's dimensions, in bytes and FLOP per second.
struct DimSpec {
  sim::DimensionKind kind = sim::DimensionKind::Ring;
  std::uint32_t size = 1;
  double bytes_per_s = 0;  // one link to one neighbour, as the simulator carries it
};
struct SystemSpec {
  std::string name;
  double peak_flops = 0;     // cores x fp16 MACs per cycle x 2 x clock
  double clock_hz = 0;       // for the systolic compute model's cycles
  double sram_bytes = 0;     // all cores' scratchpads
  double dram_bytes_per_s = 0;
  double dram_capacity = 0;  // 0: not checked
  std::vector<DimSpec> dims;
  std::uint32_t chips() const;
};
SystemSpec system_spec(const sim::Config& cfg);

// An all-reduce of `bytes` over the group of dimensions `dims` (indices into s.dims), done
// hierarchically: reduce-scatter along each dimension in turn on what is left, all-gather back.
// Ring (both directions): 2 (p-1)/p S / (2 B), a ring of two 2 (p-1)/p S / B (one link each
// way between them); unidirectional ring: 2 (p-1)/p S / B; fully
// connected: each of p-1 links carries S/p: 2 S/(p B); switch: 2 (p-1)/p S / B.
double allreduce_seconds(const SystemSpec& s, const std::vector<std::size_t>& dims, double bytes);

struct PartitionCost {
  std::size_t first = 0, last = 0;  // kernels [first, last] of the layer
  double compute_s = 0, memory_s = 0, network_s = 0;
  double sram_bytes = 0;  // what it needs on the chip
  // Weight loads before the partition starts (LlmSpec::weight_setup; 0 otherwise), added to its
  // time; backward: the weights read and their gradients written.
  double setup_s = 0, backward_setup_s = 0;
  // The systolic compute model: cycles of one sequence tile (the slowest kernel's) and tiles.
  double tile_cycles = 0, tiles = 0;
  // per chip: FLOPs, DRAM bytes (reads, writes, weights), and the output of each row-sharded
  // kernel, all-reduced over the TP group (what compute_s, memory_s and network_s price)
  double flops = 0, dram_bytes = 0, weight_bytes = 0;
  std::vector<double> allreduce_bytes;
  // training: the input gradients of its column-sharded kernels, all-reduced (one per input)
  std::vector<double> backward_allreduce_bytes;
  double seconds() const;
  // Training: the same kernels backward, as one partition: twice the FLOPs, twice the DRAM
  // traffic plus the weight gradients written, and the all-reduces of the input gradients of
  // its column-sharded kernels (one per distinct input tensor).
  double backward_compute_s = 0, backward_memory_s = 0, backward_network_s = 0;
  double backward_seconds() const;
};

struct Mapping {
  std::vector<Strategy> dims;  // one per system dimension
  bool fused = true;           // false: kernel by kernel
  std::vector<std::size_t> sizes;  // fixed partition sizes (kernels each, in order); empty: best by DP
};

struct Evaluation {
  Mapping mapping;
  std::uint32_t tp = 1, pp = 1, dp = 1;
  bool feasible = false;
  std::string why;  // when not feasible
  std::vector<PartitionCost> partitions;  // one layer on one chip
  double layer_s = 0, stage_s = 0, p2p_s = 0, interval_s = 0;
  // training: backward per layer and micro-batch, micro-batches per replica and iteration, the
  // DP gradient all-reduce; interval_s is then the iteration
  double backward_layer_s = 0, gradient_allreduce_s = 0;
  std::uint64_t micro_batches = 1;
  double utilisation = 0;          // model FLOP / (interval x peak x chips)
  double tokens_per_s = 0;         // the whole system
  double compute_s = 0, memory_s = 0, network_s = 0;  // sums over the layer's partitions
};

// The systolic compute model for one partition: the fewest cycles per sequence tile of
// `tile_tokens` tokens such that its kernels (shapes after sharding) fit on `arrays` arrays of
// array_rows x array_cols MACs, each kernel on whole arrays (lanes x stages of them: lanes cover
// its rows array_cols at a time, stages its tokens array_rows at a time), a kernel taking
// ceil(rows / (array_cols lanes)) x ceil(tokens / (array_rows stages)) x depth cycles, or for
// an element-wise one ceil(rows / (array_cols lanes)) x tokens on lanes alone. The partition
// runs at its slowest kernel's rate. Exact: the least cycle count whose per-kernel minimal
// arrays sum within `arrays`, found by bisection. Throws if the kernels outnumber the arrays.
// `streamed`: what the arrays' other side runs over, the tile's tokens unless given (a weight
// gradient's outputs run over the input features, its dot products over the tile's tokens).
struct KernelShape {
  double rows = 0, depth = 0, streamed = 0;
  bool vector = false;
};
double tile_cycles(const std::vector<KernelShape>& kernels, double tile_tokens, std::uint32_t arrays,
                   std::uint32_t array_rows, std::uint32_t array_cols);

// One mapping, evaluated. Partitions are chosen by dynamic programming over the kernel order
// (contiguous runs, the least sum of partition times whose SRAM fits) unless fixed.
Evaluation evaluate(const LlmSpec& llm, const SystemSpec& sys, const Mapping& m);
// Every assignment of strategies to dimensions, for kernel by kernel and fused; best first
// (utilisation, then fewer pipeline stages). Infeasible mappings last, with the reason.
std::vector<Evaluation> search(const LlmSpec& llm, const SystemSpec& sys);
// Best first: feasible, then utilisation, then fewer pipeline stages (stable otherwise).
void rank(std::vector<Evaluation>& all);

// One iteration of a feasible mapping as a timeline, stage by stage (one TP group of each PP
// stage; DP replicas run the same): training in 1F1B order (stage s warms up with PP - 1 - s
// forwards, then alternates a backward and a forward, then drains), a forward of micro-batch j
// waiting for the stage before it plus the hand-off, a backward for the stage after it; then
// the DP gradient all-reduce on every stage. Inference: forwards only, one per interval.
struct StageSpan {
  std::uint32_t stage = 0;
  std::uint64_t micro_batch = 0;
  enum Kind : std::uint8_t { Forward, Backward, GradientAllReduce } kind = Forward;
  double start_s = 0, end_s = 0;
};
std::vector<StageSpan> timeline(const Evaluation& e);

// Per pipeline stage, its passes in order as (forward?, micro-batch): inference every forward;
// training 1F1B (stage s warms up with min(PP - 1 - s, m) forwards, then a forward and a
// backward in turn, then the backwards left).
std::vector<std::vector<std::pair<bool, std::uint64_t>>> stage_orders(std::uint32_t pp, std::uint64_t m, bool training);

}  // namespace tessera::partition
