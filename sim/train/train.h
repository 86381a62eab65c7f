#pragma once
// Data-parallel training on a system of NPUs (the ACE paper's Sec. VI, `tessera train`).
//
// Per layer a table gives the forward, input-gradient and weight-gradient work (FLOPs and
// memory bytes) and the parameter count. The NPU (system.npu) prices each part as a roofline:
// the longer of its FLOPs at the share of the SMs left to compute and its bytes at the share of
// the memory bandwidth left to compute. Each layer's gradient is all-reduced (hierarchical, on
// the collective engine the configuration names) from the cycle its weight gradient is done;
// the layer's forward pass of the next iteration waits for it. Five configurations split the
// NPU between compute and communication as the paper's Table VI does, for the whole iteration
// or only while a collective is in flight (ShareHold). docs/train.md.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/collective/collective.h"
#include "sim/common/json_reader.h"
#include "sim/config/config.h"

namespace tessera::sim {

struct LayerWork {
  double flops = 0;
  double bytes = 0;  // memory read + written
};

struct TrainLayer {
  std::string name;
  std::uint64_t parameters = 0;
  LayerWork forward, input_grad, weight_grad;
  // Model-parallel layers (embeddings): per NPU, the bytes of an all-to-all after the forward
  // pass (the next layer waits for it) and of its gradient before the backward pass.
  Bytes alltoall_bytes = 0;
};

struct LayerTable {
  std::string name, description;
  std::uint32_t batch_per_npu = 1;
  std::uint32_t bytes_per_parameter = 2;
  std::vector<TrainLayer> layers;
};

// Reads a layer table (docs/train.md); throws Error naming the file and the field.
LayerTable load_layer_table(const std::string& path);
LayerTable parse_layer_table(const Json& json, const std::string& what);

enum class TrainMode : std::uint8_t { NoOverlap, CommOpt, CompOpt, Ace, Ideal };
TrainMode parse_train_mode(const std::string& name);  // throws Error listing them
const char* train_mode_name(TrainMode m);
constexpr TrainMode kTrainModes[] = {TrainMode::NoOverlap, TrainMode::CommOpt, TrainMode::CompOpt, TrainMode::Ace,
                                     TrainMode::Ideal};

// What a configuration gives communication; compute gets the rest of the SMs and memory
// bandwidth (all of both with NoOverlap, where the two never run at once).
struct TrainShares {
  std::string engine;               // ideal, cores or ace
  double comm_memory_gb_per_s = 0;  // what the collectives may use
  std::uint32_t comm_sms = 0;       // SMs running collective kernels (cores engine)
  bool overlap = true;              // false: every all-reduce issued when the backward pass ends
};
// Table VI of the paper: NoOverlap all of both when it communicates; CommOpt 450 GB/s and 6
// SMs; CompOpt 128 GB/s and 2 SMs; ACE 128 GB/s for its DMA and no SM; Ideal nothing.
TrainShares default_shares(TrainMode mode, const NpuConfig& npu, double clock_ghz);

// How long communication holds its share of the NPU: for the whole iteration (the paper's
// static split, Table VI), or only while a collective is in flight, compute getting all of the
// NPU otherwise (a compute step runs at the shared rate while anything is in flight and at the
// full rate for the rest of its work).
enum class ShareHold : std::uint8_t { Static, InFlight };
ShareHold parse_share_hold(const std::string& name);  // "static" or "in-flight"; throws Error

struct TrainSpec {
  TrainMode mode = TrainMode::Ideal;
  TrainShares shares;
  ShareHold hold = ShareHold::Static;
  Bytes chunk_bytes = 64 << 10;
  std::uint32_t chunks_in_flight = 16;
};

struct LayerTiming {
  Cycles forward_start = 0, forward_end = 0;  // iteration 2 (after waiting for the all-reduce)
  Cycles backward_start = 0, backward_end = 0;  // iteration 1
  Cycles allreduce_issued = 0, allreduce_done = 0;
  Bytes gradient_bytes = 0;  // padded so the hierarchical all-reduce divides it (0: no parameters)
};

struct TrainResult {
  Cycles compute_cycles = 0;    // one iteration's compute at compute's share, nothing waiting
                                // (in-flight shares: iteration 2's compute steps as they ran)
  Cycles iteration_cycles = 0;  // iteration 2: from the end of iteration 1's backward pass
  Cycles exposed_cycles = 0;    // iteration - compute: compute stalled waiting for communication
  Cycles comm_cycles = 0;       // from the first all-reduce issued to the last done
  Bytes gradient_bytes = 0;     // all-reduced per NPU per iteration
  std::vector<LayerTiming> layers;
  CollectiveResult comm;        // the engine's totals (memory bytes, link use)
};

// Throws Error when the config lacks system.npu or the parts the engine needs.
TrainResult run_training(const Config& cfg, const LayerTable& table, const TrainSpec& spec);
Json train_json(const Config& cfg, const LayerTable& table, const TrainSpec& spec, const TrainResult& r);
// Chrome/Perfetto trace of one run: the compute of both iterations, the all-reduces in flight.
Json train_trace(const Config& cfg, const LayerTable& table, const TrainSpec& spec, const TrainResult& r);

}  // namespace tessera::sim
