#include "sim/system/system.h"

#include <fmt/format.h>

#include <map>

#include "sim/common/clock.h"
#include "sim/common/error.h"
#include "sim/results/trace.h"

namespace tessera::sim {

System::System(sc_core::sc_module_name name, const Config& cfg, const Program& prog, TraceRecorder* trace,
               const std::string& collective_engine, bool relayouts_by_items, bool fast_forward)
    : sc_core::sc_module(name), cfg_(cfg), prog_(prog), tags_(prog.tags.size()), relayouts_(prog, cfg.chip.core),
      network_("network", cfg, trace), barrier_("barrier", cfg, prog),
      memory_("offchip", cfg, trace) {
  if (!prog.collectives.empty()) network_.attach_collectives(cfg, prog.collectives, collective_engine);
  if (prog.functional) {
    fx_ = std::make_unique<FunctionalContext>();
    fx_->program = &prog;
    for (const auto& [n, shape] : prog.data_tensors) {
      fx_->store.add(n, shape);
      auto v = prog.data_values.find(n);
      if (v != prog.data_values.end()) fx_->store.at(n).values = v->second;
    }
  }
  for (const CoreProgram& cp : prog.cores) {
    dmas_.push_back(std::make_unique<Dma>(fmt::format("dma_{}", cp.core).c_str(), cp.core, cp.dma_handles));
    dmas_.back()->net.bind(network_);
    dmas_.back()->mem.bind(memory_);
  }
  // A trace wants every span, a functional run every value, and collectives run on an engine
  // that keeps state of its own: those are always simulated in full.
  if (fast_forward && !trace && !prog.functional && prog.collectives.empty())
    fast_forward_ = FastForward::make(prog, network_, memory_, barrier_, dmas_, relayouts_, tags_);
  for (std::size_t i = 0; i < prog.cores.size(); ++i) {
    const CoreProgram& cp = prog.cores[i];
    const std::uint32_t chip = cfg.chip_of(cp.core);
    int track = trace ? trace->add_track(fmt::format("chip {} cores", chip), fmt::format("core {}", cp.core)) : -1;
    cores_.push_back(std::make_unique<Core>(fmt::format("core_{}", cp.core).c_str(), cp,
                                            cfg.chip.dma.issue_cycles, trace, track, status_, tags_,
                                            fx_.get(), relayouts_, relayouts_by_items, fast_forward_.get(), i));
    Core& c = *cores_.back();
    c.dma.bind(*dmas_[i]);
    c.barrier.bind(barrier_);
  }
  if (trace)
    for (ChannelStats* r : channels()) r->trace_track = trace->add_track("links and channels", r->name);
}

std::vector<ChannelStats*> System::channels() const {
  std::vector<ChannelStats*> rs;
  const_cast<Network&>(network_).stats(rs);
  const_cast<OffchipMemory&>(memory_).stats(rs);
  return rs;
}

void System::check_finished() const {
  if (!status_.error.empty()) {
    // the item the core failed in, unless the message names it already (a message whose sizes
    // disagree, a DMA handle reused, a functional-mode fault said only which core)
    std::string msg = status_.error;
    if (status_.failed_core < cores_.size()) {
      const Core& c = *cores_[status_.failed_core];
      if (msg.find(item_place(c.program(), c.current())) == std::string::npos)
        msg += " (at " + item_location(prog_, c.program(), c.current()) + ")";
    }
    if (status_.simulation_error) throw SimulationError(msg);
    throw Error(msg);
  }
  std::string blocked;
  std::size_t count = 0;
  for (const auto& c : cores_) {
    if (c->done()) continue;
    if (++count > 16) continue;  // enough to see the cycle; the count says how many in all
    const Item& it = c->current();
    const std::string where = item_location(prog_, c->program(), it);
    std::string what;
    if (it.op == Op::Recv)
      what = fmt::format("waits in recv from core {} ({} unreceived message(s) from others)", it.arg,
                         network_.pending(c->program().core));
    else if (it.op == Op::Sync)
      what = fmt::format("waits at sync on group '{}' ({} of {} members arrived)",
                         prog_.groups[it.arg].name, barrier_.arrived(it.arg), barrier_.members(it.arg));
    else if (it.op == Op::Wait)
      what = fmt::format("waits for DMA handle {} ({} unreceived message(s) from others)", it.arg,
                         network_.pending(c->program().core));
    else
      what = "is blocked";
    blocked += fmt::format("\n  core {} {} at {}", c->program().core, what, where);
  }
  if (count) {
    const std::string where = network_.in_flight() ? network_.stuck_report() : "";
    throw SimulationError(fmt::format("deadlock at cycle {}: {} core(s) can never finish ({} packet(s) "
                                      "stuck in the network{}):{}{}",
                                      now_cycles(), count, network_.in_flight(), where.empty() ? "" : ": " + where,
                                      blocked,
                                      count > 16 ? fmt::format("\n  ... and {} more", count - 16) : ""));
  }
}

Json System::results() const {
  check_finished();
  Cycles total = 0;
  for (const auto& c : cores_) total = std::max(total, c->finish_cycle());
  Json r;
  r["config"] = cfg_.name;
  r["program"] = prog_.name;
  r["clock_ghz"] = cfg_.clock_ghz;
  r["total_cycles"] = total;
  r["total_seconds"] = static_cast<double>(total) / (cfg_.clock_ghz * 1e9);
  std::uint64_t items = 0;
  for (const auto& c : cores_) items += c->items_run();
  r["work_items"] = items;
  r["relayout_steps_peak"] = relayouts_.peak_steps_held();
  r["messages"] = network_.messages();
  r["network_hops"] = network_.hops();
  r["barriers"] = barrier_.barriers();
  if (fast_forward_) {
    const Segments& s = fast_forward_->segments();
    r["fast_forward"] = {{"stretches", s.count()}, {"repeating", s.repeating()},
                         {"recorded", fast_forward_->recorded()}, {"replayed", fast_forward_->replayed()}};
  }
  if (!prog_.collectives.empty()) {
    Json done = Json::array();
    for (Cycles c : network_.collectives_done()) done.push_back(c);
    r["collectives_done_cycle"] = std::move(done);
  }

  Json cores = Json::array();
  for (const auto& c : cores_) {
    Json j;
    j["core"] = c->program().core;
    j["chip"] = cfg_.chip_of(c->program().core);
    Json busy;
    Cycles sum = 0;
    for (int a = 0; a < kActivities; ++a) {
      busy[activity_name(static_cast<Activity>(a))] = c->busy(static_cast<Activity>(a));
      sum += c->busy(static_cast<Activity>(a));
    }
    j["cycles"] = busy;
    j["idle_cycles"] = total - sum;
    j["busy_fraction"] = total ? static_cast<double>(c->busy(Activity::Compute)) / total : 0.0;
    j["finish_cycle"] = c->finish_cycle();
    j["peak_scratchpad_bytes"] = c->program().peak_scratchpad_bytes;
    cores.push_back(std::move(j));
  }
  r["cores"] = std::move(cores);

  Json links = Json::array();
  for (const ChannelStats* l : channels()) {
    links.push_back({{"name", l->name}, {"bytes", l->bytes}, {"transfers", l->transfers},
                     {"busy_cycles", l->busy_cycles},
                     {"busy_fraction", total ? static_cast<double>(l->busy_cycles) / total : 0.0}});
  }
  r["links"] = std::move(links);

  Json off = Json::array();
  for (std::uint32_t c = 0; c < cfg_.system.chips; ++c)
    off.push_back({{"chip", c}, {"bytes_read", memory_.bytes_read(c)}, {"bytes_written", memory_.bytes_written(c)}});
  r["offchip"] = std::move(off);
  if (!prog_.tags.empty()) r["operators"] = operators();
  if (fx_) r["outputs"] = outputs();
  return r;
}

// Per operator (in first-appearance order of its tags): wall-clock span from its first item's
// start to its last item's end, and per phase the busy cycles by activity averaged over the
// cores of the program.
Json System::operators() const {
  const double ncores = static_cast<double>(std::max<std::size_t>(1, prog_.cores.size()));
  struct Row {
    Cycles start = ~Cycles{0}, end = 0;
    double compute = 0, exchange = 0, sync = 0, setup = 0, memory = 0;
  };
  std::vector<std::string> order;
  std::map<std::string, Row> rows;
  for (std::size_t t = 0; t < prog_.tags.size(); ++t) {
    const Tag& tag = prog_.tags[t];
    if (!rows.count(tag.op)) order.push_back(tag.op);
    Row& row = rows[tag.op];
    if (tags_.last[t] == 0 && tags_.first[t] == ~Cycles{0}) continue;  // no item ran with it
    row.start = std::min(row.start, tags_.first[t]);
    row.end = std::max(row.end, tags_.last[t]);
    auto avg = [&](Activity a) { return static_cast<double>(tags_.busy[t][static_cast<int>(a)]) / ncores; };
    const double exch = avg(Activity::Send) + avg(Activity::Recv);
    if (tag.phase == "setup") {
      row.setup += exch + avg(Activity::Sync) + avg(Activity::Compute);
    } else {
      row.compute += avg(Activity::Compute);
      row.exchange += exch;
      row.sync += avg(Activity::Sync);
    }
    row.memory += avg(Activity::Memory);
  }
  Json out = Json::array();
  for (const auto& n : order) {
    const Row& r = rows[n];
    const Cycles start = r.start == ~Cycles{0} ? 0 : r.start;
    out.push_back({{"name", n}, {"start_cycle", start}, {"end_cycle", r.end}, {"cycles", r.end - start},
                   {"compute_cycles", r.compute}, {"exchange_cycles", r.exchange}, {"sync_cycles", r.sync},
                   {"setup_cycles", r.setup}, {"memory_cycles", r.memory}});
  }
  return out;
}

// Functional mode: every tensor the program stored, with its values in row-major order.
Json System::outputs() const {
  Json out = Json::object();
  for (const auto& [name, t] : fx_->store.tensors())
    if (t.written) out[name] = Json{{"shape", t.shape}, {"values", t.values}};
  return out;
}

}  // namespace tessera::sim
