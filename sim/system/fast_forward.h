#pragma once
// Fast-forward: a stretch of a program that was simulated once is replayed, not simulated again,
// when it comes back and starts from the same state. Exact, not an estimate:
//
// - A stretch is what every core does between two consecutive global barriers (sync on group
//   "all" at the top level of each core's list). The simulator is deterministic and nothing in
//   it depends on the absolute cycle, so a stretch that starts with the whole system idle (no
//   message, packet, DMA transfer, memory request or barrier arrival pending, every port, link,
//   buffer and memory channel free by the start cycle) evolves the same way whenever it starts
//   from such a state: each core reaches the closing barrier the same number of cycles later,
//   having added the same busy cycles, items, messages, link and memory traffic.
// - Two stretches are the same when every core's items are the same in everything timing reads
//   (op, peer, bytes, cycles, handle, loop structure; a relayout by its layouts, not by the
//   tensor it moves) with tags renamed in order of first use; buffer and tensor names, item
//   places and load/store tensors do not count. A 128-bit fingerprint per stretch (load time),
//   and stretches of one fingerprint compared item by item before they share a recording.
// - The first time a repeating stretch starts idle it is simulated and recorded (if it also ends
//   idle); later starts from an idle state add the recording (per core the cycles to the
//   closing barrier, busy cycles and items; the network's, memory's and barriers' counters; the
//   tags' busy cycles and first/last cycles, shifted to the new start) and the cores jump to the
//   closing barrier, which they then simulate as usual.
// Off (SimOptions::fast_forward) for traces, functional runs and programs with collectives; a
// level of detail whose transport cannot say it is idle (the flit mesh) is never fast-forwarded.
// docs/hardware-model.md, "Fast-forward".
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "sim/core/core.h"
#include "sim/core/dma.h"
#include "sim/memory/offchip.h"
#include "sim/noc/network.h"
#include "sim/program/program.h"
#include "sim/program/relayout_runner.h"
#include "sim/sync/barrier.h"

namespace tessera::sim {

// The program cut at its global barriers, each stretch fingerprinted (load time).
class Segments {
 public:
  struct Key {
    std::uint64_t a = 0, b = 0;
    bool operator==(const Key& o) const { return a == o.a && b == o.b; }
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const { return static_cast<std::size_t>(k.a ^ (k.b * 0x9e3779b97f4a7c15ull)); }
  };

  explicit Segments(const Program& prog);
  // Per core (index in Program::cores): the item index of each closing barrier.
  const std::vector<std::uint32_t>& bounds(std::size_t core_index) const { return bounds_[core_index]; }
  std::size_t count() const { return keys_.size(); }
  const Key& key(std::size_t s) const { return keys_[s]; }
  // Stretch s can be replayed and another such stretch has the same fingerprint.
  bool repeats(std::size_t s) const { return repeats_[s]; }
  std::size_t repeating() const;
  // Stretch s's tags in order of first use (the renaming its fingerprint is taken under).
  const std::vector<std::uint32_t>& tags(std::size_t s) const { return tags_[s]; }

 private:
  class Hasher;
  void cut(const Program& prog);
  void fingerprint(const Program& prog);
  std::uint32_t tag_index(std::size_t s, std::uint32_t tag);
  bool same(const Program& prog, std::size_t a, std::size_t b) const;
  Key relayout_key(const Program& prog, std::uint32_t r);
  Key layout_key(const Program& prog, std::uint32_t l);

  std::vector<std::vector<std::uint32_t>> bounds_;  // 4 bytes per core and stretch
  std::vector<Key> keys_;
  std::vector<std::vector<std::uint32_t>> tags_;
  std::vector<bool> eligible_, repeats_;
  std::vector<std::optional<Key>> relayout_keys_, layout_keys_;  // computed on first use
};

class FastForward : public SegmentHook {
 public:
  FastForward(const Program& prog, Network& network, OffchipMemory& memory, Barrier& barrier,
              const std::vector<std::unique_ptr<Dma>>& dmas, RelayoutRunner& relayouts, TagStats& tags);

  // Null when nothing in the program repeats (nothing to gain; the cores need no hook).
  static std::unique_ptr<FastForward> make(const Program& prog, Network& network, OffchipMemory& memory,
                                           Barrier& barrier, const std::vector<std::unique_ptr<Dma>>& dmas,
                                           RelayoutRunner& relayouts, TagStats& tags);

  const std::vector<std::uint32_t>& bounds(std::size_t core_index) const override { return segments_.bounds(core_index); }
  const CoreDelta* begin(std::size_t s, std::size_t core_index, Cycles now, const std::array<Cycles, kActivities>& busy,
                         std::uint64_t items) override;
  void end(std::size_t s, std::size_t core_index, Cycles now, const std::array<Cycles, kActivities>& busy,
           std::uint64_t items) override;
  void note(std::size_t core_index, std::uint32_t tag, Activity a, Cycles start, Cycles end) override;

  const Segments& segments() const { return segments_; }
  std::uint64_t replayed() const { return replayed_; }
  std::uint64_t recorded() const { return records_.size(); }

 private:
  struct TagDelta {
    std::array<Cycles, kActivities> busy{};
    Cycles first = kNever, last = 0;  // relative to the stretch's start
  };
  struct Record {
    std::vector<CoreDelta> cores;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> counters;  // (index, increase), nonzero only
    std::vector<TagDelta> tags;  // by the stretch's tag order
    std::uint64_t barriers = 0, relayout_peak_rise = 0;
  };
  enum class Mode { Simulate, Record, Replay };

  void decide(std::size_t s, Cycles now);
  bool quiet(Cycles now, std::uint32_t except_group) const;
  void start_recording(std::size_t s, Cycles now);
  void finish_recording(Cycles now);
  void replay(const Record& r, std::size_t s, Cycles now);
  void read_counters(std::vector<std::uint64_t>& out) const;
  void add_counter(std::size_t i, std::uint64_t delta);

  const Program& prog_;
  Segments segments_;
  Network& network_;
  OffchipMemory& memory_;
  Barrier& barrier_;
  const std::vector<std::unique_ptr<Dma>>& dmas_;
  RelayoutRunner& relayouts_;
  TagStats& tags_;
  std::size_t network_counters_ = 0;  // the network's counters come first, then the memory's

  std::unordered_map<Segments::Key, Record, Segments::KeyHash> records_;
  std::size_t current_ = ~std::size_t{0};  // the stretch decided last
  Mode mode_ = Mode::Simulate;
  const Record* replaying_ = nullptr;
  // The recording in progress.
  Record rec_;
  Cycles t0_ = 0;
  bool valid_ = false;
  std::size_t arrived_ = 0;
  std::vector<bool> active_;  // by core: between its begin and its end
  std::vector<std::array<Cycles, kActivities>> busy0_;
  std::vector<std::uint64_t> items0_;
  std::vector<std::uint64_t> counters0_, counters1_;
  std::vector<std::uint32_t> tag_slot_;  // by tag: its index in the stretch's order, or ~0u
  std::uint64_t barriers0_ = 0, held0_ = 0;
  std::uint64_t replayed_ = 0;
};

}  // namespace tessera::sim
