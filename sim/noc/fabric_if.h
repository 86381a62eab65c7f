#pragma once
// Interfaces between a core and the interconnect, and between a chip's interconnect and whatever
// joins chips (inter-chip links now; an AFI with collective engines can implement the same port).
#include <memory>
#include <systemc>
#include <vector>

#include "sim/common/types.h"
#include "sim/functional/data.h"
#include "sim/noc/resource.h"

namespace tessera::sim {

class FabricIf : public virtual sc_core::sc_interface {
 public:
  // Called from the sending core's thread; returns when the source port has sent the last byte.
  // `payload` carries values in functional mode (null otherwise).
  virtual void send(std::uint32_t src, std::uint32_t dst, Bytes bytes,
                    std::shared_ptr<const Payload> payload = nullptr) = 0;
  // Called from the receiving core's thread; returns when the message from `src` (the next one
  // in send order) has fully arrived. Throws SimulationError if its size is not `bytes`.
  virtual std::shared_ptr<const Payload> recv(std::uint32_t dst, std::uint32_t src, Bytes bytes) = 0;
};

class ChipBoundaryIf : public virtual sc_core::sc_interface {
 public:
  // Appends the resources a packet crosses between leaving chip `from` and entering chip `to`.
  virtual void route(std::uint32_t from, std::uint32_t to, std::vector<Resource*>& out) = 0;
  virtual Bytes packet_bytes() const = 0;
  virtual void resources(std::vector<Resource*>& out) = 0;
};

// One chip's on-chip interconnect, in local core ids.
class ChipFabric {
 public:
  virtual ~ChipFabric() = default;
  virtual Transfer transfer(std::uint32_t src, std::uint32_t dst, Cycles now, Bytes bytes,
                            TraceRecorder* trace) = 0;
  // Resources from a core to the chip boundary, and from the boundary to a core.
  virtual void path_out(std::uint32_t src, std::vector<Resource*>& out) = 0;
  virtual void path_in(std::uint32_t dst, std::vector<Resource*>& out) = 0;
  virtual void resources(std::vector<Resource*>& out) = 0;
};

}  // namespace tessera::sim
