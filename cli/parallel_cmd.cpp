#include "cli/parallel_cmd.h"
#include "cli/validators.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "cli/compile_cmd.h"
#include "compiler/lower/mapping_lower.h"
#include "sim/common/error.h"
#include "sim/results/trace.h"

namespace tessera::cli {

namespace {

// Shapes of public GPT models (layers, hidden, heads; FFN 4 x hidden; sequence 2048): GPT-3
// 175B and the Megatron-LM 1T configuration the DFModel paper sweeps; GPT-3 XL (1.3B) as a small one.
struct Preset {
  std::uint32_t layers;
  std::uint64_t hidden, heads, seq;
};
const std::map<std::string, Preset>& presets() {
  static const std::map<std::string, Preset> p = {{"gpt3-175b", {96, 12288, 96, 2048}},
                                                  {"gpt3-1t", {128, 25600, 160, 2048}},
                                                  {"gpt3-1.3b", {24, 2048, 16, 2048}}};
  return p;
}

std::vector<partition::Strategy> parse_mapping(const std::string& text, std::size_t dims) {
  std::vector<partition::Strategy> out;
  std::stringstream ss(text);
  for (std::string tok; std::getline(ss, tok, ',');) {
    if (tok == "TP" || tok == "tp") out.push_back(partition::Strategy::TP);
    else if (tok == "PP" || tok == "pp") out.push_back(partition::Strategy::PP);
    else if (tok == "DP" || tok == "dp") out.push_back(partition::Strategy::DP);
    else throw Error(fmt::format("--mapping: '{}' is not TP, PP or DP", tok));
  }
  if (out.size() != dims)
    throw Error(fmt::format("--mapping: {} strategies given; the system has {} dimensions (one each)", out.size(), dims));
  return out;
}

std::vector<std::size_t> parse_sizes(const std::string& text) {
  std::vector<std::size_t> out;
  std::stringstream ss(text);
  for (std::string tok; std::getline(ss, tok, ',');) {
    std::size_t used = 0;
    unsigned long v = 0;
    try {
      v = std::stoul(tok, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != tok.size() || v == 0) throw Error(fmt::format("--partitions: '{}' is not a positive kernel count", tok));
    out.push_back(v);
  }
  return out;
}

std::string describe(const partition::Evaluation& e) {
  std::string dims;
  for (partition::Strategy s : e.mapping.dims) dims += fmt::format("{}{}", dims.empty() ? "" : ",", partition::strategy_name(s));
  return fmt::format("{} TP{} PP{} DP{} {}", dims, e.tp, e.pp, e.dp, e.mapping.fused ? "fused" : "kernel-by-kernel");
}

Json to_json(const partition::Evaluation& e, const std::vector<partition::Kernel>& layer) {
  Json dims = Json::array();
  for (partition::Strategy s : e.mapping.dims) dims.push_back(partition::strategy_name(s));
  Json j = {{"dimensions", dims}, {"tp", e.tp}, {"pp", e.pp}, {"dp", e.dp},
            {"execution", e.mapping.fused ? "fused" : "kernel-by-kernel"}, {"feasible", e.feasible}};
  if (!e.feasible) {
    j["why"] = e.why;
    return j;
  }
  Json parts = Json::array();
  for (const partition::PartitionCost& p : e.partitions) {
    Json names = Json::array();
    for (std::size_t k = p.first; k <= p.last; ++k) names.push_back(layer[k].name);
    parts.push_back({{"kernels", names}, {"compute_s", p.compute_s}, {"memory_s", p.memory_s},
                     {"network_s", p.network_s}, {"sram_bytes", p.sram_bytes}, {"seconds", p.seconds()},
                     {"backward_seconds", p.backward_seconds()}, {"backward_compute_s", p.backward_compute_s},
                     {"backward_memory_s", p.backward_memory_s}, {"backward_network_s", p.backward_network_s}});
    if (p.setup_s > 0) {
      parts.back()["setup_s"] = p.setup_s;
      parts.back()["backward_setup_s"] = p.backward_setup_s;
    }
    if (p.tile_cycles > 0) {
      parts.back()["tile_cycles"] = p.tile_cycles;
      parts.back()["tiles"] = p.tiles;
    }
  }
  j["partitions"] = parts;
  j["layer_s"] = e.layer_s;
  if (e.micro_batches > 1 || e.backward_layer_s > 0) {
    j["backward_layer_s"] = e.backward_layer_s;
    j["micro_batches"] = e.micro_batches;
    j["gradient_allreduce_s"] = e.gradient_allreduce_s;
  }
  j["stage_s"] = e.stage_s;
  j["p2p_s"] = e.p2p_s;
  j["interval_s"] = e.interval_s;
  j["utilisation"] = e.utilisation;
  j["tokens_per_s"] = e.tokens_per_s;
  j["compute_s"] = e.compute_s;
  j["memory_s"] = e.memory_s;
  j["network_s"] = e.network_s;
  return j;
}

void print_partitions(const partition::Evaluation& e, const std::vector<partition::Kernel>& layer) {
  fmt::print("partitions of one layer on one chip ({}):\n", describe(e));
  const bool setup = std::any_of(e.partitions.begin(), e.partitions.end(),
                                 [](const partition::PartitionCost& p) { return p.setup_s > 0; });
  fmt::print("  {:<36} {:>11} {:>11} {:>11} {:>9}{}\n", "kernels", "compute us", "DRAM us", "network us", "SRAM MB",
             setup ? "    setup us" : "");
  for (const partition::PartitionCost& p : e.partitions) {
    std::string names;
    for (std::size_t k = p.first; k <= p.last; ++k) names += (names.empty() ? "" : " ") + layer[k].name;
    fmt::print("  {:<36} {:>11.1f} {:>11.1f} {:>11.1f} {:>9.1f}{}\n", names, p.compute_s * 1e6, p.memory_s * 1e6,
               p.network_s * 1e6, p.sram_bytes / 1e6, setup ? fmt::format(" {:>11.1f}", p.setup_s * 1e6) : "");
  }
}

// The best mapping's iteration as a Chrome trace: nanoseconds as cycles of a 1 GHz clock.
void write_trace(const partition::Evaluation& e, const std::string& path) {
  sim::TraceRecorder rec;
  std::vector<int> tracks;
  const std::string process = fmt::format("pipeline stages ({} chips each: TP{} x DP{})", e.tp * e.dp, e.tp, e.dp);
  for (std::uint32_t s = 0; s < e.pp; ++s) tracks.push_back(rec.add_track(process, fmt::format("stage {}", s)));
  double end = 0;
  for (const partition::StageSpan& x : partition::timeline(e)) {
    static const char* labels[] = {"forward", "backward", "gradient all-reduce"};
    const auto start = static_cast<Cycles>(std::llround(x.start_s * 1e9));
    rec.span(tracks[x.stage], labels[x.kind], start, static_cast<Cycles>(std::llround(x.end_s * 1e9)) - start);
    end = std::max(end, x.end_s);
  }
  rec.write(path, 1.0);
  fmt::print("timeline of {}: {:.3f} ms end to end (the closed form: {:.3f} ms); trace in {}\n", describe(e), end * 1e3,
             e.interval_s * 1e3, path);
}

// --compute, --array and --weight-load into the model's spec.
void set_compute_model(ParallelArgs& a) {
  if (a.compute != "peak" && a.compute != "systolic")
    throw Error(fmt::format("--compute: '{}' (expected peak or systolic)", a.compute));
  if (a.weight_load != "stream" && a.weight_load != "setup")
    throw Error(fmt::format("--weight-load: '{}' (expected stream or setup)", a.weight_load));
  a.llm.systolic = a.compute == "systolic";
  a.llm.weight_setup = a.weight_load == "setup";
  if (!a.array.empty() && !a.llm.systolic)
    throw Error(fmt::format("--array {}: the MAC arrays are --compute systolic's; --compute is {}", a.array, a.compute));
  const std::string array = a.array.empty() ? "16x16" : a.array;
  // digits 'x' digits, each 1 .. 65536
  const std::size_t x = array.find('x');
  const auto whole = [](const std::string& t) {
    return !t.empty() && t.size() <= 5 && t.find_first_not_of("0123456789") == std::string::npos ? std::stoul(t) : 0ul;
  };
  const unsigned long rows = x == std::string::npos ? 0 : whole(array.substr(0, x));
  const unsigned long cols = x == std::string::npos ? 0 : whole(array.substr(x + 1));
  if (rows == 0 || cols == 0 || rows > 65536 || cols > 65536)
    throw Error(fmt::format("--array: '{}' (expected rows x columns of MACs, each 1 .. 65536, e.g. 16x16)", array));
  a.llm.array_rows = static_cast<std::uint32_t>(rows);
  a.llm.array_cols = static_cast<std::uint32_t>(cols);
  if (a.simulate && (a.llm.systolic || a.llm.weight_setup))
    throw Error("--simulate runs each chip as a roofline at its peak, the model of --compute peak --weight-load stream; "
                "it does not go with --compute systolic or --weight-load setup");
}

}  // namespace

void add_parallel_options(CLI::App* cmd, ParallelArgs& a) {
  cmd->add_option("--config", a.config, "the system: chip peak, SRAM and DRAM from chip, topology from system.dimensions")->required();
  cmd->add_option("--model", a.model, "gpt3-175b, gpt3-1t or gpt3-1.3b (shape presets; --layers/--hidden/--heads/--seq override)")
      ->capture_default_str();
  // 0 stands for "the preset's" inside; given on the command line, a size must be at least 1
  const auto size = CLI::Range(1, 1 << 30);
  cmd->add_option("--layers", a.llm.layers, "decoder layers (default: the preset's)")->check(size);
  cmd->add_option("--hidden", a.llm.hidden, "hidden size (default: the preset's)")->check(size);
  cmd->add_option("--heads", a.llm.heads, "attention heads (default: the preset's)")->check(size);
  cmd->add_option("--ffn", a.llm.ffn, "FFN size (default 4 x hidden)")->check(size);
  cmd->add_option("--seq", a.llm.seq, "tokens per sequence (default: the preset's)")->check(size);
  cmd->add_option("--micro-batch", a.llm.micro_batch, "sequences per micro-batch")->capture_default_str();
  cmd->add_option("--seq-tile", a.llm.seq_tile, "tokens per tile streamed through a fused partition")->capture_default_str();
  cmd->add_option("--weight-tiles", a.llm.weight_tiles, "chunks weights stream through SRAM in (two resident)")->capture_default_str();
  cmd->add_option("--word-bytes", a.llm.word_bytes, "bytes per element")->capture_default_str();
  cmd->add_flag("--training", a.llm.training, "forward and backward, an iteration of --global-batch sequences, 1F1B "
                                             "pipeline, DP gradient all-reduce");
  cmd->add_option("--global-batch", a.llm.global_batch, "training: sequences per iteration (default: a micro-batch per DP replica)")
      ->check(size);
  cmd->add_option("--mapping", a.mapping, "fix the strategy per dimension, e.g. TP,PP (default: search them all)");
  cmd->add_option("--fusion", a.fusion, "search (both), fused or kernel-by-kernel")->capture_default_str();
  cmd->add_option("--compute", a.compute, "peak (FLOPs at the chip's peak) or systolic (the DFModel code's model: the "
                                          "peak as --array arrays, each kernel on whole arrays, quantised per --seq-tile)")
      ->capture_default_str();
  cmd->add_option("--array", a.array, "with --compute systolic: MAC array rows x columns (default 16x16)");
  cmd->add_option("--weight-load", a.weight_load, "stream (weights load beside the compute) or setup (loaded before "
                                                  "each partition, their time added, as the DFModel code does)")
      ->capture_default_str();
  cmd->add_option("--partitions", a.partitions, "fix the partitions: kernels per partition in order, e.g. 3,4,2,2 (fused)");
  cmd->add_option("--top", a.top, "mappings to print")->capture_default_str();
  cmd->add_option("--out", a.out, "results JSON: every mapping with its partitions")->check(::tessera::cli::writable_path());
  cmd->add_option("--trace", a.trace, "Chrome trace (Perfetto) of the best mapping's iteration, a track per pipeline stage")->check(::tessera::cli::writable_path());
  CLI::Option* simulate = cmd->add_flag("--simulate", a.simulate, "run the best mapping on the simulator (needs system.npu and system.afi): "
                                          "its partitions on NPUs, TP all-reduces (streamed beside the compute, "
                                          "sequence tile by tile), PP hand-offs and (training) DP "
                                          "gradient all-reduces over the packet network");
  cmd->add_option("--sim-micro-batches", a.sim_micro_batches, "inference: micro-batches through the pipeline with "
                                                              "--simulate (training runs one iteration)")
      ->capture_default_str();
  cmd->add_flag("--sim-no-stream", a.sim_no_stream, "with --simulate: run each partition's TP all-reduces after all its "
                                                    "compute, instead of streaming them tile by tile (--seq-tile) "
                                                    "beside the next tile's compute as the model assumes")
      ->needs(simulate);
}

namespace {

// The best mapping on the simulator, against the model's (micro-batches + PP - 1) intervals.
Json simulate_mapping(const partition::LlmSpec& llm, const partition::SystemSpec& sys, const sim::Config& cfg,
                      const partition::Evaluation& e, std::uint64_t micro_batches, bool stream) {
  const sim::PipelineProgram prog = lower::lower_mapping(llm, sys, e, micro_batches, stream);
  const sim::PipelineResult r = sim::run_pipeline(cfg, prog);
  const double sim_s = double(r.cycles) / (cfg.clock_ghz * 1e9);
  const double model_s = lower::mapping_model_seconds(e, micro_batches);
  Cycles busy = 0;
  for (Cycles b : r.busy_cycles) busy = std::max(busy, b);
  if (llm.training) micro_batches = e.micro_batches;
  fmt::print("simulated {}: {} micro-batches {} in {:.3f} ms (the model: {:.3f} ms{}); simulated / model {:.3f}; "
             "busiest chip computing {:.3f} ms; {} messages, {:.1f} MB\n",
             describe(e), micro_batches, llm.training ? "(a training iteration)" : "", sim_s * 1e3, model_s * 1e3,
             llm.training ? "" : ", (micro-batches + PP - 1) x interval", sim_s / model_s,
             double(busy) / (cfg.clock_ghz * 1e9) * 1e3, r.messages, double(r.message_bytes) / 1e6);
  return {{"micro_batches", micro_batches}, {"cycles", r.cycles}, {"seconds", sim_s}, {"model_seconds", model_s},
          {"simulated_over_model", sim_s / model_s}, {"busy_cycles", r.busy_cycles}, {"messages", r.messages},
          {"message_bytes", r.message_bytes}, {"streamed", stream}};
}

}  // namespace


int parallel_cmd(ParallelArgs a) {
  const auto it = presets().find(a.model);
  if (it == presets().end()) throw Error(fmt::format("--model: unknown model '{}' (expected gpt3-175b, gpt3-1t or gpt3-1.3b)", a.model));
  partition::LlmSpec& llm = a.llm;
  llm.name = a.model;
  if (llm.layers == 0) llm.layers = it->second.layers;
  if (llm.hidden == 0) llm.hidden = it->second.hidden;
  if (llm.heads == 0) llm.heads = it->second.heads;
  if (llm.seq == 0) llm.seq = it->second.seq;
  if (llm.seq_tile > llm.seq)
    throw Error(fmt::format("--seq-tile {}: more than a sequence's {} tokens (--seq)", llm.seq_tile, llm.seq));
  if (!a.partitions.empty() && a.fusion == "kernel-by-kernel")
    throw Error("--partitions fixes fused partitions: it does not go with --fusion kernel-by-kernel");
  if (llm.global_batch && !llm.training) throw Error("--global-batch is the sequences of a training iteration: add --training");
  if (a.fusion != "search" && a.fusion != "fused" && a.fusion != "kernel-by-kernel")
    throw Error(fmt::format("--fusion: '{}' (expected search, fused or kernel-by-kernel)", a.fusion));
  set_compute_model(a);
  const sim::Config cfg = sim::load_config(a.config);
  const partition::SystemSpec sys = partition::system_spec(cfg);

  const std::vector<partition::Kernel> layer = partition::gpt_layer(llm);
  std::vector<partition::Evaluation> all;
  if (!a.mapping.empty() || !a.partitions.empty()) {
    partition::Mapping m;
    m.dims = a.mapping.empty() ? std::vector<partition::Strategy>(sys.dims.size(), partition::Strategy::TP)
                               : parse_mapping(a.mapping, sys.dims.size());
    m.sizes = a.partitions.empty() ? std::vector<std::size_t>{} : parse_sizes(a.partitions);
    for (bool fused : {false, true}) {
      if ((a.fusion == "fused" && !fused) || (a.fusion == "kernel-by-kernel" && fused)) continue;
      if (!m.sizes.empty() && !fused) continue;  // fixed partitions are fused ones
      m.fused = fused;
      all.push_back(partition::evaluate(llm, sys, m));
    }
    partition::rank(all);
  } else {
    for (partition::Evaluation& e : partition::search(llm, sys))
      if (a.fusion == "search" || e.mapping.fused == (a.fusion == "fused")) all.push_back(std::move(e));
  }
  fmt::print("{} ({} layers, hidden {}, {} heads, seq {}, micro-batch {}{}) on {}: {} chips, {:.1f} TFLOPS, "
             "{:.0f} MB SRAM, {:.0f} GB/s DRAM per chip\n",
             llm.name, llm.layers, llm.hidden, llm.heads, llm.seq, llm.micro_batch,
             llm.training ? fmt::format(", training, global batch {}", llm.global_batch) : "", sys.name, sys.chips(),
             sys.peak_flops / 1e12, sys.sram_bytes / 1e6, sys.dram_bytes_per_s / 1e9);
  fmt::print("  {:<40} {:>11} {:>12} {:>12} {:>12}\n", "mapping", "utilisation",
             llm.training ? "iteration ms" : "interval ms", "tokens/s", "layer ms");
  for (std::size_t i = 0; i < all.size() && i < a.top; ++i) {
    const partition::Evaluation& e = all[i];
    if (e.feasible)
      fmt::print("  {:<40} {:>11.3f} {:>12.3f} {:>12.0f} {:>12.4f}\n", describe(e), e.utilisation, e.interval_s * 1e3,
                 e.tokens_per_s, e.layer_s * 1e3);
    else
      fmt::print("  {:<40} does not fit: {}\n", describe(e), e.why);
  }
  Json simulated;
  if (!all.empty() && all.front().feasible) {
    print_partitions(all.front(), layer);
    if (!a.trace.empty()) write_trace(all.front(), a.trace);
    if (a.simulate) simulated = simulate_mapping(llm, sys, cfg, all.front(), a.sim_micro_batches, !a.sim_no_stream);
  }
  if (!a.out.empty()) {
    Json maps = Json::array();
    for (const partition::Evaluation& e : all) maps.push_back(to_json(e, layer));
    write_json(a.out, {{"model", {{"name", llm.name}, {"layers", llm.layers}, {"hidden", llm.hidden},
                                  {"heads", llm.heads}, {"seq", llm.seq}, {"micro_batch", llm.micro_batch},
                                  {"training", llm.training}, {"global_batch", llm.global_batch}}},
                       {"system", {{"name", sys.name}, {"chips", sys.chips()}, {"peak_flops", sys.peak_flops},
                                   {"sram_bytes", sys.sram_bytes}, {"dram_bytes_per_s", sys.dram_bytes_per_s}}},
                       {"mappings", maps},
                       {"simulated", simulated}});
  }
  if (all.empty() || !all.front().feasible) {
    // the reasons by how many mappings they rule out (the first mapping's alone misled: a TP
    // degree that does not divide the heads, where every other mapping ran out of SRAM)
    std::map<std::string, std::size_t> why;
    for (const partition::Evaluation& e : all) ++why[e.why];
    std::vector<std::pair<std::size_t, std::string>> by_count;
    for (const auto& [reason, n] : why) by_count.push_back({n, reason});
    std::stable_sort(by_count.begin(), by_count.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    std::string list;
    for (std::size_t i = 0; i < by_count.size() && i < 3; ++i)
      list += fmt::format("{}{} of {}: {}", i ? "; " : ": ", by_count[i].first, all.size(), by_count[i].second);
    if (by_count.size() > 3) list += fmt::format("; and {} other reasons (the table above)", by_count.size() - 3);
    throw Error(fmt::format("no mapping of {} fits {}{}", llm.name, sys.name, list));
  }
  return 0;
}

}  // namespace tessera::cli
