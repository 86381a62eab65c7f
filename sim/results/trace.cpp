#include "sim/results/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "sim/common/error.h"

namespace tessera::sim {

int TraceRecorder::add_track(const std::string& process, const std::string& name) {
  auto it = std::find(processes_.begin(), processes_.end(), process);
  int pid = static_cast<int>(it - processes_.begin());
  if (it == processes_.end()) processes_.push_back(process);
  tracks_.push_back({pid, name});
  return static_cast<int>(tracks_.size()) - 1;
}

void TraceRecorder::write(const std::string& path, double clock_ghz) const {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "w"), &std::fclose);
  if (!f) throw Error(fmt::format("{}: cannot write trace file", path));
  const double us_per_cycle = 1e-3 / clock_ghz;
  fmt::print(f.get(), "{{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
  bool first = true;
  auto sep = [&] { if (!first) fmt::print(f.get(), ",\n"); first = false; };
  for (std::size_t p = 0; p < processes_.size(); ++p) {
    sep();
    fmt::print(f.get(), "{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":\"{}\"}}}}", p, processes_[p]);
  }
  for (std::size_t t = 0; t < tracks_.size(); ++t) {
    sep();
    fmt::print(f.get(), "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":\"{}\"}}}}",
               tracks_[t].pid, t, tracks_[t].name);
  }
  for (const Span& s : spans_) {
    if (s.track < 0) continue;
    sep();
    fmt::print(f.get(), "{{\"ph\":\"X\",\"name\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":{:.6f},\"dur\":{:.6f}}}",
               s.label, tracks_[s.track].pid, s.track, s.start * us_per_cycle, s.duration * us_per_cycle);
  }
  fmt::print(f.get(), "\n]}}\n");
}

}  // namespace tessera::sim
