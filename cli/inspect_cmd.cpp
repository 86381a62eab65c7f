#include "cli/inspect_cmd.h"
#include "cli/validators.h"

#include <fmt/format.h>

#include "cli/compile_cmd.h"
#include "compiler/compile.h"
#include "compiler/ir/onnx_fold.h"
#include "compiler/ir/onnx_import.h"
#include "sim/common/error.h"
#include "sim/config/config.h"

namespace tessera::cli {

namespace {

bool is_onnx(const std::string& s) { return s.size() > 5 && s.compare(s.size() - 5, 5, ".onnx") == 0; }

// The ONNX file itself: opset, nodes per op type, inputs (symbolic dimensions by name).
Json onnx_part(const std::string& path) {
  const ir::OnnxSummary s = ir::summarize_onnx(path);
  fmt::print("{}: ONNX opset {}, {} nodes, {} initializers\n", path, s.opset, s.nodes, s.initializers);
  Json ops = Json::object();
  std::string line;
  for (const auto& [op, n] : s.op_counts) {
    ops[op] = n;
    line += fmt::format("{}{} {}", line.empty() ? "" : ", ", op, n);
  }
  fmt::print("  nodes by op type: {}\n", line);
  Json inputs = Json::array();
  for (const auto& [name, dims] : s.inputs) {
    std::string d;
    for (const auto& x : dims) d += (d.empty() ? "" : ",") + x;
    fmt::print("  input '{}' [{}]\n", name, d);
    inputs.push_back({{"name", name}, {"dims", dims}});
  }
  return {{"opset", s.opset}, {"nodes", s.nodes}, {"initializers", s.initializers}, {"op_counts", ops},
          {"inputs", inputs}};
}

// The imported workload: operators by kind, parameters, FLOPs, and optionally every operator.
Json workload_part(const ir::Workload& w, bool list) {
  std::map<std::string, std::int64_t> kinds;
  double flops = 0;
  Json ops = Json::array();
  for (const auto& op : w.ops()) {
    const std::string k = op.expr.kind == ir::ExprKind::Elementwise
                              ? fmt::format("elementwise {}", ir::fn_name(op.expr.fn))
                              : ir::kind_name(op.expr.kind);
    kinds[k]++;
    flops += static_cast<double>(op.flops());
    Json in = Json::array();
    for (const auto& a : op.expr.inputs) in.push_back({{"tensor", a.tensor}, {"shape", w.tensor(a.tensor).shape}});
    ops.push_back({{"name", op.name}, {"kind", k}, {"expr", op.expr.text}, {"flops", op.flops()},
                   {"output_shape", w.tensor(op.expr.output.tensor).shape}, {"inputs", in}});
    if (list)
      fmt::print("  {:<40} {:<22} out {:<20} {}\n", op.name, k, ir::shape_str(w.tensor(op.expr.output.tensor).shape),
                 op.expr.text);
  }
  fmt::print("imports: {} operators, {:.3f} M parameters ({:.1f} MiB fp16), {:.3f} GFLOP per run\n", w.ops().size(),
             static_cast<double>(w.parameter_count()) / 1e6, static_cast<double>(w.weight_bytes()) / (1 << 20),
             flops / 1e9);
  std::string line;
  Json kj = Json::object();
  for (const auto& [k, n] : kinds) {
    kj[k] = n;
    line += fmt::format("{}{} {}", line.empty() ? "" : ", ", k, n);
  }
  fmt::print("  operators by kind: {}\n", line);
  return {{"operators", w.ops().size()}, {"parameters", w.parameter_count()}, {"weight_bytes", w.weight_bytes()},
          {"flops", flops}, {"kinds", kj}, {"ops", ops}};
}

}  // namespace

void add_inspect_options(CLI::App* cmd, InspectArgs& a) {
  cmd->add_option("model", a.model, "built-in model name, workload JSON or .onnx file")->required();
  cmd->add_option("--batch", a.batch, "batch size (built-in models; an ONNX model's symbolic batch dimension)")
      ->check(::tessera::cli::positive())->capture_default_str();
  cmd->add_option("--seq", a.seq, "sequence length (0: the model's default)")->check(::tessera::cli::non_negative());
  cmd->add_option("--layers", a.layers, "layers of a built-in model (0: its default)")->check(::tessera::cli::non_negative());
  cmd->add_option("--dim", a.dims, "NAME=VALUE: a symbolic input dimension of an ONNX model (repeatable)");
  cmd->add_flag("--operators", a.operators, "list every operator with its output shape and expression");
  cmd->add_option("--out", a.out, "write the report as JSON");
}

int inspect_cmd(const InspectArgs& a) {
  Json report = {{"model", a.model}};
  if (is_onnx(a.model)) report["onnx"] = onnx_part(a.model);
  ir::ModelOptions mo;
  mo.batch = a.batch;
  mo.seq_len = a.seq;
  mo.layers = a.layers;
  mo.dims = parse_dims(a.dims);
  int status = 0;
  try {
    const ir::Workload w = compiler::load_workload(a.model, mo);
    report["supported"] = true;
    report["workload"] = workload_part(w, a.operators);
  } catch (const Error& e) {
    report["supported"] = false;
    report["problems"] = e.what();
    fmt::print("does not import:\n{}\n", e.what());
    status = 1;
  }
  if (!a.out.empty()) write_json(a.out, report);
  return status;
}

}  // namespace tessera::cli
