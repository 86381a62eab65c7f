#pragma once
// What the two lowerings to the simulator's pipeline runner share (pipeline_lower: GraphPipe
// plans; mapping_lower: DFModel mappings): messages made once, by whichever of their ends the
// lowering reaches first, under a name (Key) both ends compute; steps appended per device; and
// ring all-reduces.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <vector>

#include "sim/pipeline/pipeline.h"

namespace tessera::lower {

// Whole bytes of a message: rounded up, at least one.
inline Bytes message_bytes(double bytes) { return std::max<Bytes>(1, static_cast<Bytes>(std::ceil(bytes))); }

template <class Key>
class PipelineBuilder {
 public:
  explicit PipelineBuilder(std::size_t devices) {
    prog.devices.resize(devices);
    prog.resident_bytes.assign(devices, 0);
  }

  // The first id of the messages named `key`, added now if they are not there yet.
  std::uint32_t block(const Key& key, const std::vector<sim::PipeMessage>& messages) {
    auto it = ids_.find(key);
    if (it != ids_.end()) return it->second;
    const std::uint32_t base = add(messages);
    ids_.emplace(key, base);
    return base;
  }

  // Messages no one else names: the first id.
  std::uint32_t add(const std::vector<sim::PipeMessage>& messages) {
    const auto base = static_cast<std::uint32_t>(prog.messages.size());
    prog.messages.insert(prog.messages.end(), messages.begin(), messages.end());
    return base;
  }

  void step(std::uint32_t device, sim::PipeStep::Kind kind, std::uint32_t message) {
    sim::PipeStep st;
    st.kind = kind;
    st.message = message;
    prog.devices[device].push_back(st);
  }

  // The messages of an all-reduce over n members (member q on device `member(q)`) as `rings`
  // rings (1: each member sends to the next; 2: also one the other way round), 2 (n - 1) steps
  // each, `bytes` per message: ring by ring, step by step, member by member.
  template <class Member>
  static std::vector<sim::PipeMessage> ring_messages(std::uint32_t n, std::uint32_t rings, Bytes bytes, Member member) {
    std::vector<sim::PipeMessage> out;
    for (std::uint32_t g = 0; g < rings; ++g)
      for (std::uint32_t k = 0; k < 2 * (n - 1); ++k)
        for (std::uint32_t q = 0; q < n; ++q) out.push_back({member(q), member(next(q, n, g)), bytes});
    return out;
  }

  // Member `me`'s part of the all-reduce whose messages start at `base`: per step, its sends on
  // every ring, then a wait on every ring for what its predecessor there sent.
  void ring_steps(std::uint32_t device, std::uint32_t base, std::uint32_t n, std::uint32_t rings, std::uint32_t me) {
    ring_steps(device, base, n, rings, me, [] {});
  }
  // The same, calling `between()` after each step's sends and before its waits: steps it appends
  // there (compute) run while that step's messages cross.
  template <class Between>
  void ring_steps(std::uint32_t device, std::uint32_t base, std::uint32_t n, std::uint32_t rings, std::uint32_t me,
                  Between between) {
    const std::uint32_t steps = 2 * (n - 1);
    for (std::uint32_t k = 0; k < steps; ++k) {
      for (std::uint32_t g = 0; g < rings; ++g) step(device, sim::PipeStep::Send, base + (g * steps + k) * n + me);
      between();
      for (std::uint32_t g = 0; g < rings; ++g)
        step(device, sim::PipeStep::Wait, base + (g * steps + k) * n + next(me, n, 1 - g));
    }
  }

  sim::PipelineProgram prog;

 private:
  // Ring 0 goes up (q to q + 1), ring 1 down; next(q, n, 1 - g) is q's predecessor on ring g.
  static std::uint32_t next(std::uint32_t q, std::uint32_t n, std::uint32_t g) {
    return g == 0 ? (q + 1) % n : (q + n - 1) % n;
  }

  std::map<Key, std::uint32_t> ids_;
};

}  // namespace tessera::lower
