#pragma once
// IPU-style exchange: every core can send to every core; each core has one send and one receive
// port with a bytes/cycle cap. A transfer holds both ports for its whole duration, so several
// senders into one receiver (or one sender fanning out) take turns.
#include <deque>

#include "sim/config/config.h"
#include "sim/noc/fabric_if.h"

namespace tessera::sim {

class ExchangeFabric : public ChipFabric {
 public:
  ExchangeFabric(const ExchangeConfig& cfg, std::uint32_t chip, std::uint32_t cores,
                 std::uint32_t inbound_buffer_packets);
  Transfer transfer(std::uint32_t src, std::uint32_t dst, Cycles now, Bytes bytes,
                    TraceRecorder* trace) override;
  void path_out(std::uint32_t src, std::vector<Resource*>& out) override;
  void path_in(std::uint32_t dst, std::vector<Resource*>& out) override;
  void resources(std::vector<Resource*>& out) override;

 private:
  std::deque<Resource> send_, recv_;  // deque: stable addresses
};

}  // namespace tessera::sim
