// Hostile input: every parser (configs, programs, workloads, ONNX files) is fed mutated versions
// of the shipped files -- fields dropped, duplicated, retyped, set to out-of-range or huge numbers,
// text truncated and bytes flipped, ONNX initializers of the wrong size and graphs with cycles --
// and each case must end in a valid result or a tessera::Error (a named error): never another
// exception, a crash or a hang. The mutations are drawn from a fixed seed, so a failure repeats.
#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <unistd.h>

#include "compiler/ir/onnx_import.h"
#include "compiler/ir/workload_json.h"
#include "sim/common/error.h"
#include "sim/config/config.h"
#include "sim/program/program.h"

using namespace tessera;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Outcome of one case: fine (parsed or a named error), or what went wrong.
struct Tally {
  int cases = 0, parsed = 0, named = 0;
  std::vector<std::string> bad;  // other exceptions, with the case
  double slowest_s = 0;
  template <class F>
  void run(const std::string& what, F&& f) {
    ++cases;
    const auto t0 = std::chrono::steady_clock::now();
    try {
      f();
      ++parsed;
    } catch (const Error&) {
      ++named;
    } catch (const std::exception& e) {
      if (bad.size() < 20) bad.push_back(what + ": " + typeid(e).name() + ": " + e.what());
    }
    slowest_s = std::max(slowest_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
};

// One random structural mutation of a JSON document: a random node (object member or array
// element) is dropped, duplicated or replaced by a value of another type or an extreme number.
class JsonMutator {
 public:
  explicit JsonMutator(std::uint64_t seed) : rng_(seed) {}

  Json mutate(Json doc) {
    std::vector<Json*> nodes;
    collect(doc, nodes);
    Json* target = nodes[pick(nodes.size())];
    static const Json kValues[] = {Json(), Json(-1), Json(0), Json(1), Json(2147483648LL), Json(1e18), Json(-1e300),
                                   Json(9223372036854775807LL), Json(0.5), Json("x"), Json(""), Json(true),
                                   Json::array(), Json::object(), Json::array({1, 2, 3}), Json(1e308)};
    switch (pick(4)) {
      case 0: *target = kValues[pick(std::size(kValues))]; break;  // retype / out of range
      case 1:                                                       // drop a member or element
        if (target->is_object() && !target->empty()) {
          auto it = target->begin();
          std::advance(it, static_cast<long>(pick(target->size())));
          target->erase(it.key());
        } else if (target->is_array() && !target->empty()) {
          target->erase(pick(target->size()));
        } else {
          *target = Json();
        }
        break;
      case 2:  // duplicate an element, or add an unknown key
        if (target->is_array() && !target->empty()) target->push_back((*target)[pick(target->size())]);
        else if (target->is_object()) (*target)["unexpected_key"] = 1;
        else *target = Json::array({*target, *target});
        break;
      default:  // scale a number
        if (target->is_number()) *target = target->get<double>() * (pick(2) ? -1.0 : 1e12);
        else *target = kValues[pick(std::size(kValues))];
    }
    return doc;
  }

  // Text-level damage: truncation or flipped bytes.
  std::string damage(std::string text) {
    if (text.empty()) return text;
    if (pick(2)) return text.substr(0, pick(text.size()));
    for (int k = 0; k < 1 + static_cast<int>(pick(4)); ++k) text[pick(text.size())] ^= static_cast<char>(1 + pick(255));
    return text;
  }

  std::size_t pick(std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_); }

 private:
  void collect(Json& j, std::vector<Json*>& out) {
    out.push_back(&j);
    if (j.is_object() || j.is_array())
      for (auto& c : j) collect(c, out);
  }
  std::mt19937_64 rng_;
};

void require_clean(const Tally& t, const char* what) {
  std::printf("mutation %s: %d cases, %d parsed, %d named errors, slowest %.3f s\n", what, t.cases, t.parsed, t.named,
              t.slowest_s);
  INFO(what << ": " << t.cases << " cases, " << t.parsed << " parsed, " << t.named << " named errors, slowest "
            << t.slowest_s << " s");
  for (const auto& b : t.bad) INFO(b);
  CHECK(t.bad.empty());
  CHECK(t.parsed + t.named == t.cases);
  CHECK(t.slowest_s < 10.0);  // no case hangs
}

}  // namespace

