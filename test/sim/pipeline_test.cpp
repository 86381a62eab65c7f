// The pipeline runner (sim/pipeline): NPU compute as a roofline, messages over the packet
// network between chips, memory held and freed, and the errors a bad program gets.
#include <catch2/catch.hpp>

#include "sim/pipeline/pipeline.h"
#include "test/support.h"

using namespace tessera;
using Catch::Matchers::Contains;

namespace {
// Two NPUs of 1000 FLOPs and 100 bytes per cycle on a ring: links of 16 B/cycle, latency 100.
sim::Config two_npus(Bytes capacity = 1 << 20) {
  Json c = test::collective_system(Json::array(
      {{{"kind", "ring"}, {"size", 2}, {"link_bytes_per_cycle", 16}, {"link_latency_cycles", 100}}}));
  c["system"]["npu"] = {{"sms", 1}, {"fp16_flops_per_cycle", 1000}, {"memory_bytes_per_cycle", 100}};
  c["chip"]["offchip"]["capacity_bytes"] = capacity;
  return test::config(c);
}
sim::PipeStep compute(double flops, double bytes, std::int64_t delta = 0) {
  sim::PipeStep s;
  s.flops = flops;
  s.bytes = bytes;
  s.memory_delta = delta;
  return s;
}
sim::PipeStep msg(sim::PipeStep::Kind k, std::uint32_t m) {
  sim::PipeStep s;
  s.kind = k;
  s.message = m;
  return s;
}
}  // namespace

TEST_CASE("pipeline runner: compute is a roofline of FLOPs and memory bytes, by hand", "[sim][pipeline]") {
  sim::PipelineProgram p;
  // 5000 FLOPs: 5 cycles; 1000 bytes: 10 cycles; both: the longer; 2500 FLOPs: 2.5, rounded up
  p.devices = {{compute(5000, 0), compute(0, 1000), compute(5000, 1000), compute(2500, 0)}};
  const sim::PipelineResult r = sim::run_pipeline(two_npus(), p);
  CHECK(r.cycles == 5u + 10 + 10 + 3);
  CHECK(r.busy_cycles == std::vector<Cycles>{28});
}

TEST_CASE("pipeline runner: a receiver waits for the message, the sender goes on", "[sim][pipeline]") {
  const sim::Config cfg = two_npus();
  sim::PipelineProgram alone;
  alone.messages = {{0, 1, 256}};
  alone.devices = {{msg(sim::PipeStep::Send, 0)}, {msg(sim::PipeStep::Wait, 0)}};
  const Cycles t = sim::run_pipeline(cfg, alone).cycles;
  // at least the packet's serialisation on the 16 B/cycle link and the link's latency
  CHECK(t >= 16u + 100);
  CHECK(t <= 16u + 100 + 16);

  sim::PipelineProgram p;
  p.messages = {{0, 1, 256}};
  // chip 0: 100 cycles, send, then 50 more (it does not wait for the message to leave);
  // chip 1: waits, then 10 cycles
  p.devices = {{compute(1e5, 0), msg(sim::PipeStep::Send, 0), compute(5e4, 0)},
               {msg(sim::PipeStep::Wait, 0), compute(1e4, 0)}};
  const sim::PipelineResult r = sim::run_pipeline(cfg, p);
  CHECK(r.cycles == 100 + t + 10);
  CHECK(r.busy_cycles == std::vector<Cycles>{150, 10});
  CHECK(r.messages == 1u);
  CHECK(r.message_bytes == 256u);
}

TEST_CASE("pipeline runner: memory held and freed; more than the chip has is a named error", "[sim][pipeline]") {
  sim::PipelineProgram p;
  p.resident_bytes = {1000};
  p.devices = {{compute(1, 0, 500), compute(1, 0, 300), compute(1, 0, -800), compute(1, 0, 100)}};
  const sim::PipelineResult r = sim::run_pipeline(two_npus(), p);
  CHECK(r.peak_memory_bytes == std::vector<Bytes>{1800});
  CHECK_THROWS_WITH(sim::run_pipeline(two_npus(1700), p),
                    Contains("chip 0 holds 1800 B at step 1, more than its memory (chip.offchip.capacity_bytes = 1700)"));
}

TEST_CASE("pipeline runner: bad programs and deadlocks are named errors", "[sim][pipeline][bad-input]") {
  const sim::Config cfg = two_npus();
  sim::PipelineProgram p;
  p.messages = {{0, 1, 64}, {1, 0, 64}};
  // each waits for the other's message before sending its own
  p.devices = {{msg(sim::PipeStep::Wait, 1), msg(sim::PipeStep::Send, 0)},
               {msg(sim::PipeStep::Wait, 0), msg(sim::PipeStep::Send, 1)}};
  CHECK_THROWS_WITH(sim::run_pipeline(cfg, p), Contains("chip 0 waits at step 0 for message 1 from chip 1, which never "
                                                        "arrives (deadlock)"));
  p.devices = {{msg(sim::PipeStep::Send, 0), msg(sim::PipeStep::Send, 0)}, {msg(sim::PipeStep::Wait, 0)}};
  CHECK_THROWS_WITH(sim::run_pipeline(cfg, p), Contains("message 0 sent twice"));
  p.devices = {{msg(sim::PipeStep::Send, 0)}, {msg(sim::PipeStep::Wait, 0), msg(sim::PipeStep::Wait, 1)}};
  CHECK_THROWS_WITH(sim::run_pipeline(cfg, p), Contains("device 1 step 1: message 1 goes from 1 to 0"));
  p.devices = {{msg(sim::PipeStep::Send, 0)}, {msg(sim::PipeStep::Wait, 0), msg(sim::PipeStep::Send, 1)}};
  CHECK_THROWS_WITH(sim::run_pipeline(cfg, p), Contains("message 1 is never waited for"));
  p.devices = {{msg(sim::PipeStep::Send, 5)}};
  CHECK_THROWS_WITH(sim::run_pipeline(cfg, p), Contains("message 5 out of range"));
  p.devices = {{}, {}, {}};
  CHECK_THROWS_WITH(sim::run_pipeline(cfg, p), Contains("3 devices, config 'test-exchange' has 2 chips"));
  p.devices = {{compute(-1, 0)}};
  p.messages.clear();
  CHECK_THROWS_WITH(sim::run_pipeline(cfg, p), Contains("FLOPs and bytes must be finite, >= 0"));
}
