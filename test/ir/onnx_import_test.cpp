// ONNX import: the models come from scripts/make_onnx_models.py (Debian's python3-onnx), run at
// test time into a temporary directory. Every expected number is computed by hand in a comment.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "compiler/ir/onnx_import.h"
#include "sim/common/error.h"

using namespace tessera;
using namespace tessera::ir;
using Catch::Contains;
using Catch::StartsWith;

namespace {

namespace fs = std::filesystem;

// Generates the models once per test process; the directory is removed at exit.
struct ModelDir {
  fs::path dir;
  ModelDir() {
    dir = fs::temp_directory_path() / ("tessera-onnx-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string cmd = "/usr/bin/python3 " TESSERA_SOURCE_DIR "/scripts/make_onnx_models.py '" + dir.string() + "'";
    if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
  }
  ~ModelDir() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

std::string model(const std::string& name) {
  static ModelDir d;
  return (d.dir / (name + ".onnx")).string();
}

// Every operator's expression text, in order.
std::vector<std::string> op_texts(const Workload& w) {
  std::vector<std::string> texts;
  for (const auto& o : w.ops()) texts.push_back(o.expr.text);
  return texts;
}

const Operator& op(const Workload& w, const std::string& name) {
  for (const auto& o : w.ops())
    if (o.name == name) return o;
  FAIL("no operator " << name);
  throw 0;
}

std::vector<std::string> op_names(const Workload& w) {
  std::vector<std::string> n;
  for (const auto& o : w.ops()) n.push_back(o.name);
  return n;
}

using Shape = std::vector<std::int64_t>;

}  // namespace

TEST_CASE("ONNX MLP: MatMul + Add + Relu, Gemm with transB and bias", "[onnx]") {
  const Workload w = import_onnx(model("mlp"));
  CHECK(w.name == "mlp");
  // Gemm with a bias is two operators: the product and the bias add.
  CHECK(op_names(w) == std::vector<std::string>{"fc1", "fc1_bias", "relu", "fc2", "fc2.bias"});
  CHECK(op(w, "fc1").expr.text == "fc1.mm[a0,a1] += x[a0,r0] * fc1.weight[r0,a1]");
  CHECK(op(w, "fc1").expr.kind == ExprKind::Contraction);
  CHECK(op(w, "fc1_bias").expr.text == "fc1.out[a0,a1] = fc1.mm[a0,a1] + fc1.bias[a1]");
  CHECK(op(w, "relu").expr.text == "act[a0,a1] = relu(fc1.out[a0,a1])");
  CHECK(op(w, "fc2").expr.text == "logits.mm[a0,a1] += act[a0,r0] * fc2.weight[a1,r0]");  // transB
  CHECK(op(w, "fc2.bias").expr.text == "logits[a0,a1] = logits.mm[a0,a1] + fc2.bias[a1]");
  CHECK(w.tensor("x").role == TensorRole::Input);
  CHECK(w.tensor("x").shape == Shape{4, 16});
  CHECK(w.tensor("x").dtype == Dtype::Fp16);  // float in the model, the chip's fp16 here
  CHECK(w.tensor("fc2.weight").role == TensorRole::Weight);
  CHECK(w.tensor("fc2.weight").shape == Shape{10, 32});
  CHECK(w.tensor("logits").shape == Shape{4, 10});
  CHECK(w.tensor("logits").output);
  CHECK_FALSE(w.tensor("act").output);
  // 16*32 + 32 + 10*32 + 10
  CHECK(w.parameter_count() == 874);
  CHECK(w.weight_bytes() == 874 * 2);
  // 2*4*32*16 for fc1
  CHECK(op(w, "fc1").flops() == 4096);
}

TEST_CASE("ONNX conv net: Conv pads/strides/bias, MaxPool, GlobalAveragePool, Flatten, Gemm", "[onnx]") {
  const Workload w = import_onnx(model("convnet"));
  CHECK(op_names(w) == std::vector<std::string>{"conv1", "conv1.bias", "relu1", "pool1", "conv2", "relu2", "gap",
                                                "fc", "fc.bias"});
  CHECK(op(w, "conv1").expr.text == "c1.conv[a0,a1,a2,a3] += image[a0,r0,a2+r1-1,a3+r2-1] * conv1.w[a1,r0,r1,r2]");
  CHECK(op(w, "conv1.bias").expr.text == "c1[a0,a1,a2,a3] = c1.conv[a0,a1,a2,a3] + conv1.b[a1]");
  CHECK(op(w, "pool1").expr.text == "p1[a0,a1,a2,a3] max= r1[a0,a1,2*a2+r0,2*a3+r1]");
  CHECK(op(w, "pool1").expr.kind == ExprKind::Reduction);
  CHECK(op(w, "conv2").expr.text == "c2[a0,a1,a2,a3] += p1[a0,r0,2*a2+r1-1,2*a3+r2-1] * conv2.w[a1,r0,r1,r2]");
  // GlobalAveragePool's [1,16,1,1] is the tensor [1,16]; Flatten is a view of it.
  CHECK(op(w, "gap").expr.text == "gap[a0,a1] avg= r2[a0,a1,r0,r1]");
  CHECK(op(w, "fc").expr.text == "logits.mm[a0,a1] += gap[a0,r0] * fc.w[a1,r0]");
  CHECK(w.tensor("c1").shape == Shape{1, 8, 16, 16});   // 3x3, pad 1, stride 1
  CHECK(w.tensor("p1").shape == Shape{1, 8, 8, 8});     // 2x2, stride 2
  CHECK(w.tensor("c2").shape == Shape{1, 16, 4, 4});    // (8 + 2 - 3) / 2 + 1 = 4
  CHECK(w.tensor("gap").shape == Shape{1, 16});
  CHECK(w.tensor("logits").shape == Shape{1, 10});
  CHECK_FALSE(w.has_tensor("flat"));
  CHECK(op(w, "conv1").extent.at("r0") == 3);
  CHECK(op(w, "conv1").extent.at("r1") == 3);
  // 8*3*3*3 + 8 + 16*8*3*3 + 10*16 + 10
  CHECK(w.parameter_count() == 1546);
}

TEST_CASE("ONNX attention: head split/merge views, scalar Mul, Softmax, LayerNorm, Erf GELU fused", "[onnx]") {
  const Workload w = import_onnx(model("attention"));
  // 29 nodes: 6 Reshape/Transpose are views, the 5-node Erf GELU is one operator.
  CHECK(op_names(w) == std::vector<std::string>{"ln1", "q_proj", "k_proj", "v_proj", "qk", "scale", "softmax", "pv",
                                                "o_proj", "residual1", "ln2", "ffn1", "ffn1_bias", "gelu_erf", "ffn2",
                                                "ffn2_bias", "residual2"});
  CHECK(op(w, "ln1").expr.text == "h[a0,a1,a2] = layernorm(x[a0,a1,a2], ln1.g[a2], ln1.b[a2])");
  CHECK(op(w, "q_proj").expr.text == "q[a0,a1,a2] += h[a0,a1,r0] * wq[r0,a2]");  // 2-D weight broadcast
  // q [1,6,32] -> Reshape [1,6,4,8] -> Transpose (0,2,1,3): head a1, position a2, channel r0 = 8*a1+r0.
  // k -> [1,6,4,8] -> Transpose (0,2,3,1): kt[b,h,c,s] = k[b,s,8*h+c].
  CHECK(op(w, "qk").expr.text == "scores[a0,a1,a2,a3] += q[a0,a2,8*a1+r0] * k[a0,a3,8*a1+r0]");
  CHECK(op(w, "scale").expr.text == "scaled[a0,a1,a2,a3] = scores[a0,a1,a2,a3] * 0.3535533845424652");
  CHECK(op(w, "scale").expr.scalar.value() == Approx(1.0 / std::sqrt(8.0)));
  CHECK(op(w, "softmax").expr.text == "probs[a0,a1,a2,a3] = softmax(scaled[a0,a1,a2,a3])");
  CHECK(op(w, "pv").expr.text == "ctx[a0,a1,a2,a3] += probs[a0,a1,a2,r0] * v[a0,r0,8*a1+a3]");
  // ctx [1,4,6,8] -> Transpose (0,2,1,3) -> Reshape [1,6,32] merges (head, channel): the reduction
  // axis splits into r0_0 (head, 4) and r0_1 (channel, 8).
  CHECK(op(w, "o_proj").expr.text == "attn[a0,a1,a2] += ctx[a0,r0_0,a1,r0_1] * wo[8*r0_0+r0_1,a2]");
  CHECK(op(w, "o_proj").extent == std::map<std::string, std::int64_t>{{"a0", 1}, {"a1", 6}, {"a2", 32}, {"r0_0", 4}, {"r0_1", 8}});
  CHECK(op(w, "gelu_erf").expr.text == "gelu[a0,a1,a2] = gelu(f1b[a0,a1,a2])");
  CHECK(w.tensor("scores").shape == Shape{1, 4, 6, 6});
  CHECK(w.tensor("ctx").shape == Shape{1, 4, 6, 8});
  CHECK(w.tensor("y").shape == Shape{1, 6, 32});
  CHECK(w.tensor("y").output);
  for (const char* view : {"q4", "qt", "kt", "vt", "ctx_t", "ctx_m", "g_div", "g_erf", "g_add", "g_mul"})
    CHECK_FALSE(w.has_tensor(view));
  // The reshape shapes and the scalars (scale, sqrt2, one, half) are not weights.
  CHECK_FALSE(w.has_tensor("heads_shape"));
  CHECK_FALSE(w.has_tensor("scale"));
  // ln1 32+32, wq wk wv wo 4*32*32, ln2 32+32, w1 32*64, b1 64, w2 64*32, b2 32
  CHECK(w.parameter_count() == 64 + 4096 + 64 + 2048 + 64 + 2048 + 32);
  // Dependencies: qk reads q and k.
  CHECK(w.producer("q") == 1);
  CHECK(w.consumers("q") == std::vector<int>{4});
}

TEST_CASE("ONNX broadcasting, scalar operands, Squeeze/Unsqueeze, pools, Gemm transA, merged output", "[onnx]") {
  const Workload w = import_onnx(model("ops"));
  CHECK(w.ops().size() == 12);
  // [2,3,4,8] x [1,8,5]: the weight's batch dimension of 1 broadcasts (index 0), missing ones are dropped.
  CHECK(op(w, "bmm").expr.text == "mm[a0,a1,a2,a3] += a[a0,a1,a2,r0] * b[0,r0,a3]");
  CHECK(w.tensor("mm").shape == Shape{2, 3, 4, 5});
  CHECK(op(w, "gelu").expr.text == "g[a0,a1,a2,a3] = gelu(mm[a0,a1,a2,a3])");
  CHECK(op(w, "div2").expr.text == "d[a0,a1,a2,a3] = g[a0,a1,a2,a3] / 2");
  CHECK(op(w, "one_minus").expr.text == "s[a0,a1,a2,a3] = 1 - d[a0,a1,a2,a3]");  // scalar first
  CHECK(op(w, "one_minus").expr.scalar_first);
  // Unsqueeze then Squeeze is the identity; the Transpose swaps the last two indices.
  CHECK(op(w, "softmax").expr.text == "sm[a0,a1,a2,a3] = softmax(s[a0,a1,a3,a2])");
  CHECK(w.tensor("sm").shape == Shape{2, 3, 5, 4});
  // 2x2 window, stride 1, end pads 1: (5 + 1 - 2) + 1 = 5, (4 + 1 - 2) + 1 = 4
  CHECK(op(w, "avgpool").expr.text == "ap[a0,a1,a2,a3] avg= sm[a0,a1,a2+r0,a3+r1]");
  CHECK(w.tensor("ap").shape == Shape{2, 3, 5, 4});
  CHECK(op(w, "bcast_add").expr.text == "apv[a0,a1,a2,a3] = ap[a0,a1,a2,a3] + v[a1,0,a3]");  // v [3,1,4]
  CHECK(op(w, "halve").expr.text == "hm[a0,a1,a2,a3] = apv[a0,a1,a2,a3] * 0.5");
  CHECK(op(w, "minus_one").expr.text == "out1[a0,a1,a2,a3] = hm[a0,a1,a2,a3] - 1");  // + (-1)
  CHECK(op(w, "gemm_ta").expr.text == "out2.mm[a0,a1] += gin[r0,a0] * gw[r0,a1]");   // transA
  CHECK(op(w, "gemm_ta.bias").expr.text == "out2[a0,a1] = out2.mm[a0,a1] + gc[a0,0]");  // C [4,1]
  // x [2,3,4] -> Transpose (0,2,1) -> Reshape [2,12]: the merged output axis splits and the output
  // tensor keeps the [2,4,3] layout (row-major, the same bytes as [2,12]).
  CHECK(op(w, "relu_merged").expr.text == "out3[a0,a1_0,a1_1] = relu(x[a0,a1_1,a1_0])");
  CHECK(w.tensor("out3").shape == Shape{2, 4, 3});
  CHECK(w.tensor("out1").output);
  CHECK(w.tensor("out2").output);
  CHECK(w.tensor("out3").output);
  // b 1*8*5 + v 3*1*4 + gw 6*3 + gc 4*1; scalars and the axes / shape constants are not weights
  CHECK(w.parameter_count() == 40 + 12 + 18 + 4);
}

TEST_CASE("ONNX GELU association orders, Constant nodes, Identity, LayerNormalization without bias, names",
          "[onnx]") {
  const Workload w = import_onnx(model("variants"));
  // Node "/ln/LayerNorm" writing "/ln/out-1": '-' becomes '_', and a name starts with a letter or '_'.
  CHECK(op_names(w) == std::vector<std::string>{"g1_erf", "g2_erf", "_/ln/LayerNorm", "_/ln/LayerNorm.scale"});
  CHECK(op(w, "g1_erf").expr.text == "y1[a0,a1] = gelu(x[a0,a1])");
  CHECK(op(w, "g2_erf").expr.text == "y2[a0,a1] = gelu(y1[a0,a1])");
  // The expression language's layernorm takes gamma and beta together: no bias means a scale op.
  CHECK(op(w, "_/ln/LayerNorm").expr.text == "_/ln/out_1.norm[a0,a1] = layernorm(y2[a0,a1])");
  CHECK(op(w, "_/ln/LayerNorm.scale").expr.text == "_/ln/out_1[a0,a1] = _/ln/out_1.norm[a0,a1] * ln.g[a1]");
  CHECK(w.tensor("_/ln/out_1").output);
  CHECK(w.parameter_count() == 8);  // the Constant nodes' scalars and sqrt2 are not weights
}

TEST_CASE("ONNX import errors name the file, the node and what is supported", "[onnx]") {
  const std::string unsupported = model("unsupported");
  CHECK_THROWS_AS(import_onnx(unsupported), Error);
  CHECK_THROWS_WITH(import_onnx(unsupported),
                    StartsWith(unsupported + ": node 'top_k' (TopK): unsupported operator; supported: Add, ") &&
                        Contains("MatMul") && Contains("Softmax"));
  CHECK_THROWS_WITH(import_onnx(model("softmax_axis")),
                    Contains("node 'sm_axis1' (Softmax): axis 1 is not the last axis of the rank-3 input; only softmax "
                             "along the last axis is supported"));
  CHECK_THROWS_WITH(import_onnx(model("bad_reshape")),
                    Contains("node 'reshape_64' (Reshape): reshape from [4,6] to [6,4] is not a layout view") &&
                        Contains("Supported: splitting a dimension"));
  CHECK_THROWS_WITH(import_onnx(model("symbolic")),
                    Contains("symbolic.onnx: symbolic input dimensions need values: 'batch' ('x' dimension 0). Set them "
                             "with --dim batch=N"));
  CHECK_THROWS_WITH(import_onnx(model("symbolic"), ImportOptions{{{"batch", 2}, {"seq", 4}}}),
                    Contains("--dim seq: the model has no symbolic input dimension of that name (it has 'batch')"));
  CHECK_THROWS_WITH(import_onnx(model("symbolic"), ImportOptions{{{"batch", 0}}}),
                    Contains("--dim batch=0: expected a positive size"));
  // Every problem in one report; the Relu that reads the TopK is a consequence, not listed.
  const std::string problems = model("problems");
  CHECK_THROWS_WITH(import_onnx(problems),
                    StartsWith(problems + ": 2 problems (1 Softmax, 1 TopK); nodes that only depend on them are not "
                               "listed:\n  node 'top_k' (TopK): unsupported operator") &&
                        Contains("\n  node 'sm0' (Softmax): axis 0 is not the last axis") && !Contains("after_topk"));
}

TEST_CASE("ONNX attributes the importer does not read, and opsets past what it knows, are named errors", "[onnx]") {
  // Before, each of these imported and computed as if the attribute had its default: the
  // average pool divided a corner window by its 4 inputs inside the image, not by 9.
  const std::string m = model("attributes");
  CHECK_THROWS_WITH(import_onnx(m),
                    StartsWith(m + ": 3 problems (1 AveragePool, 1 Relu, 1 Reshape)") &&
                        Contains("node 'avg_pad' (AveragePool): count_include_pad 1 with windows over padding is not "
                                 "supported") &&
                        Contains("node 'relu_alpha' (Relu): attribute 'alpha' is not supported (the importer reads no "
                                 "attribute of Relu)") &&
                        Contains("node 'fold_flag' (Reshape): attribute 'bogus' is not supported (the importer reads "
                                 "allowzero)") &&
                        !Contains("use_fold"));
  // inputs no handler reads are named the same way; Dropout in training mode passes X on only
  // with a ratio of 0 (Swin's attention exports it so)
  const std::string in = model("inputs");
  CHECK_THROWS_WITH(import_onnx(in),
                    StartsWith(in + ": 2 problems (1 Dropout, 1 MatMul)") &&
                        Contains("node 'matmul_three' (MatMul): input 2 ('w') is not supported: the importer reads 2 "
                                 "inputs of MatMul") &&
                        Contains("node 'drop_train' (Dropout): training_mode is true (or not a constant) with ratio "
                                 "0.3") &&
                        !Contains("drop_zero"));
  // without padding count_include_pad changes nothing: accepted, one averaging operator
  const Workload w = import_onnx(model("avg_nopad"));
  REQUIRE(w.ops().size() == 1);
  CHECK(w.ops()[0].expr.text == "p[a0,a1,a2,a3] avg= x[a0,a1,2*a2+r0,2*a3+r1]");
  // a layer norm's epsilon (ignored before: 1e-5 whatever the model said) is in its expression
  // when it is not the default; the functional runs against PyTorch hold it (ViT-B/16: 1e-6)
  const Workload ln = import_onnx(model("ln_eps"));
  CHECK(op_texts(ln) == std::vector<std::string>{"y[a0,a1] = layernorm(x[a0,a1], g[a1], b[a1], 1e-12)",
                                                 "z.norm[a0,a1] = layernorm(x[a0,a1], 1e-06)",
                                                 "z[a0,a1] = z.norm[a0,a1] * g[a1]",
                                                 "w.norm[a0,a1] = layernorm(x[a0,a1])",
                                                 "w[a0,a1] = w.norm[a0,a1] * g[a1]"});
  CHECK(ln.ops()[0].expr.epsilon == Approx(1e-12).epsilon(1e-6));
  CHECK(!ln.ops()[3].expr.epsilon);
  CHECK_THROWS_WITH(import_onnx(model("future_opset")),
                    Contains("future_opset.onnx: opset 999 of the default domain is newer than the importer knows (at "
                             "most 21)"));
}

TEST_CASE("ONNX recurrent layers are unrolled over the sequence; what the unroll does not take is named", "[onnx]") {
  // RNN, 2 steps, hidden 2, zero initial state: x_0 and x_1 sliced out (2 copies); step 0:
  // x W^T, + bias, tanh (3); step 1: x W^T, h R^T, their sum, + bias, tanh (5); Y: each step's
  // state copied to [1,1,1,2] (2) and joined along the sequence (1). 13 operators, and the
  // weights W, R and the summed bias made once for both steps.
  const Workload w = import_onnx(model("rnn_small"));
  CHECK(w.ops().size() == 13);
  std::size_t weights = 0;
  for (const auto& t : w.tensors()) weights += t.role == TensorRole::Weight;
  CHECK(weights == 3);
  CHECK(op_texts(w)[6] == "rnn.t1.d0.a.h[a0,a1] += rnn.t0.d0.H[a0,r0] * rnn.R0.d0[a1,r0]");  // h R^T, h = step 0 state
  // two nodes of one name keep their own weights: 3 + 3 (the second's W is 2 x 2)
  const Workload same = import_onnx(model("rnn_same_names"));
  std::vector<Shape> shapes;
  for (const auto& t : same.tensors())
    if (t.role == TensorRole::Weight) shapes.push_back(t.shape);
  CHECK(shapes == std::vector<Shape>{{2, 3}, {2}, {2, 2}, {2, 2}, {2}, {2, 2}});
  CHECK_THROWS_WITH(import_onnx(model("lstm_clip")), Contains("node 'lstm' (LSTM): clip is not supported"));
  CHECK_THROWS_WITH(import_onnx(model("rnn_leaky")),
                    Contains("node 'rnn' (RNN): activation 'leakyrelu' is not supported; Sigmoid, Tanh and Relu are"));
  CHECK_THROWS_WITH(import_onnx(model("lstm_short")),
                    Contains("node 'lstm' (LSTM): sequence_lens has 3 where the sequence is 5 long; only full-length "
                             "sequences are supported"));
}

TEST_CASE("ONNX merged dimensions read by a window or re-split another way are made solid first", "[onnx]") {
  // x [1,3,4,4,16] -> Reshape [1,3,16,16] merges (4,4); a 3x3 convolution cannot read the merged
  // row through its window (a2+r1-1), so one operator first copies it into a plain row: a product
  // with the 16x16 identity, which reads the merged row by the split reduction axis.
  const Workload w = import_onnx(model("merge_window"));
  const std::vector<std::string> want = {
      "xm.flat[a0,a1,a2,a3] += x[a0,a1,r0_0,r0_1,a3] * identity_16[4*r0_0+r0_1,a2]",
      "y[a0,a1,a2,a3] += xm.flat[a0,r0,a2+r1-1,a3+r2-1] * w[a1,r0,r1,r2]"};
  CHECK(op_texts(w) == want);
  // x [1,2,3] -> [1,6] -> [1,3,2]: 6 read as 2 x 3 cannot be split as 3 x 2 by a view (no axis of
  // the second split lines up with the first), so the merged 6 is copied into a plain row, whose
  // split is a view: y[0,i,j] = x at flat position 2i+j.
  const Workload r = import_onnx(model("resplit"));
  CHECK(op_texts(r) == std::vector<std::string>{"xm.flat[a0,a1] += x[a0,r0_0,r0_1] * identity_6[3*r0_0+r0_1,a1]",
                                          "y[a0,a1,a2] = relu(xm.flat[a0,2*a1+a2])"});
}

TEST_CASE("ONNX symbolic dimensions take --dim values; Erf on its own", "[onnx]") {
  const Workload w = import_onnx(model("symbolic"), ImportOptions{{{"batch", 3}}});
  CHECK(w.tensor("x").shape.at(0) == 3);
  const Workload e = import_onnx(model("lone_erf"));
  REQUIRE(e.ops().size() == 1);
  CHECK(e.ops()[0].expr.text == "y[a0,a1] = erf(x[a0,a1])");
}

TEST_CASE("ONNX shape arithmetic folds away at import", "[onnx]") {
  // Shape(x)[0] = 2, unsqueezed and concatenated with -1: Reshape x [2,3,4] to [2,12]. Only the
  // Relu is an operator; it reads x through the merging view, so its output keeps [2,3,4].
  const Workload w = import_onnx(model("folding"));
  REQUIRE(w.ops().size() == 1);
  CHECK(w.ops()[0].expr.text == "y[a0,a1_0,a1_1] = relu(x[a0,a1_0,a1_1])");
  CHECK(w.tensor("y").shape == std::vector<std::int64_t>{2, 3, 4});
  CHECK(w.parameter_count() == 0);
}

TEST_CASE("ONNX data ops: Slice, Concat, Where on a mask, Sigmoid, Clip, ReduceMean, Pow", "[onnx]") {
  const Workload w = import_onnx(model("dataops"));
  // columns 2..5 of x; x then the slice (read 8 columns back, absent before); the mask adds 0
  // on even columns and -inf on odd ones; the clip is a max then a min; the mean over columns.
  const std::vector<std::string> want = {
      "xs[a0,a1] = x[a0,a1+2]",
      "xc[a0,a1] = x[a0,a1] + xs[a0,a1-8]",
      "xw[a0,a1] = xc[a0,a1] + xw.mask[a1]",
      "sg[a0,a1] = sigmoid(xw[a0,a1])",
      "cl.0[a0,a1] = sg[a0,a1] max 0.25",
      "cl[a0,a1] = cl.0[a0,a1] min 0.75",
      "rm[a0] avg= cl[a0,r0]",
      "y[a0,a1] = rm[a0] pow 2"};  // y is [2,1]: the unit dimension of the kept mean is not read
  CHECK(op_texts(w) == want);
  CHECK(w.tensor("xc").shape == std::vector<std::int64_t>{2, 12});
  CHECK(w.tensor("xw.mask").shape == std::vector<std::int64_t>{12});
  CHECK(w.parameter_count() == 12);  // the mask; the scalars are numbers in the expressions
}

TEST_CASE("ONNX depthwise convolution splits the channel into (group, channel in group)", "[onnx]") {
  // 4 groups of 1 channel: O[n,g,f,y,x] += X[n,1*g+c,y+ky-1,x+kx-1] * W[1*g+f,c,ky,kx], c and f of
  // extent 1; the [1,4,1,6,6] result is the ONNX [1,4,6,6] value.
  const Workload w = import_onnx(model("depthwise"));
  REQUIRE(w.ops().size() == 1);
  CHECK(w.ops()[0].expr.text == "y.conv[a0,a1,a2,a3,a4] += x[a0,a1+r0,a3+r1-1,a4+r2-1] * w[a1+a2,r0,r1,r2]");
  CHECK(w.tensor("y.conv").shape == std::vector<std::int64_t>{1, 4, 1, 6, 6});
  CHECK(w.ops()[0].flops() == 2 * 4 * 36 * 9);
}

TEST_CASE("ONNX Einsum: letters become axes, the ones not in the output are summed", "[onnx]") {
  // bhid,bhjd->bhij: output b,h,i,j = a0..a3, d = r0 (4); bhij->bhi: j = r0 (5).
  const Workload w = import_onnx(model("einsum"));
  REQUIRE(w.ops().size() == 2);
  CHECK(w.ops()[0].expr.text == "s[a0,a1,a2,a3] += q[a0,a1,a2,r0] * k[a0,a1,a3,r0]");
  CHECK(w.ops()[0].flops() == 2 * (1 * 2 * 3 * 5) * 4);
  CHECK(w.ops()[1].expr.text == "t[a0,a1,a2] += s[a0,a1,a2,r0]");
  CHECK(w.tensor("t").shape == std::vector<std::int64_t>{1, 2, 3});
}

TEST_CASE("ONNX import: missing and non-ONNX files", "[onnx]") {
  const fs::path dir = fs::path(model("mlp")).parent_path();
  const std::string missing = (dir / "no-such-model.onnx").string();
  CHECK_THROWS_WITH(import_onnx(missing), missing + ": cannot open the file: it does not exist");
  const std::string text = (dir / "text.onnx").string();
  std::ofstream(text) << "this is a text file, not a model\n";
  CHECK_THROWS_WITH(import_onnx(text), StartsWith(text + ": not an ONNX model"));
  const std::string empty = (dir / "empty.onnx").string();
  std::ofstream{empty};
  CHECK_THROWS_WITH(import_onnx(empty), empty + ": not an ONNX model (it has no graph or no nodes)");
  CHECK_THROWS_WITH(import_onnx(dir.string()), dir.string() + ": cannot read the file: it is not a regular file");
}
