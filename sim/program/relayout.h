#pragma once
// Re-layouts: tensors moved from one distribution over cores into another, kept in a program as
// two layouts (each core's box) per tensor instead of one send and one receive per message. The
// messages follow from the layouts by one rule (relayout_pieces), which the compiler uses to
// price and the simulator uses to run, so a program holds O(cores) numbers per re-layout where
// its messages are O(cores^2) at worst. docs/program.md, "Re-layouts".
#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/common/types.h"
#include "sim/functional/data.h"

namespace tessera::sim {

// A tensor's boxes over cores: the cores that hold a box (ascending) and, per listed core, its
// box clipped to the shape (origin, then extent: 2 x rank numbers).
struct Layout {
  std::vector<std::int64_t> shape;
  std::vector<std::uint32_t> cores;
  std::vector<std::int64_t> boxes;
  std::size_t rank() const { return shape.size(); }
  Box box(std::size_t i) const;
  bool holds(std::uint32_t core) const;
  bool operator==(const Layout& o) const { return shape == o.shape && cores == o.cores && boxes == o.boxes; }
};

// A layout from per-core views (index = core; an empty tensor name holds nothing), clipped to the
// shape; cores whose box lies outside it hold nothing.
Layout layout_of(const std::vector<std::int64_t>& shape, const std::vector<View>& views);

// One tensor's part of a re-layout: from one layout into another, out of buffer `source` on the
// cores that send into buffer `target` on the cores that receive.
struct Move {
  std::uint32_t from = 0, to = 0;  // indices into Program::layouts
  std::uint32_t tag = ~0u;         // the tag its items count under (~0u: none)
  Bytes element_bytes = 2;
  std::string tensor;              // functional mode: the data tensor that is moved
  std::string source, target;      // buffer names, the same on every core
};

// Every move of one re-layout runs together: on each core its sends (move by move), then its
// local copies, then its receives, so that no core holds back what others wait for while it
// waits for its own operands.
struct Relayout {
  std::vector<Move> moves;
};

// Every piece that moves a tensor from `src` into `dst`, by receiving core (ascending), then
// along the source boxes it overlaps: f(from, to, box). A box held by several cores (replicas) is
// read from the receiving core itself if it holds one, else from the replica chosen by the
// receiver's id, which spreads the readers over the holders. from == to: a copy on one core.
void for_each_piece(const Layout& src, const Layout& dst,
                    const std::function<void(std::uint32_t from, std::uint32_t to, const Box& box)>& f);

// What one core does for a re-layout, in order: a send or a receive of `value` bytes to or from
// `peer`, or a local copy of `value` elements (elements are turned into cycles by the runner).
// A send and the receive of the same piece share `piece` (numbered from 0 in the relayout), so a
// receive knows its message without matching by (source, destination).
struct RelayoutStep {
  enum Kind : std::uint8_t { Send, Copy, Recv } kind;  // also the order a core runs them in
  std::uint32_t peer;
  std::uint32_t tag;
  std::uint32_t piece;
  std::uint64_t value;
};

static_assert(sizeof(RelayoutStep) <= 24, "a relayout step in flight should stay within 24 bytes");

// Steps grouped by core in one flat array: core c's steps are steps[begin[c], begin[c + 1]).
// (A core beyond begin's end has none.) Two allocations per relayout, however many cores.
template <class T>
struct StepsByCore {
  std::vector<std::uint32_t> begin;
  std::vector<T> steps;
  const T* first(std::uint32_t core) const { return core + 1 < begin.size() ? steps.data() + begin[core] : nullptr; }
  std::size_t count(std::uint32_t core) const { return core + 1 < begin.size() ? begin[core + 1] - begin[core] : 0; }
};

// Relayout `r`'s pieces grouped by the core that runs them, in the order it runs them: its sends
// (move by move, piece by piece), then its copies, then its receives. Each is made by
// make(kind, peer, move index, box) -> T: the simulator keeps bytes, functional loading keeps boxes.
// The pieces come out in piece order; a counting sort on (core, kind) keeps that order within each.
template <class T, class Make>
StepsByCore<T> steps_by_core(const Relayout& r, const std::vector<Layout>& layouts, Make make) {
  std::uint32_t cores = 0;
  for (const Move& m : r.moves)
    for (std::uint32_t l : {m.from, m.to})
      if (!layouts[l].cores.empty()) cores = std::max(cores, layouts[l].cores.back() + 1);
  std::vector<std::pair<std::uint32_t, T>> raw;  // (core * 3 + kind, step)
  for (std::size_t i = 0; i < r.moves.size(); ++i)
    for_each_piece(layouts[r.moves[i].from], layouts[r.moves[i].to], [&](std::uint32_t from, std::uint32_t to, const Box& b) {
      if (from == to) {
        raw.emplace_back(to * 3 + RelayoutStep::Copy, make(RelayoutStep::Copy, to, i, b));
      } else {  // the send first, then the receive (relayout_steps numbers pieces by this)
        raw.emplace_back(from * 3 + RelayoutStep::Send, make(RelayoutStep::Send, to, i, b));
        raw.emplace_back(to * 3 + RelayoutStep::Recv, make(RelayoutStep::Recv, from, i, b));
      }
    });
  std::vector<std::uint32_t> at(std::size_t{cores} * 3 + 1, 0);  // where each (core, kind) starts
  for (const auto& [key, step] : raw) ++at[key + 1];
  for (std::size_t k = 1; k < at.size(); ++k) at[k] += at[k - 1];
  StepsByCore<T> out;
  out.begin.resize(std::size_t{cores} + 1);
  for (std::uint32_t c = 0; c <= cores; ++c) out.begin[c] = at[std::size_t{c} * 3];
  out.steps.resize(raw.size());
  for (auto& [key, step] : raw) out.steps[at[key]++] = std::move(step);
  return out;
}

// Per core, every step of relayout `r`, in the order the core runs them (copies in elements).
StepsByCore<RelayoutStep> relayout_steps(const Relayout& r, const std::vector<Layout>& layouts);

}  // namespace tessera::sim
