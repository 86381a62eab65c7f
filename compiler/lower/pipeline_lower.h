#pragma once
// A pipeline plan and its micro-batch schedule as a program for the simulator's pipeline runner
// (sim/pipeline, docs/pipeline.md). Per stage replica (one chip each), in the schedule's order:
// a forward pass waits for the activations of its samples from every predecessor replica that
// holds some, runs its layers one by one (a compute step each, FLOPs and memory bytes of that
// share of the micro-batch), keeps their activations, and sends each successor replica the
// samples it takes; a backward pass the same the other way (twice the FLOPs and bytes), freeing
// the activations. After its last pass a stage with replicas all-reduces its weight gradients
// in a ring (2 (r - 1) messages of 1/r of them per replica). Each chip holds its stage's
// parameter state throughout.
#include "compiler/partition/pipeline_schedule.h"
#include "sim/pipeline/pipeline.h"

namespace tessera::lower {

sim::PipelineProgram lower_pipeline(const partition::PipeModel& m, const partition::PipePlan& plan,
                                    const partition::PipeSchedule& schedule);

}  // namespace tessera::lower
