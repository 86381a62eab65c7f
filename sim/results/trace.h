#pragma once
// Chrome trace-event recorder (opens in Perfetto / chrome://tracing): one track per core and one
// per link or channel. Components hold a pointer that is null when tracing is off, so a disabled
// trace costs one branch per event and formats nothing.
#include <cstdint>
#include <string>
#include <vector>

#include "sim/common/types.h"

namespace tessera::sim {

class TraceRecorder {
 public:
  // `process` groups tracks in the viewer (e.g. "chip 0 cores", "links and channels").
  int add_track(const std::string& process, const std::string& name);
  void span(int track, const char* label, Cycles start, Cycles duration) {
    spans_.push_back({track, label, start, duration});
  }
  // Writes the file; timestamps in microseconds at `clock_ghz`.
  void write(const std::string& path, double clock_ghz) const;

 private:
  struct Track { int pid; std::string name; };
  struct Span { int track; const char* label; Cycles start, duration; };
  std::vector<std::string> processes_;
  std::vector<Track> tracks_;
  std::vector<Span> spans_;
};

}  // namespace tessera::sim
