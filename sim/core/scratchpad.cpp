#include "sim/core/scratchpad.h"

#include <fmt/format.h>

#include <algorithm>

#include "sim/common/error.h"

namespace tessera::sim {

void Scratchpad::touch(const std::string& buffer) {
  if (bodies_.empty()) return;
  const auto it = buffers_.find(buffer);
  const Bytes now = it == buffers_.end() ? kNotLive : it->second;
  for (auto& body : bodies_) body.try_emplace(buffer, now);  // the first touch holds the state before
}

bool Scratchpad::end_body() {
  bool same = true;
  for (const auto& [name, before] : bodies_.back()) {
    const auto it = buffers_.find(name);
    same = same && (it == buffers_.end() ? kNotLive : it->second) == before;
  }
  bodies_.pop_back();
  return same;
}

void Scratchpad::alloc(const std::string& buffer, Bytes bytes, const std::string& where) {
  touch(buffer);
  if (buffers_.count(buffer))
    throw ProgramError(fmt::format("{}: core {}: buffer '{}' is already allocated", where, core_, buffer));
  if (bytes > capacity_ - used_)  // used_ <= capacity_; used_ + bytes could wrap round past 2^64
    throw ProgramError(fmt::format(
        "{}: core {}: scratchpad overflow allocating buffer '{}' of {} bytes: {} bytes in use, "
        "capacity {} bytes, short by {} bytes",
        where, core_, buffer, bytes, used_, capacity_, bytes - (capacity_ - used_)));
  buffers_.emplace(buffer, bytes);
  used_ += bytes;
  peak_ = std::max(peak_, used_);
}

void Scratchpad::free(const std::string& buffer, const std::string& where) {
  touch(buffer);
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

}  // namespace tessera::sim
