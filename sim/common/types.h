#pragma once
#include <cstdint>
#include <string>

namespace tessera {

using Cycles = std::uint64_t;
using Bytes = std::uint64_t;
constexpr Cycles kNever = ~Cycles{0};  // a cycle that never comes (nothing scheduled)

enum class Dtype : std::uint8_t { Int8, Fp16, Fp32, Int32 };

inline unsigned dtype_bytes(Dtype d) {
  switch (d) {
    case Dtype::Int8: return 1;
    case Dtype::Fp16: return 2;
    case Dtype::Fp32: return 4;
    case Dtype::Int32: return 4;
  }
  return 0;
}
inline const char* dtype_name(Dtype d) {
  switch (d) {
    case Dtype::Int8: return "int8";
    case Dtype::Fp16: return "fp16";
    case Dtype::Fp32: return "fp32";
    case Dtype::Int32: return "int32";
  }
  return "?";
}
// Returns false when `name` is not a dtype.
inline bool parse_dtype(const std::string& name, Dtype& out) {
  for (Dtype d : {Dtype::Int8, Dtype::Fp16, Dtype::Fp32, Dtype::Int32})
    if (name == dtype_name(d)) { out = d; return true; }
  return false;
}

inline std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

}  // namespace tessera
