#pragma once
// Graph pipeline parallelism (GraphPipe, the thesis's ch. 3; docs/pipeline.md): a training model
// cut into pipeline stages that form a DAG, not a chain, so that independent branches run on
// different devices at once and the pipeline is shallower. Series-parallel decomposition of the
// layer graph; a binary search on the bottleneck time per sample (TPS), each probe a memoised
// dynamic program whose value is the least in-flight samples at the entry stage (feasible: every
// stage's TPS under the probe and its memory within the device); per stage a micro-batch size,
// a data-parallel degree and a kFkB k. The sequential baseline (PipeDream-style: one chain of
// stages) is the same search on the layers as one chain; its stages form a chain too, each
// passing on every tensor that a later stage reads (a branch waits for the stage before it).
//
// ESTIMATETPS, which the thesis leaves open, is ours: a stage's forward and backward pass per
// micro-batch as a roofline per layer on the device (system.npu), the activations in and the
// gradients out over the slowest link of the system, the data-parallel gradient all-reduce
// shared over the mini-batch. Nothing here runs the simulator; compiler/lower/pipeline_lower
// turns a plan into a program for it.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/partition/pipeline_model.h"
#include "sim/config/config.h"

namespace tessera::partition {

// The devices: chips of a system, each a GPU-like NPU (system.npu) with the off-chip memory as
// its capacity.
struct DeviceSpec {
  std::uint32_t devices = 1;
  double flops_per_s = 0, memory_bytes_per_s = 0, capacity_bytes = 0;
  double link_bytes_per_s = 0;  // the slowest dimension's link, as the simulator carries it
  double clock_hz = 0;
  // Per dimension of the topology (the first varies fastest over chip numbers): size and the
  // link's rate. The search does not know where stages go and prices at the slowest link; the
  // schedule's estimate does.
  std::vector<std::pair<std::uint32_t, double>> dims;
  // The slowest link on the way between two chips (dimension-order routing crosses each
  // dimension in which they differ).
  double link_between(std::uint32_t a, std::uint32_t b) const;
};
// Throws Error when the config has no system.npu, no capacity, or fewer chips than `devices`.
DeviceSpec device_spec(const sim::Config& cfg, std::uint32_t devices);

// A series-parallel decomposition of the layer DAG: a leaf is a layer; a series node's children
// run one after another (every edge between two of them goes forward, and each cut between
// consecutive children is crossed by edges from one layer or into one layer); a parallel node's
// children share no edge.
struct SpNode {
  enum Kind : std::uint8_t { Leaf, Series, Parallel } kind = Leaf;
  std::uint32_t layer = 0;                 // leaf
  std::vector<std::uint32_t> children;     // series, parallel
  std::vector<std::uint32_t> layers;       // every layer below, ascending
  // parallel: its last child ends in the layers where all its children meet (a join, below),
  // so the others send to a stage of that child
  bool join = false;
  std::uint32_t join_layer = 0;  // join: the first layer where they meet
};
struct SpTree {
  std::vector<SpNode> nodes;
  std::uint32_t root = 0;
  // Parts that were not series-parallel, linearised into a series of their layers (in
  // topological order): an arithmetically identical graph that is series-parallel.
  std::uint32_t linearised_parts = 0;
};
SpTree sp_decompose(const PipeModel& m);
// The whole model as one chain of its layers in order (the sequential baseline's view).
SpTree chain_tree(const PipeModel& m);

enum class PipePlanner : std::uint8_t { GraphPipe, Sequential };
const char* pipe_planner_name(PipePlanner p);
PipePlanner parse_pipe_planner(const std::string& name);  // throws Error listing them

struct PipeOptions {
  PipePlanner planner = PipePlanner::GraphPipe;
  std::uint64_t mini_batch = 64;     // samples per iteration
  std::vector<std::uint32_t> ks = {1};  // kFkB k the search may give a stage ({1}: 1F1B)
  std::uint64_t min_micro_batch = 1;    // micro-batch sizes: powers of two from this up to mini_batch
  double tolerance = 1e-3;              // binary search: stop when the bracket is this share of the upper end
  // Data-parallel replicas a stage may have at most (a power of two); 0: as many as its devices.
  // 1 plans without data parallelism (the thesis's case study: both planners found none).
  std::uint32_t max_replicas = 0;
  // Solve structurally identical subproblems once (equal branches, equal ranges of branches).
  // The plans are the same either way (test/partition/graphpipe_test.cpp); off for that test.
  bool share_equal_subproblems = true;
};

struct PipeStage {
  std::vector<std::uint32_t> layers;   // ascending
  std::uint32_t first_device = 0, replicas = 1;  // devices first_device .. + replicas - 1
  std::uint64_t micro_batch = 1;       // samples per micro-batch, split evenly over the replicas
  std::uint32_t k = 1;                 // kFkB (1: 1F1B)
  std::uint64_t in_flight = 0;         // samples whose activations it holds at most (Table 3.2)
  double forward_s = 0, backward_s = 0;  // one micro-batch's share on one replica
  double tps_s = 0;                    // its time per sample
  double allreduce_s = 0;              // its gradient all-reduce over the replicas, per iteration
  double memory_bytes = 0;             // per device: parameters' state and in-flight activations
  std::vector<std::uint32_t> preds, succs;  // stages
  std::vector<double> succ_bytes;      // per sample, to each of succs: activations (gradients come back)
  std::string name;                    // first and last layer
};

struct PipePlan {
  std::string model;
  PipePlanner planner = PipePlanner::GraphPipe;
  std::uint64_t mini_batch = 0;
  std::vector<PipeStage> stages;       // topological order
  double tps_s = 0;                    // the bottleneck stage's time per sample (estimate)
  std::uint32_t devices_used = 0;
  std::uint32_t depth = 0;             // stages on the longest path
  std::uint32_t binary_search_probes = 0;
  std::uint64_t dp_states = 0;         // DP values computed over all probes (search effort)
  std::uint32_t linearised_parts = 0;
};

// Throws Error when no plan fits the devices' memory, or on a bad option (a mini-batch that is
// not a power of two, no devices, k = 0).
PipePlan plan_pipeline(const PipeModel& m, const DeviceSpec& dev, const PipeOptions& o);

// Table 3.2: the samples stage x holds in flight under kFkB, given its successor y's micro-batch,
// k and in-flight samples. `by` = 0: x is last (it holds k_x b_x).
std::uint64_t kfkb_in_flight(std::uint32_t kx, std::uint64_t bx, std::uint32_t ky, std::uint64_t by, std::uint64_t iy);

// The roofline time of a forward (backward: twice the FLOPs and bytes) pass of `layers` for
// `samples` samples on one device.
double pass_seconds(const PipeModel& m, const std::vector<std::uint32_t>& layers, double samples,
                    const DeviceSpec& dev, bool backward);

}  // namespace tessera::partition
