#pragma once
// Off-chip memory of each chip: `channels` channels, each with a bandwidth and a latency, shared
// by every core of the chip. Addresses are interleaved finely, so a request is spread evenly
// over all channels; concurrent requests queue per channel, first come first served.
#include <deque>
#include <systemc>
#include <vector>

#include "sim/config/config.h"
#include "sim/noc/resource.h"

namespace tessera::sim {

class MemoryIf : public virtual sc_core::sc_interface {
 public:
  // Blocks the calling core until `bytes` have been read (load) or written (store).
  virtual void transfer(std::uint32_t chip, Bytes bytes, bool write) = 0;
};

class OffchipMemory : public sc_core::sc_module, public MemoryIf {
 public:
  OffchipMemory(sc_core::sc_module_name name, const Config& cfg, TraceRecorder* trace);
  void transfer(std::uint32_t chip, Bytes bytes, bool write) override;
  void resources(std::vector<Resource*>& out);
  Bytes bytes_read(std::uint32_t chip) const { return read_[chip]; }
  Bytes bytes_written(std::uint32_t chip) const { return written_[chip]; }

 private:
  std::uint32_t channels_;
  TraceRecorder* trace_;
  std::deque<Resource> channel_;  // chip-major
  std::vector<Bytes> read_, written_;
};

}  // namespace tessera::sim
