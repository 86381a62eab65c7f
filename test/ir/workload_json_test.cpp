// The JSON workload format: the example file, round trips (hand-written and built-in models),
// and one error per bad input, each naming the file and the field.
#include <catch2/catch.hpp>

#include "compiler/ir/models.h"
#include "compiler/ir/workload_json.h"
#include "sim/common/error.h"

using namespace tessera;
using namespace tessera::ir;
using Catch::Contains;
using Shape = std::vector<std::int64_t>;

namespace {

Json tiny() {
  return Json::parse(R"J({
    "format": "tessera-workload", "version": 1, "name": "tiny-mlp",
    "tensors": [{"name": "X", "shape": [64, 32], "role": "input", "dtype": "fp16"},
                {"name": "W1", "shape": [32, 16], "role": "weight"}],
    "ops": [{"name": "fc1", "expr": "H[m,n] += X[m,k] * W1[k,n]"},
            {"name": "act", "expr": "Y[m,n] = relu(H[m,n])"}],
    "outputs": ["Y"]})J");
}

std::string error_of(const Json& j) {
  try {
    parse_workload_json(j, "tiny.json");
  } catch (const ConfigError& e) {
    return e.what();
  } catch (const Error& e) {
    return std::string("(not a ConfigError) ") + e.what();
  }
  return "(no error)";
}

// Same tensors (name, shape, role, dtype, output flag, order) and operators (name, text, extents).
void check_same(const Workload& a, const Workload& b) {
  CHECK(a.name == b.name);
  REQUIRE(a.tensors().size() == b.tensors().size());
  for (std::size_t i = 0; i < a.tensors().size(); ++i) {
    const Tensor& x = a.tensors()[i];
    const Tensor& y = b.tensors()[i];
    INFO(x.name);
    CHECK(x.name == y.name);
    CHECK(x.shape == y.shape);
    CHECK(x.role == y.role);
    CHECK(x.dtype == y.dtype);
    CHECK(x.output == y.output);
  }
  REQUIRE(a.ops().size() == b.ops().size());
  for (std::size_t i = 0; i < a.ops().size(); ++i) {
    INFO(a.ops()[i].name);
    CHECK(a.ops()[i].name == b.ops()[i].name);
    CHECK(a.ops()[i].expr.text == b.ops()[i].expr.text);
    CHECK(a.ops()[i].extent == b.ops()[i].extent);
  }
  CHECK(a.parameter_count() == b.parameter_count());
}

}  // namespace

TEST_CASE("workload json: the tiny example parses", "[workload-json]") {
  Workload w = parse_workload_json(tiny(), "tiny.json");
  CHECK(w.name == "tiny-mlp");
  REQUIRE(w.tensors().size() == 4);
  CHECK(w.tensor("H").shape == Shape{64, 16});
  CHECK(w.tensor("H").role == TensorRole::Activation);
  CHECK_FALSE(w.tensor("H").output);
  CHECK(w.tensor("Y").output);
  CHECK(w.tensor("W1").dtype == Dtype::Fp16);  // default dtype
  CHECK(w.parameter_count() == 32 * 16);
  REQUIRE(w.ops().size() == 2);
  CHECK(w.ops()[0].extent == std::map<std::string, std::int64_t>{{"k", 32}, {"m", 64}, {"n", 16}});
  CHECK(w.ops()[0].flops() == 2 * 64 * 32 * 16);
  CHECK(w.producer("Y") == 1);

  Json j = tiny();
  j.erase("name");
  j.erase("outputs");  // unread activations become outputs anyway
  Workload d = parse_workload_json(j, "dir/sub/my-net.json");
  CHECK(d.name == "my-net");
  CHECK(d.tensor("Y").output);
  j["tensors"][1]["dtype"] = "int8";
  CHECK(parse_workload_json(j, "x").tensor("W1").dtype == Dtype::Int8);
}

TEST_CASE("workload json: the example file in workloads/", "[workload-json]") {
  Workload w = load_workload_json(std::string(TESSERA_SOURCE_DIR) + "/workloads/tiny-mlp.json");
  CHECK(w.name == "tiny-mlp");
  CHECK(w.ops().size() == 4);
  CHECK(w.parameter_count() == 32 * 16 + 16 + 16 * 8);
  CHECK(w.tensor("Y").shape == Shape{64, 8});
  CHECK(w.tensor("Y").output);
  CHECK_THROWS_WITH(load_workload_json("/nonexistent/w.json"), Contains("/nonexistent/w.json: cannot open file"));
}

