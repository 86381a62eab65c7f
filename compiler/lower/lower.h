#pragma once
// Lowering a schedule to the program the simulator runs (docs/program.md). Every tensor has a home
// layout (model inputs: striped over all cores and loaded from off-chip; weights: their idle plan
// for T10, the VGM stripes for VGM; activations: their producer's output layout for T10, VGM
// stripes for VGM). Before an operator runs, its operands are laid out for its active plan by
// exchange (the setup phase for weights, the input phase for activations); then every core runs
// the plan's compute steps, rotating partitions to ring neighbours through the bounded shift
// buffer; buffers are freed when their last reader has run.
//
// The result is kept in a compact form: whole models on 1472 cores have millions of items, so it
// becomes the simulator's Program directly, or is streamed out as JSON. The operands' moves
// before an operator are one relayout item per core (the two layouts of every operand), not a
// send and a receive per message: the simulator works the messages out when it gets there.
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"
#include "compiler/schedule/schedule.h"
#include "sim/common/error.h"
#include "sim/common/json_reader.h"
#include "sim/config/config.h"
#include "sim/program/program.h"

namespace tessera::lower {

struct Options {
  bool functional = false;         // unrolled, with the values-carrying details
  Bytes shift_buffer_bytes = 8192;
  // Model inputs loaded from and outputs stored to off-chip memory inside the timed run. Off by
  // default: like the weights, inputs are on chip when the run starts (streamed in behind the
  // previous batch), and outputs stay there (functional runs still store them, untimed in spirit).
  bool offchip_io = false;
};

enum class K : std::uint8_t { Alloc, Free, Init, Compute, Send, Recv, Sync, Load, Store, Begin, End, Relayout };

struct LItem {
  K k;
  int tag = -1;
  std::uint32_t arg = 0;   // Send/Recv: peer; Sync: group; Load/Store: off-chip tensor; Begin: count;
                           // Relayout: index into relayouts
  std::int64_t bytes = 0;  // Alloc/Send/Recv/Load/Store
  int buf = -1;            // buffer name id
  int aux = -1;            // Compute: index into comps; Send: box (functional); Alloc: view (functional)
};

struct CompItem {
  std::string kind;  // program compute kind
  std::int64_t batch = 1, m = 1, k = 1, n = 1, elements = 1, rows = 1, cols = 1;
  Cycles cycles = 0;
  std::vector<int> ins;
  int out = -1;
  int expr = -1;  // -1: moves no values (the copy out of the shift buffer)
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
};

struct Lowered {
  std::string name;
  bool functional = false;
  std::vector<std::vector<LItem>> cores;  // by core id
  std::vector<CompItem> comps;
  std::vector<sim::Box> boxes;
  std::vector<sim::View> views;
  std::vector<std::string> names;                 // buffer names
  std::vector<sim::Tag> tags;
  std::vector<sim::Layout> layouts;      // re-layouts between operators (sim/program/relayout.h)
  std::vector<sim::Relayout> relayouts;
  std::vector<std::string> exprs;
  std::vector<std::pair<std::string, std::vector<std::uint32_t>>> groups;  // [0] is "all"
  struct Offchip { std::string name; std::uint32_t chip; Bytes bytes; };
  std::vector<Offchip> offchip;  // a tensor read or written from several chips has one per chip
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> data_tensors;
  std::map<std::string, const std::vector<float>*> data_values;  // given values (the workload's)
  std::vector<Bytes> peak_bytes;                   // per core

  std::uint64_t items() const;
  void write_json(std::ostream& out) const;        // docs/program.md
  // To a file: JSON, or the binary form for a ".tpb" name (sim/program/program_file.h).
  void write(const std::string& path) const;
  Json json() const;                               // small programs (tests, functional runs)
  // The simulator's program, built directly (timing mode; functional programs go through JSON,
  // which the simulator validates in full).
  sim::Program program(const sim::Config& cfg) const;

 private:
  void write_top(std::ostream& out) const;
};

// A tensor striped over `cores` cores, one box per core (empty tensor name: the core holds none).
// Activations split outer dimensions first (batch, tokens), weights inner ones first (output
// features), the way plans split them, so that a plan's window usually covers whole stripes.
std::vector<sim::View> stripes(const ir::Tensor& t, std::size_t cores);
// Bytes of the largest stripe.
Bytes stripe_bytes(const ir::Tensor& t, std::size_t cores);

// One operand's layout under a plan: its box on each core (part: the plan's inputs in expression
// order, then the output; cores the plan leaves out hold nothing).
std::vector<sim::View> plan_views(const plan::Plan& p, const ir::Operator& op, std::size_t part,
                                  std::size_t cores);
bool same_layout(const std::vector<sim::View>& a, const std::vector<sim::View>& b);
// (core, ring neighbour it sends to) for every core of a plan whose operand `part` rotates: one
// shift round (empty when the operand stays put).
std::vector<std::pair<std::size_t, std::size_t>> shift_pairs(const plan::Plan& p, const ir::Operator& op,
                                                             std::size_t part);
// Bytes of each piece one shift of operand `part` moves through the shift buffer.
std::vector<Bytes> shift_pieces(const plan::Plan& p, const ir::Operator& op, std::size_t part,
                                Bytes shift_buffer_bytes);
// The same pieces counted by size, (bytes, how many), without listing them: a rotation of a huge
// chunk has millions, and listing them is most of what planning a huge operator costs.
std::vector<std::pair<Bytes, std::int64_t>> shift_piece_counts(const plan::Plan& p, const ir::Operator& op,
                                                               std::size_t part, Bytes shift_buffer_bytes);

// One message of a re-layout, or a copy on one core (from == to).
struct Piece {
  std::size_t from, to;
  sim::Box box;
};
// The pieces that move a tensor of `shape` from layout `src` into layout `dst`, in the order the
// program issues them (by receiving core): sim::for_each_piece on the two layouts, which the
// simulator runs re-layouts by. The oracle's replay (compiler/oracle/replay.h) and
// the schedule use them.
std::vector<Piece> relayout_pieces(const std::vector<std::int64_t>& shape, const std::vector<sim::View>& src,
                                   const std::vector<sim::View>& dst);

// A core's scratchpad overflows in the lowered program (the schedule's memory model is an
// estimate; lowering places every buffer exactly).
struct FitError : schedule::DoesNotFit {
  Bytes short_by;
  FitError(const std::string& msg, Bytes short_by_bytes) : schedule::DoesNotFit(msg), short_by(short_by_bytes) {}
};

Lowered lower(const ir::Workload& w, const schedule::Schedule& s, const sim::Config& cfg,
              const Options& o);

// Reference evaluation of the whole graph with the functional mode's initial values: every
// model output, in row-major order.
std::map<std::string, std::vector<float>> reference_outputs(const ir::Workload& w);

}  // namespace tessera::lower
