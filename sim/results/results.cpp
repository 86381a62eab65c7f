#include "sim/results/results.h"

#include <fmt/format.h>

#include <algorithm>

namespace tessera::sim {

std::string format_summary(const Json& r) {
  std::string s;
  s += fmt::format("config {}  program {}\n", r["config"].get<std::string>(), r["program"].get<std::string>());
  s += fmt::format("total {} cycles = {:.6g} s at {} GHz; {} work items, {} messages, {} barriers\n",
                   r["total_cycles"].get<std::uint64_t>(), r["total_seconds"].get<double>(),
                   r["clock_ghz"].get<double>(), r["work_items"].get<std::uint64_t>(),
                   r["messages"].get<std::uint64_t>(), r["barriers"].get<std::uint64_t>());
  const Json& cores = r["cores"];
  if (!cores.empty()) {
    s += fmt::format("cores: {} active; mean cycles per core by activity:\n", cores.size());
    for (const char* k : {"compute", "send", "recv", "sync", "memory"}) {
      double sum = 0;
      for (const auto& c : cores) sum += c["cycles"][k].get<double>();
      s += fmt::format("  {:<8} {:>14.1f}\n", k, sum / cores.size());
    }
    std::uint64_t peak = 0;
    for (const auto& c : cores) peak = std::max(peak, c["peak_scratchpad_bytes"].get<std::uint64_t>());
    s += fmt::format("peak scratchpad on any core: {} bytes\n", peak);
  }
  double busiest = 0;
  std::string busiest_name = "-";
  std::uint64_t link_bytes = 0;
  for (const auto& l : r["links"]) {
    link_bytes += l["bytes"].get<std::uint64_t>();
    if (l["busy_fraction"].get<double>() > busiest) {
      busiest = l["busy_fraction"].get<double>();
      busiest_name = l["name"].get<std::string>();
    }
  }
  s += fmt::format("links: {} bytes over all ports/links; busiest {} at {:.1f}% busy\n", link_bytes,
                   busiest_name, 100 * busiest);
  for (const auto& o : r["offchip"])
    s += fmt::format("off-chip chip {}: {} bytes read, {} bytes written\n", o["chip"].get<int>(),
                     o["bytes_read"].get<std::uint64_t>(), o["bytes_written"].get<std::uint64_t>());
  return s;
}

}  // namespace tessera::sim
