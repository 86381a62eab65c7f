#pragma once
// A calendar queue of events keyed by cycle: a wheel of 1024 buckets for the near future (push
// and pop in constant time, a bitmap to find the next busy cycle) and a heap for events further
// ahead. Events of one cycle come out in the order they were pushed, so a deterministic engine
// stays deterministic. Buckets keep their capacity: in steady state nothing is allocated.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <queue>
#include <utility>
#include <vector>

#include "sim/common/types.h"

namespace tessera::sim {

template <typename Event>
class EventWheel {
 public:
  static constexpr Cycles kSlots = 1024;

  EventWheel() : slots_(kSlots), bits_(kSlots / 64, 0) {}

  // `t` must not be before the last cycle popped.
  void push(Cycles t, const Event& e) {
    ++size_;
    if (t < now_ + kSlots) {
      const std::size_t s = t & (kSlots - 1);
      slots_[s].push_back(e);
      bits_[s / 64] |= std::uint64_t{1} << (s % 64);
    } else {
      far_.push({t, seq_++, e});
    }
  }

  bool empty() const { return size_ == 0; }
  // Back to cycle 0 with no events.
  void clear() {
    for (auto& b : slots_) b.clear();
    std::fill(bits_.begin(), bits_.end(), 0);
    far_ = decltype(far_)();
    now_ = 0;
    size_ = 0;
  }
  std::size_t size() const { return size_; }

  // The earliest cycle with an event (call only when not empty).
  Cycles next() const {
    Cycles best = far_.empty() ? ~Cycles{0} : far_.top().t;
    // scan the bitmap from now_ for one lap
    const std::size_t start = now_ & (kSlots - 1);
    for (std::size_t k = 0; k <= kSlots / 64; ++k) {
      const std::size_t word = (start / 64 + k) % (kSlots / 64);
      std::uint64_t w = bits_[word];
      if (k == 0) w &= ~std::uint64_t{0} << (start % 64);
      if (k == kSlots / 64) w &= (start % 64) ? ~(~std::uint64_t{0} << (start % 64)) : 0;
      if (!w) continue;
      const std::size_t slot = word * 64 + static_cast<std::size_t>(__builtin_ctzll(w));
      const Cycles t = now_ + ((slot + kSlots - start) & (kSlots - 1));
      return std::min(best, t);
    }
    return best;
  }

  // Moves every event of cycle `t` (t >= every earlier call's t) into `out`, in push order.
  void take(Cycles t, std::vector<Event>& out) {
    advance_to(t);
    const std::size_t s = t & (kSlots - 1);
    auto& b = slots_[s];
    if (b.empty()) return;
    size_ -= b.size();
    out.insert(out.end(), b.begin(), b.end());
    b.clear();
    bits_[s / 64] &= ~(std::uint64_t{1} << (s % 64));
  }

 private:
  struct Far {
    Cycles t;
    std::uint64_t seq;
    Event e;
    bool operator>(const Far& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };

  // Far events that come within the wheel's window move into it, oldest first (so push order
  // within a cycle is kept: a far event was always pushed before any near one of its cycle).
  void advance_to(Cycles t) {
    if (t < now_) return;
    now_ = t;
    while (!far_.empty() && far_.top().t < now_ + kSlots) {
      const Far f = far_.top();
      far_.pop();
      const std::size_t s = f.t & (kSlots - 1);
      slots_[s].push_back(f.e);
      bits_[s / 64] |= std::uint64_t{1} << (s % 64);
    }
  }

  std::vector<std::vector<Event>> slots_;
  std::vector<std::uint64_t> bits_;
  std::priority_queue<Far, std::vector<Far>, std::greater<>> far_;
  Cycles now_ = 0;
  std::size_t size_ = 0;
  std::uint64_t seq_ = 0;
};

}  // namespace tessera::sim