TEST_CASE("mutated configs, programs and workloads end in a valid parse or a named error", "[mutation]") {
  const fs::path src = TESSERA_SOURCE_DIR;
  JsonMutator m(20261123);
  Tally configs, programs, workloads;
  std::vector<std::pair<std::string, Json>> cfgs;
  for (const char* c : {"ipu-mk2", "mesh-10x12", "mesh-8x8", "vipu-2"})
    cfgs.push_back({c, Json::parse(slurp(src / "configs" / (std::string(c) + ".json")))});
  for (int i = 0; i < 2000; ++i) {
    const auto& [name, doc] = cfgs[static_cast<std::size_t>(i) % cfgs.size()];
    configs.run(name + " #" + std::to_string(i), [&] { sim::parse_config(m.mutate(doc), name); });
    const std::string text = m.damage(doc.dump());
    configs.run(name + " text #" + std::to_string(i), [&] {
      const Json j = Json::parse(text, nullptr, false);
      if (j.is_discarded()) throw Error("not JSON");  // what load_config reports for such a file
      sim::parse_config(j, name);
    });
  }
  const sim::Config ipu = sim::load_config((src / "configs" / "ipu-mk2.json").string());
  std::vector<std::pair<std::string, Json>> progs;
  for (const char* p : {"example-small", "overlap", "ring-shift-ipu"})
    progs.push_back({p, Json::parse(slurp(src / "workloads" / "programs" / (std::string(p) + ".json")))});
  for (int i = 0; i < 3000; ++i) {
    const auto& [name, doc] = progs[static_cast<std::size_t>(i) % progs.size()];
    programs.run(name + " #" + std::to_string(i), [&] { sim::parse_program(m.mutate(doc), name, ipu); });
  }
  const Json mlp = Json::parse(slurp(src / "workloads" / "tiny-mlp.json"));
  for (int i = 0; i < 2000; ++i)
    workloads.run("tiny-mlp #" + std::to_string(i), [&] { ir::parse_workload_json(m.mutate(mlp), "tiny-mlp"); });
  require_clean(configs, "configs");
  require_clean(programs, "programs");
  require_clean(workloads, "workloads");
  CHECK(configs.named > 0);
  CHECK(programs.named > 0);
  CHECK(workloads.named > 0);
}

TEST_CASE("mutated ONNX files end in a workload or a named error", "[mutation][onnx]") {
  const fs::path dir = fs::temp_directory_path() / ("tessera-mutation-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string cmd = "/usr/bin/python3 " TESSERA_SOURCE_DIR "/scripts/make_onnx_models.py '" + dir.string() + "'";
  REQUIRE(std::system(cmd.c_str()) == 0);
  std::vector<std::string> texts;
  for (const char* n : {"mlp", "convnet", "attention", "ops", "folding", "dataops", "depthwise"})
    texts.push_back(slurp(dir / (std::string(n) + ".onnx")));
  JsonMutator m(11);
  Tally t;
  const fs::path file = dir / "case.onnx";
  auto write = [&](const std::string& bytes) {
    std::ofstream f(file, std::ios::binary);
    f << bytes;
  };
  for (int i = 0; i < 3200; ++i) {
    const std::string& base = texts[static_cast<std::size_t>(i) % texts.size()];
    std::string bytes;
    if (i % 4 == 0) {
      bytes = m.damage(base);  // truncated or flipped protobuf
    } else {
      onnx::ModelProto model;
      REQUIRE(model.ParseFromString(base));
      auto* g = model.mutable_graph();
      switch (i % 4) {
        case 1:  // an initializer whose data does not match its dims
          if (g->initializer_size() > 0) {
            auto* init = g->mutable_initializer(static_cast<int>(m.pick(static_cast<std::size_t>(g->initializer_size()))));
            if (init->dims_size() > 0) init->set_dims(0, init->dims(0) * static_cast<std::int64_t>(1 + m.pick(3)) + 1);
            else init->add_dims(7);
          }
          break;
        case 2: {  // a cycle: a node reads its own output, or a later node's
          auto* n = g->mutable_node(static_cast<int>(m.pick(static_cast<std::size_t>(g->node_size()))));
          const auto& later = g->node(static_cast<int>(m.pick(static_cast<std::size_t>(g->node_size()))));
          if (n->input_size() > 0 && later.output_size() > 0) n->set_input(0, later.output(0));
          break;
        }
        default: {  // an attribute or input dimension set to an extreme value
          auto* n = g->mutable_node(static_cast<int>(m.pick(static_cast<std::size_t>(g->node_size()))));
          if (n->attribute_size() > 0) {
            auto* a = n->mutable_attribute(static_cast<int>(m.pick(static_cast<std::size_t>(n->attribute_size()))));
            const std::int64_t v[] = {0, -1, -1000000000000LL, 1000000000000LL, 3};
            a->set_i(v[m.pick(5)]);
            for (int k = 0; k < a->ints_size(); ++k) a->set_ints(k, v[m.pick(5)]);
          } else if (g->input_size() > 0) {
            auto* sh = g->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
            if (sh->dim_size() > 0) sh->mutable_dim(0)->set_dim_value(m.pick(2) ? 0 : 1000000000000LL);
          }
        }
      }
      bytes = model.SerializeAsString();
    }
    write(bytes);
    t.run("onnx #" + std::to_string(i), [&] { ir::import_onnx(file.string()); });
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
  require_clean(t, "onnx");
  CHECK(t.named > 0);
}
