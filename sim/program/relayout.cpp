#include "sim/program/relayout.h"

#include <algorithm>

namespace tessera::sim {

Box Layout::box(std::size_t i) const {
  const std::size_t n = rank();
  const auto at = boxes.begin() + static_cast<std::ptrdiff_t>(2 * n * i);
  return Box{{at, at + static_cast<std::ptrdiff_t>(n)}, {at + static_cast<std::ptrdiff_t>(n), at + static_cast<std::ptrdiff_t>(2 * n)}};
}

bool Layout::holds(std::uint32_t core) const { return std::binary_search(cores.begin(), cores.end(), core); }

Layout layout_of(const std::vector<std::int64_t>& shape, const std::vector<View>& views) {
  Layout l;
  l.shape = shape;
  const std::size_t n = shape.size();
  std::vector<std::int64_t> lo(n), len(n);
  for (std::size_t c = 0; c < views.size(); ++c) {
    const View& v = views[c];
    if (v.tensor.empty()) continue;
    bool empty = false;
    for (std::size_t d = 0; d < n; ++d) {
      lo[d] = std::max<std::int64_t>(v.origin[d], 0);
      len[d] = std::min(v.origin[d] + v.extent[d], shape[d]) - lo[d];
      empty = empty || len[d] <= 0;
    }
    if (empty) continue;
    l.cores.push_back(static_cast<std::uint32_t>(c));
    l.boxes.insert(l.boxes.end(), lo.begin(), lo.end());
    l.boxes.insert(l.boxes.end(), len.begin(), len.end());
  }
  return l;
}

namespace {

using Coords = std::vector<std::int64_t>;
using Interval = std::pair<std::int64_t, std::int64_t>;  // [lo, hi)

struct CoordsHash {
  std::size_t operator()(const Coords& c) const {
    std::size_t h = 1469598103934665603ull;
    for (auto v : c) h = (h ^ static_cast<std::size_t>(v)) * 1099511628211ull;
    return h;
  }
};

}  // namespace

void for_each_piece(const Layout& src, const Layout& dst,
                    const std::function<void(std::uint32_t, std::uint32_t, const Box&)>& f) {
  const std::size_t rank = src.rank();
  // The distinct source intervals per dimension, and the holders of each source box by its origin.
  std::vector<std::vector<Interval>> iv(rank);
  std::unordered_map<Coords, std::vector<std::uint32_t>, CoordsHash> holders;
  for (std::size_t i = 0; i < src.cores.size(); ++i) {
    const Box b = src.box(i);
    for (std::size_t d = 0; d < rank; ++d) iv[d].push_back({b.origin[d], b.origin[d] + b.extent[d]});
    holders[b.origin].push_back(src.cores[i]);
  }
  for (auto& x : iv) {
    std::sort(x.begin(), x.end());
    x.erase(std::unique(x.begin(), x.end()), x.end());
  }
  std::vector<std::vector<Interval>> hit(rank);
  std::vector<std::size_t> pick(rank);
  Coords key(rank);
  Box piece{Coords(rank), Coords(rank)};
  for (std::size_t i = 0; i < dst.cores.size(); ++i) {
    const std::uint32_t c = dst.cores[i];
    const Box want = dst.box(i);
    bool none = false;
    for (std::size_t d = 0; d < rank; ++d) {
      hit[d].clear();
      const std::int64_t lo = want.origin[d], hi = lo + want.extent[d];
      auto it = std::lower_bound(iv[d].begin(), iv[d].end(), Interval{lo, 0},
                                 [](const Interval& a, const Interval& b) { return a.second <= b.first; });
      for (; it != iv[d].end() && it->first < hi; ++it)
        if (it->second > lo) hit[d].push_back(*it);
      none = none || hit[d].empty();
    }
    if (none) continue;
    std::fill(pick.begin(), pick.end(), 0);  // an odometer over the hit intervals
    for (bool done = false; !done;) {
      for (std::size_t d = 0; d < rank; ++d) {
        const auto [lo, hi] = hit[d][pick[d]];
        key[d] = lo;
        piece.origin[d] = std::max(lo, want.origin[d]);
        piece.extent[d] = std::min(hi, want.origin[d] + want.extent[d]) - piece.origin[d];
      }
      if (auto hs = holders.find(key); hs != holders.end()) {
        const auto& list = hs->second;
        const std::uint32_t from = std::find(list.begin(), list.end(), c) != list.end() ? c : list[c % list.size()];
        f(from, c, piece);
      }
      done = true;
      for (std::size_t d = rank; d-- > 0;) {
        if (++pick[d] < hit[d].size()) { done = false; break; }
        pick[d] = 0;
      }
    }
  }
}

StepsByCore<RelayoutStep> relayout_steps(const Relayout& r, const std::vector<Layout>& layouts) {
  // steps_by_core makes a piece's send, then its receive: the receive closes the piece
  std::uint32_t pieces = 0;
  return steps_by_core<RelayoutStep>(r, layouts, [&](RelayoutStep::Kind k, std::uint32_t peer, std::size_t i, const Box& b) {
    const auto elements = static_cast<std::uint64_t>(b.elements());
    const std::uint32_t piece = k == RelayoutStep::Recv ? pieces++ : k == RelayoutStep::Send ? pieces : 0;
    return RelayoutStep{k, peer, r.moves[i].tag, piece, k == RelayoutStep::Copy ? elements : elements * r.moves[i].element_bytes};
  });
}

}  // namespace tessera::sim
