#include "sim/core/scratchpad.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/common/error.h"

namespace tessera::sim {

void Scratchpad::alloc(const std::string& buffer, Bytes bytes, const std::string& where) {
  if (buffers_.count(buffer))
    throw ProgramError(fmt::format("{}: core {}: buffer '{}' is already allocated", where, core_, buffer));
  if (used_ + bytes > capacity_)
    throw ProgramError(fmt::format(
        "{}: core {}: scratchpad overflow allocating buffer '{}' of {} bytes: {} bytes in use, "
        "capacity {} bytes, short by {} bytes",
        where, core_, buffer, bytes, used_, capacity_, used_ + bytes - capacity_));
  buffers_.emplace(buffer, bytes);
  used_ += bytes;
  peak_ = std::max(peak_, used_);
}

void Scratchpad::free(const std::string& buffer, const std::string& where) {
  auto it = buffers_.find(buffer);
  if (it == buffers_.end())
    throw ProgramError(fmt::format("{}: core {}: free of buffer '{}' that is not allocated", where, core_, buffer));
  used_ -= it->second;
  buffers_.erase(it);
}

Bytes Scratchpad::size_of(const std::string& buffer, const std::string& where) const {
  auto it = buffers_.find(buffer);
  if (it == buffers_.end())
    throw ProgramError(fmt::format("{}: core {}: buffer '{}' is not allocated here", where, core_, buffer));
  return it->second;
}

std::vector<std::pair<std::string, Bytes>> Scratchpad::live_buffers() const {
  std::vector<std::pair<std::string, Bytes>> v(buffers_.begin(), buffers_.end());
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace tessera::sim
