#pragma once
// Objects addressed by a 32-bit index, reused after release: the network engines keep packets
// and messages in these so that, in steady state, nothing is allocated per packet. An index stays
// valid until released; references may move when the pool grows.
#include <cstdint>
#include <vector>

namespace tessera::sim {

template <typename T>
class IndexPool {
 public:
  std::uint32_t acquire() {
    if (!free_.empty()) {
      const std::uint32_t i = free_.back();
      free_.pop_back();
      return i;
    }
    items_.emplace_back();
    return static_cast<std::uint32_t>(items_.size() - 1);
  }
  void release(std::uint32_t i) { free_.push_back(i); }
  std::size_t live() const { return items_.size() - free_.size(); }
  T& operator[](std::uint32_t i) { return items_[i]; }
  const T& operator[](std::uint32_t i) const { return items_[i]; }
  void clear() {
    items_.clear();
    free_.clear();
  }

 private:
  std::vector<T> items_;
  std::vector<std::uint32_t> free_;
};

}  // namespace tessera::sim
