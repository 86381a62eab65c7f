#include "compiler/lower/patterns.h"

#include <fmt/format.h>

#include "sim/common/error.h"
#include "sim/common/types.h"

namespace tessera::compiler {

namespace {
Json alloc(const std::string& b, std::uint64_t bytes) { return {{"op", "alloc"}, {"buffer", b}, {"bytes", bytes}}; }
Json header(const std::string& name) {
  return {{"format", "tessera-program"}, {"version", 1}, {"name", name}};
}
}  // namespace

Json ring_shift_program(const RingShiftSpec& s) {
  if (s.cores < 2) throw Error("ring shift: needs at least 2 cores");
  if (s.steps < 1) throw Error("ring shift: needs at least 1 step");
  Dtype d;
  if (!parse_dtype(s.dtype, d)) throw Error(fmt::format("ring shift: unknown dtype '{}'", s.dtype));
  const std::uint64_t e = dtype_bytes(d);
  Json prog = header(fmt::format("ring-shift-{}x{}", s.cores, s.steps));
  Json cores = Json::array();
  for (std::uint32_t i = 0; i < s.cores; ++i) {
    const std::uint32_t me = s.first_core + i;
    const std::uint32_t next = s.first_core + (i + 1) % s.cores;
    const std::uint32_t prev = s.first_core + (i + s.cores - 1) % s.cores;
    Json body = Json::array();
    body.push_back({{"op", "compute"}, {"kind", "matmul"}, {"dtype", s.dtype}, {"m", s.m}, {"k", s.k},
                    {"n", s.n}, {"inputs", {"A", "B"}}, {"output", "C"}});
    body.push_back({{"op", "send"}, {"peer", next}, {"buffer", "out"}});
    body.push_back({{"op", "recv"}, {"peer", prev}, {"buffer", "in"}});
    if (s.sync) body.push_back({{"op", "sync"}});
    Json items = Json::array({alloc("A", s.m * s.k * e), alloc("B", s.k * s.n * e),
                              alloc("C", s.m * s.n * e), alloc("out", s.shift_bytes),
                              alloc("in", s.shift_bytes)});
    items.push_back({{"op", "repeat"}, {"count", s.steps}, {"body", body}});
    cores.push_back({{"core", me}, {"items", items}});
  }
  prog["cores"] = cores;
  return prog;
}

Json all_to_all_program(const AllToAllSpec& s) {
  if (s.cores < 2) throw Error("all-to-all: needs at least 2 cores");
  Json prog = header(fmt::format("all-to-all-{}", s.cores));
  Json cores = Json::array();
  for (std::uint32_t i = 0; i < s.cores; ++i) {
    Json items = Json::array({alloc("out", s.bytes), alloc("in", s.bytes)});
    // Staggered order (core i first sends to i+1, then i+2, ...) spreads the load over receivers.
    for (std::uint32_t k = 1; k < s.cores; ++k)
      items.push_back({{"op", "send"}, {"peer", (i + k) % s.cores}, {"buffer", "out"}});
    for (std::uint32_t k = 1; k < s.cores; ++k)
      items.push_back({{"op", "recv"}, {"peer", (i + s.cores - k) % s.cores}, {"buffer", "in"}});
    items.push_back({{"op", "sync"}});
    cores.push_back({{"core", i}, {"items", items}});
  }
  prog["cores"] = cores;
  return prog;
}

}  // namespace tessera::compiler
