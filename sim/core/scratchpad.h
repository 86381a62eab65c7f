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
  // A loop body must leave the scratchpad as it found it: begin_body() before reading it,
  // end_body() after, true when every buffer it allocated or freed is back as it was (same name,
  // same size). Bodies nest. Only the buffers a body touches are compared, so a body costs in
  // proportion to what it does, not to every buffer that lives across it.
  void begin_body() { bodies_.emplace_back(); }
  bool end_body();

 private:
  static constexpr Bytes kNotLive = ~Bytes{0};
  void touch(const std::string& buffer);

  std::uint32_t core_;
  Bytes capacity_;
  Bytes used_ = 0, peak_ = 0;
  std::unordered_map<std::string, Bytes> buffers_;
  // per open body: each buffer it touched, with its size before the body (kNotLive: not live)
  std::vector<std::unordered_map<std::string, Bytes>> bodies_;
};

}  // namespace tessera::sim
