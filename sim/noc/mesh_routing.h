#pragma once
// The geometry of a 2-D mesh or torus and its dimension-order routing, shared by both levels of
// detail (the packet level's routes, the flit level's routers): which links exist, where each
// leads, which way a packet turns, and where a torus dimension wraps (its dateline).
// Routers are numbered row * cols + col; directions: East/West along a row (increasing /
// decreasing column), South/North along a column (increasing / decreasing row). Inline: they run
// for every route and every head flit.
#include <cstdint>

#include "sim/config/config.h"

namespace tessera::sim {

enum MeshDir : int { kEast = 0, kWest = 1, kSouth = 2, kNorth = 3 };
constexpr std::uint32_t kNoRouter = ~0u;

inline const char* mesh_dir_name(int dir) {
  static const char* names[4] = {"E", "W", "S", "N"};
  return names[dir];
}

// The router the link leaving `node` in `dir` leads to, or kNoRouter where there is no link (a
// mesh edge; the second link of a 2-wide torus dimension, which has one link each way).
inline std::uint32_t mesh_neighbour(const MeshConfig& m, std::uint32_t node, int dir) {
  const std::uint32_t r = node / m.cols, c = node % m.cols;
  const bool horizontal = dir == kEast || dir == kWest;
  const std::uint32_t extent = horizontal ? m.cols : m.rows, pos = horizontal ? c : r;
  const bool up = dir == kEast || dir == kSouth;
  if (extent < 2) return kNoRouter;
  if (!m.torus && ((up && pos + 1 == extent) || (!up && pos == 0))) return kNoRouter;
  if (m.torus && extent == 2 && !up) return kNoRouter;
  const std::uint32_t next = up ? (pos + 1) % extent : (pos + extent - 1) % extent;
  return horizontal ? r * m.cols + next : next * m.cols + c;
}

// Which way along one dimension of extent n from position a to b (a != b): on a mesh straight,
// on a torus the shorter way round, ties the increasing way.
inline int mesh_way(const MeshConfig& m, std::uint32_t a, std::uint32_t b, std::uint32_t n, int up, int down) {
  if (!m.torus) return a < b ? up : down;
  const std::uint32_t fwd = (b + n - a) % n;
  return (fwd <= n - fwd || n == 2) ? up : down;
}

// The next direction from `node` towards `dst`, or -1 when there: along the row first, then the
// column (dimension order).
inline int mesh_next_dir(const MeshConfig& m, std::uint32_t node, std::uint32_t dst) {
  const std::uint32_t r = node / m.cols, c = node % m.cols, tr = dst / m.cols, tc = dst % m.cols;
  if (c != tc) return mesh_way(m, c, tc, m.cols, kEast, kWest);
  if (r != tr) return mesh_way(m, r, tr, m.rows, kSouth, kNorth);
  return -1;
}

// The whole route from `from` to `to` in the order of mesh_next_dir: visit(node, dir) for every
// link taken (the way along a dimension does not change on the way, so it is chosen once).
template <typename Visit>
void mesh_walk(const MeshConfig& m, std::uint32_t from, std::uint32_t to, Visit&& visit) {
  std::uint32_t r = from / m.cols, c = from % m.cols;
  const std::uint32_t tr = to / m.cols, tc = to % m.cols;
  if (c != tc) {
    const int d = mesh_way(m, c, tc, m.cols, kEast, kWest);
    while (c != tc) {
      visit(r * m.cols + c, d);
      c = d == kEast ? (c + 1 == m.cols ? 0 : c + 1) : (c == 0 ? m.cols - 1 : c - 1);
    }
  }
  if (r != tr) {
    const int d = mesh_way(m, r, tr, m.rows, kSouth, kNorth);
    while (r != tr) {
      visit(r * m.cols + c, d);
      r = d == kSouth ? (r + 1 == m.rows ? 0 : r + 1) : (r == 0 ? m.rows - 1 : r - 1);
    }
  }
}

// Whether the link leaving `node` in `dir` wraps round a torus dimension.
inline bool mesh_wraps(const MeshConfig& m, std::uint32_t node, int dir) {
  if (!m.torus) return false;
  const std::uint32_t r = node / m.cols, c = node % m.cols;
  switch (dir) {
    case kEast: return c + 1 == m.cols;
    case kWest: return c == 0;
    case kSouth: return r + 1 == m.rows;
    case kNorth: return r == 0;
  }
  return false;
}

}  // namespace tessera::sim
