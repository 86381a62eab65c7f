#include "sim/program/relayout.h"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <map>

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

using Interval = std::pair<std::int64_t, std::int64_t>;  // [lo, hi)

// The cores holding each source box, found by the box's origin: a tuple of indices into the
// distinct origins per dimension, packed into one number (mixed radix, strides()). The holders of
// one origin are contiguous, in the order of the source layout's cores (ascending). A table
// indexed by the packed number when it is not much larger than the boxes, else a hash map; and
// when the packed number could overflow, origins numbered through an ordered map.
class Holders {
 public:
  Holders(const Layout& src, const std::vector<std::vector<std::int64_t>>& origins) : rank_(src.rank()) {
    stride_.assign(rank_, 1);
    std::uint64_t product = 1;
    for (std::size_t d = rank_; d-- > 0;) {
      stride_[d] = product;
      const std::uint64_t n = std::max<std::size_t>(origins[d].size(), 1);
      packed_ = packed_ && product <= (std::uint64_t{1} << 40) / n;
      product *= n;
    }
    std::vector<std::uint32_t> idx(rank_);
    std::vector<std::pair<std::uint64_t, std::uint32_t>> keyed;  // (origin key, core)
    keyed.reserve(src.cores.size());
    for (std::size_t i = 0; i < src.cores.size(); ++i) {
      for (std::size_t d = 0; d < rank_; ++d) {
        const std::int64_t o = src.boxes[2 * rank_ * i + d];
        idx[d] = static_cast<std::uint32_t>(std::lower_bound(origins[d].begin(), origins[d].end(), o) - origins[d].begin());
      }
      keyed.emplace_back(packed_ ? pack(idx) : number(idx), src.cores[i]);
    }
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    cores_.reserve(keyed.size());
    for (const auto& k : keyed) cores_.push_back(k.second);
    dense_ = packed_ && product <= 4 * keyed.size() + 1024;
    if (dense_) {
      first_.assign(product + 1, 0);
      for (const auto& k : keyed) ++first_[k.first + 1];
      for (std::size_t k = 1; k < first_.size(); ++k) first_[k] += first_[k - 1];
    } else {
      for (std::size_t i = 0; i < keyed.size(); ++i) {
        auto [it, added] = spans_.try_emplace(keyed[i].first, Span{static_cast<std::uint32_t>(i), 0});
        ++it->second.count;
      }
    }
  }
  bool packed() const { return packed_; }
  const std::vector<std::uint64_t>& strides() const { return stride_; }
  // The holders of the box whose origin packs to `key` (packed()) or has indices `idx`.
  std::pair<const std::uint32_t*, std::size_t> at(std::uint64_t key) const {
    if (dense_) return {cores_.data() + first_[key], first_[key + 1] - first_[key]};
    auto it = spans_.find(key);
    if (it == spans_.end()) return {nullptr, 0};
    return {cores_.data() + it->second.begin, it->second.count};
  }
  std::pair<const std::uint32_t*, std::size_t> at(const std::vector<std::uint32_t>& idx) const {
    auto it = tuples_.find(idx);
    return it == tuples_.end() ? std::pair<const std::uint32_t*, std::size_t>{nullptr, 0} : at(it->second);
  }

 private:
  struct Span {
    std::uint32_t begin, count;
  };
  std::uint64_t pack(const std::vector<std::uint32_t>& idx) const {
    std::uint64_t k = 0;
    for (std::size_t d = 0; d < rank_; ++d) k += idx[d] * stride_[d];
    return k;
  }
  std::uint64_t number(const std::vector<std::uint32_t>& idx) { return tuples_.emplace(idx, tuples_.size()).first->second; }

  std::size_t rank_;
  bool packed_ = true, dense_ = false;
  std::vector<std::uint64_t> stride_;
  std::map<std::vector<std::uint32_t>, std::uint64_t> tuples_;  // only when a packed key could overflow
  std::vector<std::uint32_t> first_;                           // dense: holders of key k at [first_[k], first_[k+1])
  absl::flat_hash_map<std::uint64_t, Span> spans_;              // else
  std::vector<std::uint32_t> cores_;
};

}  // namespace