TEST_CASE("workload json: round trips", "[workload-json]") {
  Workload w = parse_workload_json(tiny(), "tiny.json");
  Json j = workload_to_json(w);
  CHECK(j["format"] == "tessera-workload");
  CHECK(j["version"] == 1);
  CHECK(j["tensors"].size() == 4);  // activations are written too
  CHECK(j["tensors"][2] == Json::parse(R"J({"name": "H", "shape": [64, 16], "role": "activation", "dtype": "fp16"})J"));
  CHECK(j["ops"][1] == Json::parse(R"J({"name": "act", "expr": "Y[m,n] = relu(H[m,n])"})J"));
  CHECK(j["outputs"] == Json::parse(R"J(["Y"])J"));
  check_same(w, parse_workload_json(j, "round trip"));
  // Through text, too.
  check_same(w, parse_workload_json(Json::parse(j.dump(2)), "round trip"));

  // An intermediate activation explicitly marked as an output stays one.
  Json k = tiny();
  k["outputs"] = {"H", "Y"};
  Workload wk = parse_workload_json(k, "k.json");
  CHECK(wk.tensor("H").output);
  check_same(wk, parse_workload_json(workload_to_json(wk), "k2"));

  // Conv outputs (declared shapes), padded max pool (extents), int8/fp32 dtypes.
  Json c = Json::parse(R"J({
    "format": "tessera-workload", "version": 1, "name": "conv",
    "tensors": [{"name": "I", "shape": [1, 3, 32, 32], "role": "input", "dtype": "int8"},
                {"name": "W", "shape": [8, 3, 3, 3], "role": "weight", "dtype": "int8"},
                {"name": "O", "shape": [1, 8, 16, 16], "role": "activation", "dtype": "fp32"},
                {"name": "P", "shape": [1, 8, 8, 8], "role": "activation"}],
    "ops": [{"name": "conv", "expr": "O[n,f,y,x] += I[n,c,2*y+ky-1,2*x+kx-1] * W[f,c,ky,kx]"},
            {"name": "pool", "expr": "P[n,c,y,x] max= O[n,c,2*y+ky-1,2*x+kx-1]", "extents": {"ky": 3, "kx": 3}}]})J");
  Workload wc = parse_workload_json(c, "conv.json");
  CHECK(wc.tensor("O").dtype == Dtype::Fp32);
  CHECK(wc.ops()[0].extent.at("y") == 16);
  CHECK(wc.ops()[1].extent.at("kx") == 3);
  Json jc = workload_to_json(wc);
  CHECK(jc["ops"][1]["extents"] == Json::parse(R"J({"kx": 3, "ky": 3})J"));
  CHECK_FALSE(jc["ops"][0].contains("extents"));  // every conv axis is fixed by a tensor
  check_same(wc, parse_workload_json(jc, "conv2"));

  // Built-in models.
  for (const char* name : {"resnet-18", "vit-base", "llama2-7b", "retnet-1.3b", "nerf"}) {
    INFO(name);
    Workload m = build_model(name, {});
    check_same(m, parse_workload_json(workload_to_json(m), name));
  }
}

