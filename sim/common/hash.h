#pragma once
// Stable hashes for identities written to files (config fingerprints, sweep point keys): the
// same text gives the same hex string on every machine and build, unlike std::hash.
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace tessera {

// 64-bit FNV-1a of `text`, as 16 hex digits.
inline std::string fnv1a_hex(std::string_view text) {
  std::uint64_t h = 1469598103934665603ull;
  for (const unsigned char ch : text) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

}  // namespace tessera