void for_each_piece(const Layout& src, const Layout& dst,
                    const std::function<void(std::uint32_t, std::uint32_t, const Box&)>& f) {
  const std::size_t rank = src.rank();
  // The distinct source intervals per dimension, each with the index of its start among the
  // distinct source origins, and the holders of each source box by its origin.
  std::vector<std::vector<Interval>> iv(rank);
  std::vector<std::vector<std::int64_t>> origins(rank);
  for (std::size_t i = 0; i < src.cores.size(); ++i)
    for (std::size_t d = 0; d < rank; ++d) {
      const std::int64_t o = src.boxes[2 * rank * i + d], e = src.boxes[2 * rank * i + rank + d];
      iv[d].push_back({o, o + e});
      origins[d].push_back(o);
    }
  std::vector<std::vector<std::uint32_t>> start_of(rank);  // per interval: its start's index in origins
  for (std::size_t d = 0; d < rank; ++d) {
    std::sort(iv[d].begin(), iv[d].end());
    iv[d].erase(std::unique(iv[d].begin(), iv[d].end()), iv[d].end());
    std::sort(origins[d].begin(), origins[d].end());
    origins[d].erase(std::unique(origins[d].begin(), origins[d].end()), origins[d].end());
    for (const Interval& x : iv[d])
      start_of[d].push_back(static_cast<std::uint32_t>(
          std::lower_bound(origins[d].begin(), origins[d].end(), x.first) - origins[d].begin()));
  }
  Holders holders(src, origins);
  // per interval, its share of the packed origin key
  std::vector<std::vector<std::uint64_t>> share(rank);
  if (holders.packed())
    for (std::size_t d = 0; d < rank; ++d)
      for (const std::uint32_t o : start_of[d]) share[d].push_back(o * holders.strides()[d]);
  std::vector<std::vector<std::uint32_t>> hit(rank);  // indices into iv[d]
  std::vector<std::size_t> pick(rank);
  std::vector<std::uint32_t> key(rank);
  Box piece{std::vector<std::int64_t>(rank), std::vector<std::int64_t>(rank)};
  for (std::size_t i = 0; i < dst.cores.size(); ++i) {
    const std::uint32_t c = dst.cores[i];
    const std::int64_t* want_origin = dst.boxes.data() + 2 * rank * i;
    const std::int64_t* want_extent = want_origin + rank;
    bool none = false;
    for (std::size_t d = 0; d < rank; ++d) {
      hit[d].clear();
      const std::int64_t lo = want_origin[d], hi = lo + want_extent[d];
      auto it = std::lower_bound(iv[d].begin(), iv[d].end(), Interval{lo, 0},
                                 [](const Interval& a, const Interval& b) { return a.second <= b.first; });
      for (; it != iv[d].end() && it->first < hi; ++it)
        if (it->second > lo) hit[d].push_back(static_cast<std::uint32_t>(it - iv[d].begin()));
      none = none || hit[d].empty();
    }
    if (none) continue;
    std::fill(pick.begin(), pick.end(), 0);  // an odometer over the hit intervals
    for (bool done = false; !done;) {
      std::uint64_t packed = 0;
      for (std::size_t d = 0; d < rank; ++d) {
        const std::uint32_t j = hit[d][pick[d]];
        const auto [lo, hi] = iv[d][j];
        if (holders.packed()) packed += share[d][j];
        else key[d] = start_of[d][j];
        piece.origin[d] = std::max(lo, want_origin[d]);
        piece.extent[d] = std::min(hi, want_origin[d] + want_extent[d]) - piece.origin[d];
      }
      if (const auto [list, n] = holders.packed() ? holders.at(packed) : holders.at(key); n > 0) {
        const std::uint32_t from = n == 1 ? list[0] : std::find(list, list + n, c) != list + n ? c : list[c % n];
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