TEST_CASE("workload json: each bad input names the file and the field", "[workload-json]") {
  auto with = [](auto edit) {
    Json j = tiny();
    edit(j);
    return error_of(j);
  };
  // Top level.
  CHECK_THAT(error_of(Json::array()), Contains("tiny.json: top level: expected an object"));
  CHECK_THAT(with([](Json& j) { j["format"] = "tessera-program"; }),
             Contains("tiny.json: format: expected \"tessera-workload\", got \"tessera-program\""));
  CHECK_THAT(with([](Json& j) { j.erase("format"); }), Contains("tiny.json: format: required field is missing"));
  CHECK_THAT(with([](Json& j) { j["version"] = 2; }), Contains("tiny.json: version: unsupported version 2"));
  CHECK_THAT(with([](Json& j) { j["version"] = "1"; }), Contains("tiny.json: version: expected a non-negative integer"));
  CHECK_THAT(with([](Json& j) { j["name"] = 3; }), Contains("tiny.json: name: expected a string"));
  CHECK_THAT(with([](Json& j) { j["op"] = Json::array(); }), Contains("tiny.json: unknown field(s) op"));
  CHECK_THAT(with([](Json& j) { j["tensors"] = Json::object(); }), Contains("tiny.json: tensors: expected an array of tensors"));
  CHECK_THAT(with([](Json& j) { j.erase("tensors"); }), Contains("tiny.json: tensors: required field is missing"));
  CHECK_THAT(with([](Json& j) { j["ops"] = Json::array(); }), Contains("tiny.json: ops: a workload needs at least one operator"));
  CHECK_THAT(with([](Json& j) { j["ops"] = "fc1"; }), Contains("tiny.json: ops: expected an array of operators"));

  // Tensors.
  CHECK_THAT(with([](Json& j) { j["tensors"][1] = 5; }), Contains("tiny.json: tensors[1]: expected an object"));
  CHECK_THAT(with([](Json& j) { j["tensors"][1].erase("name"); }), Contains("tiny.json: tensors[1].name: required field is missing"));
  CHECK_THAT(with([](Json& j) { j["tensors"][1]["name"] = "W 1"; }),
             Contains("tiny.json: tensors[1].name: \"W 1\" is not a valid tensor name"));
  CHECK_THAT(with([](Json& j) { j["tensors"][1]["name"] = "X"; }), Contains("tiny.json: tensors[1].name: tensor 'X' is declared twice"));
  CHECK_THAT(with([](Json& j) { j["tensors"][0]["shape"] = Json::array(); }),
             Contains("tiny.json: tensors[0].shape: expected a non-empty array of positive integers"));
  CHECK_THAT(with([](Json& j) { j["tensors"][0]["shape"] = 64; }), Contains("tiny.json: tensors[0].shape: expected a non-empty array"));
  CHECK_THAT(with([](Json& j) { j["tensors"][0]["shape"][1] = 0; }),
             Contains("tiny.json: tensors[0].shape[1]: expected a positive integer (at most 2^40), got 0"));
  CHECK_THAT(with([](Json& j) { j["tensors"][0]["shape"][0] = -64; }), Contains("tiny.json: tensors[0].shape[0]: expected a positive integer"));
  CHECK_THAT(with([](Json& j) { j["tensors"][0]["shape"][0] = 6.5; }), Contains("tiny.json: tensors[0].shape[0]: expected a positive integer"));
  CHECK_THAT(with([](Json& j) { j["tensors"][0]["shape"][0] = "64"; }), Contains("tiny.json: tensors[0].shape[0]"));
  CHECK_THAT(with([](Json& j) { j["tensors"][0]["shape"] = {1 << 30, 1 << 30, 1 << 30}; }),
             Contains("tiny.json: tensors[0].shape: the tensor has more than 2^50 elements"));
  CHECK_THAT(with([](Json& j) { j["tensors"][0]["role"] = "parameter"; }),
             Contains("tiny.json: tensors[0].role: unknown role \"parameter\" (expected input, weight or activation)"));
  CHECK_THAT(with([](Json& j) { j["tensors"][0].erase("role"); }), Contains("tiny.json: tensors[0].role: required field is missing"));
  CHECK_THAT(with([](Json& j) { j["tensors"][0]["dtype"] = "bf16"; }),
             Contains("tiny.json: tensors[0].dtype: unknown dtype \"bf16\" (expected int8, fp16, fp32 or int32)"));
  CHECK_THAT(with([](Json& j) { j["tensors"][0]["dtyp"] = "fp16"; }), Contains("tiny.json: unknown field(s) tensors[0].dtyp"));
  CHECK_THAT(with([](Json& j) {
               j["tensors"].push_back({{"name", "Z"}, {"shape", {4}}, {"role", "activation"}});
             }),
             Contains("tiny.json: tensors[2]: activation 'Z' is declared but no operator produces it"));

  // Operators.
  CHECK_THAT(with([](Json& j) { j["ops"][1].erase("expr"); }), Contains("tiny.json: ops[1].expr: required field is missing"));
  CHECK_THAT(with([](Json& j) { j["ops"][1]["expr"] = 7; }), Contains("tiny.json: ops[1].expr: expected a string"));
  CHECK_THAT(with([](Json& j) { j["ops"][1]["name"] = ""; }), Contains("tiny.json: ops[1].name: an operator needs a name"));
  CHECK_THAT(with([](Json& j) { j["ops"][1]["name"] = "fc1"; }), Contains("tiny.json: ops[1].name: an operator named 'fc1' already exists"));
  CHECK_THAT(with([](Json& j) { j["ops"][1]["exp"] = "Y[m,n] = relu(H[m,n])"; }), Contains("tiny.json: unknown field(s) ops[1].exp"));
  CHECK_THAT(with([](Json& j) { j["ops"][1]["expr"] = "Y[m,n] = relu(H[m,n]"; }),
             Contains("tiny.json: ops[1].expr: expression \"Y[m,n] = relu(H[m,n]\": column 21: expected ',' or ')'"));
  CHECK_THAT(with([](Json& j) { j["ops"][1]["expr"] = "Y[m,n] = relu(Q[m,n])"; }),
             Contains("tiny.json: ops[1].expr: operator 'act'") && Contains("reads tensor 'Q', which is not declared"));
  CHECK_THAT(with([](Json& j) { j["ops"][1]["expr"] = "Y[m,n] = relu(H[m,n,n])"; }),
             Contains("tiny.json: ops[1].expr:") && Contains("tensor 'H' has 2 dimensions but is indexed with 3"));
  CHECK_THAT(with([](Json& j) { j["ops"][0]["expr"] = "H[m,n] += X[m,k] * W1[n,k]"; }),
             Contains("tiny.json: ops[0].expr:") && Contains("axis 'k' has extent 32 elsewhere but 16 in W1[n,k]"));
  CHECK_THAT(with([](Json& j) { j["ops"][1]["expr"] = "W1[m,n] = relu(H[m,n])"; }),
             Contains("tiny.json: ops[1].expr:") && Contains("output 'W1' is already a weight"));
  CHECK_THAT(with([](Json& j) { j["ops"][1]["expr"] = "H[m,n] = relu(X[m,n])"; }),
             Contains("tiny.json: ops[1].expr:") && Contains("produced by another operator"));
  // A declared activation read before its producer runs (operators are in execution order).
  CHECK_THAT(with([](Json& j) {
               j["tensors"].push_back({{"name", "H"}, {"shape", {64, 16}}, {"role", "activation"}});
               j["ops"] = {{{"name", "act"}, {"expr", "Y[m,n] = relu(H[m,n])"}},
                           {{"name", "fc1"}, {"expr", "H[m,n] += X[m,k] * W1[k,n]"}}};
             }),
             Contains("tiny.json: ops[0].expr:") && Contains("reads activation 'H' before any operator produces it"));
  // Strided output without a declared shape.
  CHECK_THAT(with([](Json& j) { j["ops"][1]["expr"] = "Y[m,n] = H[2*m,n]"; }),
             Contains("tiny.json: ops[1].expr:") && Contains("the extent of axis 'm' is not fixed by any plain index"));
  CHECK_THAT(with([](Json& j) { j["ops"][1]["extents"] = 3; }), Contains("tiny.json: ops[1].extents: expected an object"));
  CHECK_THAT(with([](Json& j) { j["ops"][1]["extents"] = {{"q", 3}}; }),
             Contains("tiny.json: ops[1].extents.q: the expression has no axis 'q'"));
  CHECK_THAT(with([](Json& j) { j["ops"][1]["extents"] = {{"m", 0}}; }),
             Contains("tiny.json: ops[1].extents.m: expected a positive integer"));
  CHECK_THAT(with([](Json& j) { j["ops"][1]["extents"] = {{"m", 65}}; }),
             Contains("tiny.json: ops[1].expr:") && Contains("axis 'm' has extent 64 elsewhere but 65 in the given output extents"));

  // Outputs.
  CHECK_THAT(with([](Json& j) { j["outputs"] = "Y"; }), Contains("tiny.json: outputs: expected an array of tensor names"));
  CHECK_THAT(with([](Json& j) { j["outputs"] = {"Y", 3}; }), Contains("tiny.json: outputs[1]: expected a tensor name, got 3"));
  CHECK_THAT(with([](Json& j) { j["outputs"] = {"Z"}; }), Contains("tiny.json: outputs[0]: no tensor named 'Z'"));
  CHECK_THAT(with([](Json& j) { j["outputs"] = {"Y", "W1"}; }),
             Contains("tiny.json: outputs[1]: 'W1' is a(n) weight; only activations"));
  CHECK_THAT(with([](Json& j) { j["outputs"] = {"Y", "Y"}; }), Contains("tiny.json: outputs[1]: 'Y' is listed twice"));
}

TEST_CASE("workload: checks in add_op that the reader relies on", "[workload-json]") {
  Workload w;
  w.name = "api";
  w.add_tensor("X", {4, 8}, TensorRole::Input);
  w.add_tensor("H", {4, 8}, TensorRole::Activation);
  CHECK_THROWS_WITH(w.add_op("", "Y[m,n] = relu(X[m,n])"), Contains("an operator needs a name"));
  CHECK_THROWS_WITH(w.add_op("early", "Y[m,n] = relu(H[m,n])"),
                    Contains("operator 'early'") && Contains("reads activation 'H' before any operator produces it"));
  CHECK_THROWS_WITH(w.add_op("bogus", "Y[m,n] = relu(X[m,n])", {{"q", 3}}),
                    Contains("an extent is given for axis 'q', which the expression does not use"));
  CHECK(w.ops().empty());
  CHECK_FALSE(w.has_tensor("Y"));  // a failed add_op declares nothing
  w.add_op("h", "H[m,n] = relu(X[m,n])");
  w.add_op("y", "Y[m,n] = H[m,n] * 2");
  w.finalize();
  CHECK(w.producer("H") == 0);
  CHECK(w.consumers("H") == std::vector<int>{1});
}
