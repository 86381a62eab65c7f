#pragma once
// A calendar queue of events keyed by cycle: a wheel of 1024 buckets for the near future (push
// and pop in constant time, a bitmap to find the next busy cycle) and a radix heap for events
// further ahead. Events of one cycle come out in the order they were pushed, so a deterministic
// engine stays deterministic. Buckets keep their capacity: in steady state nothing is allocated.
#include <algorithm>
#include <array>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "sim/common/types.h"

namespace tessera::sim {

// A monotone priority queue of items keyed by cycle (a radix heap): no key pushed is below the
// last key popped. Bucket 0 holds the items at the last key popped; bucket i those whose key
// first differs from it in bit i - 1. A push is one append; popping the least key re-files the
// first non-empty bucket below it, so an item is moved at most 64 times, and usually a few (a
// binary heap costs log2(n) moves per push and per pop). Items of one key keep their push order:
// they always share a bucket and re-filing keeps the order.
template <typename T>
class RadixQueue {
 public:
  bool empty() const { return size_ == 0; }
  void push(Cycles t, const T& v) {  // t >= the last key popped (EventWheel keeps it so)
    buckets_[bucket(t)].push_back({t, v});
    ++size_;
    if (t < min_) min_ = t;  // exact while min_known_ (else min() finds it again)
  }
  // The least key (call only when not empty).
  Cycles min() {
    if (!min_known_) {
      const auto& b = buckets_[first()];
      Cycles m = ~Cycles{0};
      for (const Item& it : b) m = std::min(m, it.t);
      min_ = m;
      min_known_ = true;
    }
    return min_;
  }
  // Removes every item of the least key, passing them to f in push order; returns the key.
  template <typename F>
  Cycles pop_min(F&& f) {
    const std::size_t i = first();
    if (i > 0) {  // re-file bucket i around its least key: they all land lower
      last_ = min();
      auto& b = buckets_[i];
      for (const Item& it : b) buckets_[bucket(it.t)].push_back(it);
      b.clear();
    }
    auto& zero = buckets_[0];
    for (const Item& it : zero) f(it.v);
    size_ -= zero.size();
    zero.clear();
    min_ = ~Cycles{0};
    min_known_ = false;
    return last_;
  }
  void clear() {
    for (auto& b : buckets_) b.clear();
    size_ = 0;
    last_ = 0;
    min_ = ~Cycles{0};
    min_known_ = true;
  }

 private:
  struct Item {
    Cycles t;
    T v;
  };
  std::size_t bucket(Cycles t) const {
    return t == last_ ? 0 : 64 - static_cast<std::size_t>(__builtin_clzll(t ^ last_));
  }
  std::size_t first() const {
    std::size_t i = 0;
    while (buckets_[i].empty()) ++i;
    return i;
  }
  std::array<std::vector<Item>, 65> buckets_;
  std::size_t size_ = 0;
  Cycles last_ = 0;
  Cycles min_ = ~Cycles{0};
  bool min_known_ = true;  // empty: no least key to find
};

template <typename Event>
class EventWheel {
 public:
  static constexpr Cycles kSlots = 1024;

  EventWheel() : slots_(kSlots), bits_(kSlots / 64, 0) {}

  // `t` must not be before the last cycle popped.
  void push(Cycles t, const Event& e) {
    // the slot of an earlier cycle is a later cycle's: never store it silently (a cheap branch)
    if (t < now_) throw std::logic_error("EventWheel: an event before the last cycle taken");
    ++size_;
    if (next_known_ != kNone && t < next_known_) next_known_ = t;  // unknown stays unknown
    if (t < now_ + kSlots) {
      const std::size_t s = t & (kSlots - 1);
      slots_[s].push_back(e);
      bits_[s / 64] |= std::uint64_t{1} << (s % 64);
    } else {
      far_.push(t, e);
    }
  }

  bool empty() const { return size_ == 0; }
  // Back to cycle 0 with no events.
  void clear() {
    next_known_ = kNone;
    for (auto& b : slots_) b.clear();
    std::fill(bits_.begin(), bits_.end(), 0);
    far_.clear();
    now_ = 0;
    size_ = 0;
  }
  std::size_t size() const { return size_; }

  // The earliest cycle with an event (call only when not empty). Kept once found until a cycle
  // is taken: an engine and its driver ask several times per cycle.
  Cycles next() const {
    if (next_known_ != kNone) return next_known_;
    next_known_ = find_next();
    return next_known_;
  }

  // Moves every event of cycle `t` (t >= every earlier call's t) into `out`, in push order.
  void take(Cycles t, std::vector<Event>& out) {
    advance_to(t);
    const std::size_t s = t & (kSlots - 1);
    auto& b = slots_[s];
    if (b.empty()) return;
    next_known_ = kNone;
    size_ -= b.size();
    if (out.empty()) {
      std::swap(out, b);  // the slot keeps out's (empty) storage: no copy, nothing allocated
    } else {
      out.insert(out.end(), b.begin(), b.end());
      b.clear();
    }
    bits_[s / 64] &= ~(std::uint64_t{1} << (s % 64));
  }

 private:
  static constexpr Cycles kNone = ~Cycles{0};  // next_known_: not worked out

  Cycles find_next() const {
    Cycles best = far_.empty() ? ~Cycles{0} : far_.min();
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

  // Far events that come within the wheel's window move into it, cycle by cycle in push order
  // (so push order within a cycle is kept: a far event was always pushed before any near one of
  // its cycle).
  void advance_to(Cycles t) {
    if (t < now_) return;
    now_ = t;
    while (!far_.empty() && far_.min() < now_ + kSlots) {
      const Cycles at = far_.min();
      const std::size_t s = at & (kSlots - 1);
      far_.pop_min([&](const Event& e) { slots_[s].push_back(e); });
      bits_[s / 64] |= std::uint64_t{1} << (s % 64);
    }
  }

  std::vector<std::vector<Event>> slots_;
  std::vector<std::uint64_t> bits_;
  mutable RadixQueue<Event> far_;  // next() finds its least key, which it keeps
  Cycles now_ = 0;
  std::size_t size_ = 0;
  mutable Cycles next_known_ = kNone;  // next()'s answer until a cycle is taken, or kNone
};

}  // namespace tessera::sim
