#pragma once
// A core's private SRAM as a ledger of named buffers with a hard capacity. Allocation past the
// capacity is an error naming the core, the buffer and the bytes. Alloc/free order per core is
// static in a program, so the ledger runs when the program is loaded: overflow is reported before
// any simulation, and the peak is known without costing simulated events.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/common/types.h"

namespace tessera::sim {

class Scratchpad {
 public:
  Scratchpad(std::uint32_t core, Bytes capacity_bytes) : core_(core), capacity_(capacity_bytes) {}

  // `where` locates the item in the program for error messages.
  void alloc(const std::string& buffer, Bytes bytes, const std::string& where);
  void free(const std::string& buffer, const std::string& where);
  // Size of a live buffer; throws if it is not allocated.
  Bytes size_of(const std::string& buffer, const std::string& where) const;
  bool live(const std::string& buffer) const { return buffers_.count(buffer) != 0; }

  Bytes used_bytes() const { return used_; }
  Bytes peak_bytes() const { return peak_; }
  Bytes capacity_bytes() const { return capacity_; }
  // Snapshot of live buffers, to check that a loop body leaves the scratchpad as it found it.
  std::vector<std::pair<std::string, Bytes>> live_buffers() const;

 private:
  std::uint32_t core_;
  Bytes capacity_;
  Bytes used_ = 0, peak_ = 0;
  std::unordered_map<std::string, Bytes> buffers_;
};

}  // namespace tessera::sim
