// The compact lowered program: written out as program JSON (docs/program.md), or turned into the
// simulator's Program directly (no JSON on the way for large models).
#include <fmt/format.h>

#include <cmath>
#include <limits>

#include <fstream>
#include <ostream>
#include <sstream>

#include "compiler/lower/lower.h"
#include "sim/common/error.h"
#include "sim/program/program_file.h"

namespace tessera::lower {

std::uint64_t Lowered::items() const {
  std::uint64_t n = 0;
  for (const auto& c : cores) n += c.size();
  return n;
}

namespace {

std::string str(const std::string& s) { return Json(s).dump(); }

template <class T>
std::string list(const std::vector<T>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{}", i ? "," : "", v[i]);
  return s + "]";
}

std::string bools(const std::vector<bool>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += fmt::format("{}{}", i ? "," : "", v[i] ? "true" : "false");
  return s + "]";
}

void item_json(const Lowered& p, const LItem& it, std::string& s) {
  const auto tag = [&] { return it.tag >= 0 ? fmt::format(",\"tag\":{}", it.tag) : std::string(); };
  switch (it.k) {
    case K::Alloc:
      s += fmt::format("{{\"op\":\"alloc\",\"buffer\":{},\"bytes\":{}", str(p.names[it.buf]), it.bytes);
      if (it.aux >= 0) {
        const auto& v = p.views[static_cast<std::size_t>(it.aux)];
        s += fmt::format(",\"view\":{{\"tensor\":{},\"origin\":{},\"extent\":{},\"cyclic\":{}}}", str(v.tensor),
                         list(v.origin), list(v.extent), bools(v.cyclic));
      }
      s += "}";
      break;
    case K::Free: s += fmt::format("{{\"op\":\"free\",\"buffer\":{}}}", str(p.names[it.buf])); break;
    case K::Init: s += fmt::format("{{\"op\":\"init\",\"buffer\":{}}}", str(p.names[it.buf])); break;
    case K::Compute: {
      const CompItem& c = p.comps[static_cast<std::size_t>(it.aux)];
      s += fmt::format("{{\"op\":\"compute\",\"kind\":\"{}\"", c.kind);
      if (c.kind == "matmul") s += fmt::format(",\"batch\":{},\"m\":{},\"k\":{},\"n\":{}", c.batch, c.m, c.k, c.n);
      else if (c.kind == "reduce_sum" || c.kind == "reduce_max" || c.kind == "softmax" || c.kind == "layernorm")
        s += fmt::format(",\"rows\":{},\"cols\":{}", c.rows, c.cols);
      else s += fmt::format(",\"elements\":{}", c.elements);
      s += ",\"inputs\":[";
      for (std::size_t i = 0; i < c.ins.size(); ++i) s += (i ? "," : "") + str(p.names[static_cast<std::size_t>(c.ins[i])]);
      s += fmt::format("],\"output\":{}{}", str(p.names[static_cast<std::size_t>(c.out)]), tag());
      if (c.expr >= 0) {
        s += fmt::format(",\"eval\":{{\"expr\":{},\"ranges\":[", c.expr);
        for (std::size_t i = 0; i < c.ranges.size(); ++i) s += fmt::format("{}[{},{}]", i ? "," : "", c.ranges[i].first, c.ranges[i].second);
        s += "]}";
      }
      s += "}";
      break;
    }
    case K::Send:
    case K::Recv:
      s += fmt::format("{{\"op\":\"{}\",\"peer\":{},\"buffer\":{},\"bytes\":{}{}", it.k == K::Send ? "send" : "recv",
                       it.arg, str(p.names[it.buf]), it.bytes, tag());
      if (it.aux >= 0) {
        const auto& b = p.boxes[static_cast<std::size_t>(it.aux)];
        s += fmt::format(",\"box\":{{\"origin\":{},\"extent\":{}}}", list(b.origin), list(b.extent));
      }
      s += "}";
      break;
    case K::Sync: s += fmt::format("{{\"op\":\"sync\",\"group\":{}{}}}", str(p.groups[it.arg].first), tag()); break;
    case K::Load:
    case K::Store:
      s += fmt::format("{{\"op\":\"{}\",\"tensor\":{},\"buffer\":{},\"bytes\":{}{}}}", it.k == K::Load ? "load" : "store",
                       str(p.offchip[it.arg].name), str(p.names[it.buf]), it.bytes, tag());
      break;
    case K::Relayout: s += fmt::format("{{\"op\":\"relayout\",\"id\":{}}}", it.arg); break;
    case K::Begin: s += fmt::format("{{\"op\":\"repeat\",\"count\":{},\"body\":[", it.arg); break;
    case K::End: s += "]}"; break;
  }
}

void layouts_json(const Lowered& p, std::ostream& out) {
  out << "\"layouts\":[";
  std::string s;
  for (std::size_t i = 0; i < p.layouts.size(); ++i) {
    const sim::Layout& l = p.layouts[i];
    const std::size_t n = 2 * l.rank();
    s = fmt::format("{}\n{{\"shape\":{},\"boxes\":[", i ? "," : "", list(l.shape));
    for (std::size_t k = 0; k < l.cores.size(); ++k) {
      s += fmt::format("{}[{}", k ? "," : "", l.cores[k]);
      for (std::size_t d = 0; d < n; ++d) s += fmt::format(",{}", l.boxes[k * n + d]);
      s += "]";
    }
    out << s << "]}";
  }
  out << "],\n\"relayouts\":[";
  for (std::size_t i = 0; i < p.relayouts.size(); ++i) {
    s = fmt::format("{}\n{{\"moves\":[", i ? "," : "");
    const auto& moves = p.relayouts[i].moves;
    for (std::size_t k = 0; k < moves.size(); ++k) {
      const sim::Move& m = moves[k];
      s += fmt::format("{}{{\"from\":{},\"to\":{},\"source\":{},\"target\":{},\"tensor\":{},\"element_bytes\":{}",
                       k ? "," : "", m.from, m.to, str(m.source), str(m.target), str(m.tensor), m.element_bytes);
      if (m.tag != sim::kNoTag) s += fmt::format(",\"tag\":{}", m.tag);
      s += "}";
    }
    out << s << "]}";
  }
  out << "],\n";
}

}  // namespace

namespace {

// One core's entry, {"core": c, "items": [...]}, as JSON text.
void core_text(const Lowered& p, std::size_t c, std::string& s) {
  s += fmt::format("{{\"core\":{},\"items\":[", c);
  bool first = true;
  for (const auto& it : p.cores[c]) {
    if (!first && it.k != K::End) s += ",";
    first = it.k == K::Begin;
    item_json(p, it, s);
  }
  s += "]}";
}

}  // namespace

void Lowered::write(const std::string& path) const {
  const sim::ProgramFormat f = sim::program_format_for(path);
  if (f == sim::ProgramFormat::Json) {
    std::ofstream out(path);
    if (!out) throw Error(fmt::format("{}: cannot write file", path));
    write_json(out);
    if (!out) throw Error(fmt::format("{}: write failed", path));
    return;
  }
  // Binary: the top level as a document, then each core's entry in turn.
  std::ostringstream top;
  write_top(top);
  top << "\"cores\":[]}";
  Json header = Json::parse(top.str());
  header.erase("cores");
  std::vector<std::uint32_t> ids(cores.size());
  for (std::size_t c = 0; c < cores.size(); ++c) ids[c] = static_cast<std::uint32_t>(c);
  sim::ProgramWriter w(path, f);
  w.header(header, ids);
  std::string s;
  for (std::size_t c = 0; c < cores.size(); ++c) {
    s.clear();
    core_text(*this, c, s);
    w.core(Json::parse(s));
  }
  w.close();
}

void Lowered::write_json(std::ostream& out) const {
  write_top(out);
  out << "\"cores\":[\n";
  std::string s;
  for (std::size_t c = 0; c < cores.size(); ++c) {
    s.clear();
    if (c) s += ",\n";
    core_text(*this, c, s);
    out << s;
  }
  out << "\n]}\n";
}

// Everything before "cores", each key followed by a comma.
void Lowered::write_top(std::ostream& out) const {
  out << "{\"format\":\"tessera-program\",\"version\":1,\"name\":" << str(name) << ",\n";
  if (groups.size() > 1) {
    out << "\"groups\":{";
    for (std::size_t g = 1; g < groups.size(); ++g) out << (g > 1 ? "," : "") << str(groups[g].first) << ":" << list(groups[g].second);
    out << "},\n";
  }
  out << "\"offchip_tensors\":[";
  for (std::size_t i = 0; i < offchip.size(); ++i)
    out << (i ? "," : "") << fmt::format("{{\"name\":{},\"chip\":{},\"bytes\":{}}}", str(offchip[i].name), offchip[i].chip, offchip[i].bytes);
  out << "],\n\"tags\":[";
  for (std::size_t i = 0; i < tags.size(); ++i)
    out << (i ? "," : "") << fmt::format("{{\"op\":{},\"phase\":\"{}\"}}", str(tags[i].op), tags[i].phase);
  out << "],\n";
  layouts_json(*this, out);
  out << "\"exprs\":[";
  for (std::size_t i = 0; i < exprs.size(); ++i) out << (i ? "," : "") << str(exprs[i]);
  out << "],\n";
  if (functional) {
    out << "\"data_tensors\":[";
    for (std::size_t i = 0; i < data_tensors.size(); ++i)
    {
      out << (i ? "," : "") << fmt::format("{{\"name\":{},\"shape\":{}", str(data_tensors[i].first), list(data_tensors[i].second));
      auto v = data_values.find(data_tensors[i].first);
      if (v != data_values.end()) {
        out << ",\"values\":[";
        // JSON has no infinity: an attention mask's -inf is written as the lowest float, which
        // behaves the same in x + mask and in softmax
        for (std::size_t k = 0; k < v->second->size(); ++k) {
          const float x = (*v->second)[k];
          const float w = std::isinf(x) ? std::copysign(std::numeric_limits<float>::max(), x) : x;
          out << (k ? "," : "") << fmt::format("{}", w);
        }
        out << "]";
      }
      out << "}";
    }
    out << "],\n";
  }
}

Json Lowered::json() const {
  std::ostringstream os;
  write_json(os);
  return Json::parse(os.str());
}

sim::Program Lowered::program(const sim::Config& cfg) const {
  if (functional) throw Error("a functional program goes through JSON (Lowered::json) so the simulator validates it");
  sim::Program p;
  p.name = name;
  for (const auto& [n, members] : groups)
    p.groups.push_back(sim::Group{n, members, !members.empty() && cfg.chip_of(members.front()) != cfg.chip_of(members.back())});
  for (const auto& t : offchip) p.tensors.push_back(sim::OffchipTensor{t.name, t.chip, t.bytes});
  p.tags = tags;
  p.layouts = layouts;
  p.relayouts = relayouts;
  p.relayout_runs.assign(relayouts.size(), 0);
  for (std::size_t c = 0; c < cores.size(); ++c) {
    sim::CoreProgram cp;
    cp.core = static_cast<std::uint32_t>(c);
    cp.peak_scratchpad_bytes = peak_bytes[c];
    // Diagnostics name the operator and phase through the item's tag (sim::item_location).
    cp.where_root = "compiled program";
    cp.where.push_back(sim::ItemPlace{});
    std::vector<std::size_t> open;
    std::vector<std::uint64_t> mult{1};
    for (const auto& it : cores[c]) {
      sim::Item x;
      x.tag = it.tag >= 0 ? static_cast<std::uint32_t>(it.tag) : sim::kNoTag;
      x.where = 0;
      switch (it.k) {
        case K::Alloc: case K::Free: case K::Init: continue;
        case K::Compute: {
          const CompItem& ci = comps[static_cast<std::size_t>(it.aux)];
          x.op = sim::Op::Compute;
          x.kind = *sim::parse_compute_kind(ci.kind);
          x.value = ci.cycles;
          break;
        }
        case K::Send: x.op = sim::Op::Send; x.arg = it.arg; x.value = static_cast<std::uint64_t>(it.bytes); break;
        case K::Recv: x.op = sim::Op::Recv; x.arg = it.arg; x.value = static_cast<std::uint64_t>(it.bytes); break;
        case K::Sync: x.op = sim::Op::Sync; x.arg = it.arg; break;
        case K::Relayout: x.op = sim::Op::Relayout; x.arg = it.arg; p.relayout_runs[it.arg] += mult.back(); break;
        case K::Load: x.op = sim::Op::Load; x.arg = it.arg; x.value = static_cast<std::uint64_t>(it.bytes); break;
        case K::Store: x.op = sim::Op::Store; x.arg = it.arg; x.value = static_cast<std::uint64_t>(it.bytes); break;
        case K::Begin:
          x.op = sim::Op::LoopBegin;
          x.arg = it.arg;
          open.push_back(cp.code.size());
          mult.push_back(mult.back() * it.arg);
          cp.code.push_back(x);
          continue;
        case K::End:
          x.op = sim::Op::LoopEnd;
          x.arg = static_cast<std::uint32_t>(open.back());
          open.pop_back();
          mult.pop_back();
          cp.code.push_back(x);
          continue;
      }
      cp.work_items += mult.back();
      cp.code.push_back(x);
    }
    p.cores.push_back(std::move(cp));
  }
  return p;
}

}  // namespace tessera::lower
