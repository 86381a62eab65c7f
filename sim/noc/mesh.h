#pragma once
// 2-D mesh or torus: one router per core, dimension-order routing (along the row first, then
// the column), every directed link a resource with its own bandwidth, latency and input buffer.
// Messages travel as packets, store-and-forward per router, with credit-based back-pressure.
#include <deque>

#include "sim/config/config.h"
#include "sim/noc/fabric_if.h"

namespace tessera::sim {

class MeshFabric : public ChipFabric {
 public:
  MeshFabric(const MeshConfig& cfg, std::uint32_t chip);
  Transfer transfer(std::uint32_t src, std::uint32_t dst, Cycles now, Bytes bytes,
                    TraceRecorder* trace) override;
  void path_out(std::uint32_t src, std::vector<Resource*>& out) override;
  void path_in(std::uint32_t dst, std::vector<Resource*>& out) override;
  void resources(std::vector<Resource*>& out) override;

  // Appends the links from router `from` to router `to` (not the injection/ejection ports).
  void route(std::uint32_t from, std::uint32_t to, std::vector<Resource*>& out);
  std::uint32_t hops(std::uint32_t from, std::uint32_t to);

 private:
  enum Dir { East, West, South, North };
  // Steps and direction along one dimension of extent n, from a to b.
  void dimension(std::uint32_t a, std::uint32_t b, std::uint32_t n, Dir up, Dir down,
                 std::uint32_t& steps, Dir& dir) const;
  Resource& link(std::uint32_t node, Dir d) { return links_[link_index_[node * 4 + d]]; }

  MeshConfig cfg_;
  std::deque<Resource> inject_, eject_, links_;
  std::vector<int> link_index_;  // node*4+dir -> links_ index, -1 where no link exists
  std::vector<Resource*> path_;  // scratch, reused per transfer
};

}  // namespace tessera::sim
