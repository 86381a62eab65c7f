// The network engines' calendar queue: events come out by cycle, in push order within a cycle,
// whether they were pushed into the wheel or, further than its 1024 slots ahead, into the heap.
#include <catch2/catch.hpp>

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
  w.clear();
  CHECK(w.empty());
  w.push(7, 8);
  CHECK(w.next() == 7);
}
