#pragma once
// The static micro-batch scheduler of a pipeline plan (GraphPipe §3.6, docs/pipeline.md): per
// stage the order of its forward and backward passes over one iteration's micro-batches.
//
// - 1F1B / kFkB: w warm-up forwards (w = the stage's in-flight samples / its micro-batch, from
//   the planner's Table 3.2 figure), then k backwards and k forwards in turn, then the backwards
//   left (k = 1: 1F1B; each stage its own k from the plan).
// - greedy: a backward whenever one is ready, else the next forward if the stage holds fewer
//   than w micro-batches (its memory bound); decided in time order on the estimated times (the
//   idea of the thesis's Algorithm 4, backwards as early as possible; not its exact
//   time-optimality test).
//
// The orders are found by running the plan on the estimates in time order (stage times from
// the planner; a message waits for the sending stage's outbound and the receiving stage's
// inbound port of its link's rate, each replica carrying its share at that rate), which also
// gives the estimated iteration.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/partition/graphpipe.h"

namespace tessera::partition {

enum class MicroSchedule : std::uint8_t { KFKB, Greedy };  // KFKB with every k = 1 is 1F1B
const char* micro_schedule_name(MicroSchedule s);
MicroSchedule parse_micro_schedule(const std::string& name);  // 1f1b, kfkb, greedy; throws Error

struct PipeOp {
  bool backward = false;
  std::uint32_t micro_batch = 0;
  double start_s = 0, end_s = 0;  // estimated
};

struct PipeSchedule {
  MicroSchedule kind = MicroSchedule::KFKB;
  std::vector<std::vector<PipeOp>> order;       // per stage; its replicas run the same
  std::vector<std::uint64_t> peak_in_flight;    // per stage, samples
  std::vector<double> busy_s;                   // per stage (one replica), with its all-reduce
  double iteration_s = 0;                       // estimated: the last all-reduce or backward
  double samples_per_s = 0;                     // mini-batch / iteration
};

// Throws Error when the orders deadlock (a stage waits for a pass that waits for it), naming the
// stage.
PipeSchedule schedule_pipeline(const PipePlan& plan, const DeviceSpec& dev, MicroSchedule kind);

// Per-sample bytes stage `from` sends stage `to` (0 when it is not a successor).
double stage_edge_bytes(const PipePlan& plan, std::uint32_t from, std::uint32_t to);

}  // namespace tessera::partition
