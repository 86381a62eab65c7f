// The network engines' calendar queue: events come out by cycle, in push order within a cycle,
// whether they were pushed into the wheel or, further than its 1024 slots ahead, into the heap.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "sim/noc/event_wheel.h"

using tessera::Cycles;
using tessera::sim::EventWheel;

TEST_CASE("event wheel: cycle order, push order within a cycle, far events", "[noc]") {
  EventWheel<int> w;
  w.push(5000, 1);  // far: the heap
  w.push(3, 2);
  w.push(1023, 3);
  w.push(3, 4);
  w.push(1024, 5);  // just past the wheel
  std::vector<std::pair<Cycles, int>> out;
  std::vector<int> batch;
  while (!w.empty()) {
    const Cycles t = w.next();
    batch.clear();
    w.take(t, batch);
    for (int e : batch) out.push_back({t, e});
    if (t == 1023) w.push(5000, 6);  // now within the window: after the far one of that cycle
  }
  const std::vector<std::pair<Cycles, int>> want = {{3, 2}, {3, 4}, {1023, 3}, {1024, 5}, {5000, 1}, {5000, 6}};
  CHECK(out == want);
  CHECK_THROWS_AS(w.push(4999, 9), std::logic_error);  // before the last cycle taken
  w.clear();
  CHECK(w.empty());
  w.push(7, 8);
  CHECK(w.next() == 7);
}

TEST_CASE("event wheel against a sorted list: random pushes near and far, interleaved with takes", "[noc]") {
  // The reference: every event with its cycle and push number, taken by (cycle, push number).
  std::mt19937_64 rng(7);
  EventWheel<int> w;
  std::vector<std::pair<Cycles, int>> pending, got, want;
  Cycles now = 0;
  int pushed = 0;
  for (int round = 0; round < 3000; ++round) {
    for (int k = rng() % 4; k > 0; --k) {
      // near (the wheel), or far (the radix heap) on a coarse grid so that far events share cycles
      const Cycles t = rng() % 3 ? now + rng() % 1500 : (now / 1000 + 2 + rng() % 100) * 1000;
      w.push(t, pushed);
      pending.push_back({t, pushed++});
    }
    if (w.empty()) continue;
    now = w.next();
    std::vector<int> batch;
    w.take(now, batch);
    for (int e : batch) got.push_back({now, e});
    // the reference: the least cycle pending, in push order
    std::stable_sort(pending.begin(), pending.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    REQUIRE(!pending.empty());
    const Cycles least = pending.front().first;
    std::size_t n = 0;
    while (n < pending.size() && pending[n].first == least) want.push_back(pending[n++]);
    pending.erase(pending.begin(), pending.begin() + static_cast<std::ptrdiff_t>(n));
  }
  CHECK(got == want);
  CHECK(got.size() > 2000u);
}

TEST_CASE("event wheel: next() kept between takes follows pushes that come earlier", "[noc]") {
  // next() is remembered until a cycle is taken; a push before the remembered cycle must move it,
  // one after it must not, and a push when nothing was remembered must not invent an answer.
  EventWheel<int> w;
  w.push(40, 1);
  CHECK(w.next() == 40);
  w.push(90, 2);          // later: still 40
  CHECK(w.next() == 40);
  w.push(12, 3);          // earlier: now 12
  CHECK(w.next() == 12);
  w.push(3000, 4);        // far, later: still 12
  CHECK(w.next() == 12);
  std::vector<int> batch = {99};  // not empty: the cycle's events are appended after it
  w.take(12, batch);
  CHECK(batch == std::vector<int>{99, 3});
  w.push(60, 5);          // nothing remembered since the take: 40 is found, not 60 assumed
  CHECK(w.next() == 40);
  batch.clear();
  w.take(40, batch);      // an empty vector takes the slot's events whole
  CHECK(batch == std::vector<int>{1});
  CHECK(w.next() == 60);
  w.take(60, batch);
  CHECK(w.next() == 90);
}
