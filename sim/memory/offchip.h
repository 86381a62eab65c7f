#pragma once
// Off-chip memory of each chip: `channels` channels, each with a bandwidth and a latency, shared
// by every core of the chip. Addresses are interleaved finely, so a request is spread evenly
// over all channels. Each channel serves requests first come, first served, in time order:
// requests of one cycle are taken half a cycle later in core order, whatever order the kernel
// ran the cores in, and a request's time on a channel starts when the requests before it are done.
#include <systemc>
#include <vector>

#include "sim/common/completion.h"
#include "sim/config/config.h"
#include "sim/noc/transport.h"

namespace tessera::sim {

class TraceRecorder;

class MemoryIf : public virtual sc_core::sc_interface {
 public:
  // Starts a read (load) or write (store) of `bytes` by `core`; returns at once, `done`
  // completes when the last byte is read or written.
  virtual void transfer(std::uint32_t core, Bytes bytes, bool write, Completion& done) = 0;
};

class OffchipMemory : public sc_core::sc_module, public MemoryIf {
 public:
  SC_HAS_PROCESS(OffchipMemory);
  OffchipMemory(sc_core::sc_module_name name, const Config& cfg, TraceRecorder* trace);
  void transfer(std::uint32_t core, Bytes bytes, bool write, Completion& done) override;
  void stats(std::vector<ChannelStats*>& out);
  Bytes bytes_read(std::uint32_t chip) const { return read_[chip]; }
  Bytes bytes_written(std::uint32_t chip) const { return written_[chip]; }
  // Fast-forward (sim/system/fast_forward.h): no request waiting and every channel free by t;
  // the counters a stretch adds (per chip bytes read and written, per channel bytes, busy
  // cycles, transfers), and adding a replayed stretch's difference to counter i.
  bool quiet_at(Cycles t) const;
  void read_counters(std::vector<std::uint64_t>& out) const;
  void add_counter(std::size_t i, std::uint64_t delta);

 private:
  struct Request {
    std::uint32_t core;
    std::uint64_t order;
    Bytes bytes;
    Completion* done;
  };
  struct Channel {
    ChannelStats stats;
    Cycles free = 0;  // the end of the requests already taken
  };
  void serve();

  const Config& cfg_;
  std::uint32_t channels_;
  TraceRecorder* trace_;
  std::vector<Channel> channel_;  // chip-major
  std::vector<Bytes> read_, written_;
  std::vector<Request> requests_;  // issued this cycle
  std::uint64_t order_ = 0;
  sc_core::sc_event wake_;
};

}  // namespace tessera::sim
