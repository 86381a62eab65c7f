// Built-in models: parameter counts checked against hand computations from the public
// architectures, operator counts, shapes, scaling with batch / seq_len / layers, bad options.
#include <catch2/catch.hpp>

#include <set>

#include "compiler/ir/models.h"
#include "sim/common/error.h"

using namespace tessera;
using namespace tessera::ir;
using Catch::Contains;
using Shape = std::vector<std::int64_t>;

namespace {

ModelOptions opts(std::int64_t batch, std::int64_t seq = 0, std::int64_t layers = 0) {
  ModelOptions o;
  o.batch = batch;
  o.seq_len = seq;
  o.layers = layers;
  return o;
}

std::int64_t count(const Workload& w, TensorRole role) {
  std::int64_t n = 0;
  for (const auto& t : w.tensors()) n += t.role == role;
  return n;
}

std::vector<std::string> outputs(const Workload& w) {
  std::vector<std::string> out;
  for (const auto& t : w.tensors())
    if (t.output) out.push_back(t.name);
  return out;
}

// FLOPs of contractions only (2 per multiply-add).
std::int64_t matmul_flops(const Workload& w) {
  std::int64_t f = 0;
  for (const auto& op : w.ops())
    if (op.expr.kind == ExprKind::Contraction) f += op.flops();
  return f;
}

// Structural checks every built-in model must pass.
void check_well_formed(const Workload& w) {
  std::set<std::string> names;
  for (const auto& op : w.ops()) {
    CHECK(names.insert(op.name).second);      // unique operator names
    CHECK(op.name == op.expr.output.tensor);  // an operator is named after its result
  }
  CHECK(count(w, TensorRole::Input) == 1);
  for (const auto& t : w.tensors()) CHECK(t.dtype == Dtype::Fp16);
  for (const auto& t : w.tensors())
    if (t.role == TensorRole::Weight) CHECK(!w.consumers(t.name).empty());  // no unused weights
}

}  // namespace

TEST_CASE("model names are sorted and recognized", "[models]") {
  const std::vector<std::string> want = {"bert-large", "llama2-13b", "llama2-7b", "nerf",      "opt-1.3b",
                                         "opt-13b",    "opt-6.7b",   "resnet-18", "retnet-1.3b", "vit-base"};
  CHECK(model_names() == want);
  for (const auto& n : want) CHECK(is_model_name(n));
  CHECK_FALSE(is_model_name("bert"));
  CHECK_FALSE(is_model_name(""));
}

TEST_CASE("bert-large: 24 post-LN encoder layers", "[models]") {
  // One layer: Q,K,V,O 4*(1024*1024 + 1024) = 4,198,400; FFN 1024*4096 + 4096 + 4096*1024 + 1024
  // = 8,393,728; two LayerNorms 2*2048 = 4,096. Sum 12,596,224.
  Workload one = build_model("bert-large", opts(1, 0, 1));
  CHECK(one.parameter_count() == 12596224);
  CHECK(one.weight_bytes() == 2u * 12596224u);
  CHECK(one.ops().size() == 21);
  // Contractions of one layer at seq 128: 2*128*(4*1024^2 + 2*1024*4096) projections and FFN,
  // plus 2 * 2*16*128*128*64 for scores and context.
  CHECK(matmul_flops(one) == 3221225472LL + 67108864LL);

  Workload w = build_model("bert-large", {});
  check_well_formed(w);
  CHECK(w.parameter_count() == 302309376);  // 24 * 12,596,224 (embedding tables are on the host)
  CHECK(w.ops().size() == 24 * 21);
  CHECK(count(w, TensorRole::Weight) == 24 * 16);
  CHECK(w.tensor("embeddings").shape == Shape{1, 128, 1024});
  CHECK(w.tensor("embeddings").role == TensorRole::Input);
  CHECK(w.tensor("l0.attn.q.weight").shape == Shape{1024, 16, 64});
  CHECK(w.tensor("l0.attn.q").shape == Shape{1, 128, 16, 64});
  CHECK(w.tensor("l0.attn.scores").shape == Shape{1, 16, 128, 128});
  CHECK(w.tensor("l0.attn.out.weight").shape == Shape{16, 64, 1024});
  CHECK(w.tensor("l23.ffn.up").shape == Shape{1, 128, 4096});
  CHECK(outputs(w) == std::vector<std::string>{"l23.ffn.norm"});
  CHECK(w.tensor("l23.ffn.norm").shape == Shape{1, 128, 1024});
  CHECK(w.ops()[w.producer("l5.attn.probs")].expr.kind == ExprKind::Softmax);
  CHECK(w.ops()[w.producer("l5.ffn.act")].expr.fn == Fn::Gelu);
  CHECK(w.ops()[w.producer("l5.attn.scaled")].expr.scalar == 0.125);
  // Post-LN: layer 1 reads layer 0's final LayerNorm.
  CHECK(w.ops()[w.producer("l1.attn.q.mm")].expr.inputs[0].tensor == "l0.ffn.norm");
}

TEST_CASE("bert-large scales with batch and seq_len, not parameters", "[models]") {
  Workload w = build_model("bert-large", opts(4, 384, 2));
  CHECK(w.parameter_count() == 2 * 12596224);
  CHECK(w.ops().size() == 42);
  CHECK(w.tensor("embeddings").shape == Shape{4, 384, 1024});
  CHECK(w.tensor("l1.attn.scores").shape == Shape{4, 16, 384, 384});
  CHECK(w.tensor("l1.attn.context").shape == Shape{4, 384, 16, 64});
  // Projections scale with batch*seq, attention with batch*seq^2.
  CHECK(matmul_flops(w) == 2 * (2LL * 4 * 384 * 12582912 + 2 * 2LL * 4 * 16 * 384 * 384 * 64));
}

TEST_CASE("vit-base: ViT-B/16 at 224x224 with class token and 1000-way head", "[models]") {
  // patch embedding 768*768 + 768 = 590,592; cls 768; pos 197*768 = 151,296;
  // 12 layers of 12*768^2 + 13*768 = 7,087,872; final LN 1,536; head 768*1000 + 1000 = 769,000.
  Workload w = build_model("vit-base", {});
  check_well_formed(w);
  CHECK(w.parameter_count() == 590592 + 768 + 151296 + 12 * 7087872 + 1536 + 769000);
  CHECK(w.parameter_count() == 86567656);
  CHECK(w.ops().size() == 4 + 12 * 21 + 1 + 2);
  CHECK(w.tensor("image.patches").shape == Shape{1, 196, 768});
  CHECK(w.tensor("embed.tokens").shape == Shape{1, 197, 768});
  CHECK(w.tensor("l11.attn.scores").shape == Shape{1, 12, 197, 197});
  CHECK(w.tensor("l11.ffn.up").shape == Shape{1, 197, 3072});
  CHECK(outputs(w) == std::vector<std::string>{"head"});
  CHECK(w.tensor("head").shape == Shape{1, 1000});
  // The class-token row is spliced in with out-of-bounds reads; the head reads token 0 only.
  const auto& tok = w.ops()[w.producer("embed.tokens")];
  CHECK(tok.extent.at("t") == 197);
  CHECK_FALSE(tok.expr.inputs[0].indices[1].plain());
  CHECK(w.ops()[w.producer("head.mm")].expr.inputs[0].indices[1].str() == "0");

  Workload w8 = build_model("vit-base", opts(8, 0, 2));
  CHECK(w8.parameter_count() == 86567656 - 10 * 7087872);
  CHECK(w8.tensor("head").shape == Shape{8, 1000});
  CHECK_THROWS_WITH(build_model("vit-base", opts(1, 256)), Contains("197 tokens"));
}

TEST_CASE("resnet-18: folded BN, basic blocks, 1000 classes", "[models]") {
  // conv weights 11,166,912 (torchvision's 11,689,512 minus 9,600 BN gamma/beta minus FC 513,000),
  // plus one folded-BN bias per output channel: 64 + 4*64 + (4*128 + 128) + (4*256 + 256) +
  // (4*512 + 512) = 4,800, plus FC 513,000.
  Workload w = build_model("resnet-18", {});
  check_well_formed(w);
  CHECK(w.parameter_count() == 11166912 + 4800 + 513000);
  CHECK(w.parameter_count() == 11684712);
  CHECK(w.ops().size() == 69);  // stem 4, 8 blocks of 7, 3 downsample convs of 2, head 3
  CHECK(count(w, TensorRole::Weight) == 2 * 20 + 2);  // 20 convolutions, FC
  CHECK(w.tensor("conv1.weight").shape == Shape{64, 3, 7, 7});
  CHECK(w.tensor("conv1").shape == Shape{1, 64, 112, 112});
  CHECK(w.tensor("maxpool").shape == Shape{1, 64, 56, 56});
  CHECK(w.tensor("layer1.1.relu").shape == Shape{1, 64, 56, 56});
  CHECK(w.tensor("layer2.0.downsample").shape == Shape{1, 128, 28, 28});
  CHECK(w.tensor("layer3.0.conv1").shape == Shape{1, 256, 14, 14});
  CHECK(w.tensor("layer4.1.relu").shape == Shape{1, 512, 7, 7});
  CHECK(w.tensor("layer4.0.downsample.weight").shape == Shape{512, 256, 1, 1});
  CHECK_FALSE(w.has_tensor("layer1.0.downsample.weight"));
  CHECK(outputs(w) == std::vector<std::string>{"fc"});
  CHECK(w.tensor("fc").shape == Shape{1, 1000});
  const auto& c1 = w.ops()[w.producer("conv1.conv")];
  CHECK(c1.expr.text == "conv1.conv[n,f,y,x] += image[n,c,2*y+ky-3,2*x+kx-3] * conv1.weight[f,c,ky,kx]");
  CHECK(c1.flops() == 2LL * 64 * 112 * 112 * 3 * 7 * 7);
  const auto& mp = w.ops()[w.producer("maxpool")];
  CHECK(mp.expr.kind == ExprKind::Reduction);
  CHECK(mp.expr.reduce == Reduce::Max);
  CHECK(mp.extent.at("ky") == 3);
  CHECK(w.ops()[w.producer("avgpool")].expr.reduce == Reduce::Mean);
  // 1,813,561,344 conv MACs (the usual "1.8 GFLOPs") + 512,000 FC MACs.
  CHECK(matmul_flops(w) == 2 * (1813561344LL + 512000));

  Workload w2 = build_model("resnet-18", opts(2));
  CHECK(w2.parameter_count() == 11684712);
  CHECK(matmul_flops(w2) == 4 * (1813561344LL + 512000));
  CHECK(w2.tensor("image").shape == Shape{2, 3, 224, 224});
  CHECK_THROWS_WITH(build_model("resnet-18", opts(1, 0, 34)), Contains("fixed number of layers"));
  CHECK_THROWS_WITH(build_model("resnet-18", opts(1, 128)), Contains("model 'resnet-18': has no sequence length"));
}

TEST_CASE("nerf: 63 -> 128 -> 128 -> 4 MLP over batch x samples", "[models]") {
  // 63*128 + 128 = 8,192; 128*128 + 128 = 16,512; 128*4 + 4 = 516.
  Workload w = build_model("nerf", {});
  check_well_formed(w);
  CHECK(w.parameter_count() == 25220);
  CHECK(w.ops().size() == 8);
  CHECK(w.tensor("samples").shape == Shape{1024, 63});
  CHECK(outputs(w) == std::vector<std::string>{"out"});
  CHECK(w.tensor("out").shape == Shape{1024, 4});
  CHECK(matmul_flops(w) == 2LL * 1024 * (63 * 128 + 128 * 128 + 128 * 4));

  Workload w2 = build_model("nerf", opts(4, 4096, 4));  // 4 hidden layers, 16384 rows
  CHECK(w2.parameter_count() == 25220 + 2 * 16512);
  CHECK(w2.ops().size() == 14);
  CHECK(w2.tensor("out").shape == Shape{16384, 4});
}

TEST_CASE("opt: pre-LN decoder layers with biases and ReLU", "[models]") {
  // Per layer 12 h^2 + 13 h: attention 4(h^2 + h), FFN 8 h^2 + 4h + h, two LayerNorms 4h.
  struct Case {
    const char* name;
    std::int64_t hidden, heads, per_layer;
  };
  for (const Case& c : {Case{"opt-1.3b", 2048, 32, 50358272}, Case{"opt-6.7b", 4096, 32, 201379840},
                        Case{"opt-13b", 5120, 40, 314639360}}) {
    INFO(c.name);
    CHECK(12 * c.hidden * c.hidden + 13 * c.hidden == c.per_layer);
    Workload w = build_model(c.name, {});
    check_well_formed(w);
    CHECK(w.parameter_count() == c.per_layer);  // default: one layer
    CHECK(w.ops().size() == 21);
    CHECK(w.tensor("l0.attn.scores").shape == Shape{1, c.heads, 512, 512});
    CHECK(w.tensor("l0.ffn.up").shape == Shape{1, 512, 4 * c.hidden});
    CHECK(outputs(w) == std::vector<std::string>{"l0.ffn.residual"});
    CHECK(w.tensor("l0.ffn.residual").shape == Shape{1, 512, c.hidden});
    CHECK(w.ops()[w.producer("l0.ffn.act")].expr.fn == Fn::Relu);
  }
  // The public OPT-1.3B has 24 layers: 1,208,598,528 of its 1.3B parameters.
  Workload w = build_model("opt-1.3b", opts(2, 2048, 24));
  CHECK(w.parameter_count() == 1208598528);
  CHECK(w.ops().size() == 24 * 21);
  CHECK(w.tensor("l23.attn.probs").shape == Shape{2, 32, 2048, 2048});
  CHECK(w.ops()[w.producer("l0.attn.scaled")].expr.scalar == 0.125);  // head dim 64
  Workload w13 = build_model("opt-13b", {});
  CHECK(w13.ops()[w13.producer("l0.attn.scaled")].expr.scalar == Approx(0.08838834764831845));  // 1/sqrt(128)
}

TEST_CASE("llama2: SwiGLU decoder layers without biases", "[models]") {
  // Per layer: attention 4 h^2, MLP 3 h f (gate, up, down), two norm weights 2h.
  Workload w7 = build_model("llama2-7b", {});
  check_well_formed(w7);
  CHECK(w7.parameter_count() == 4LL * 4096 * 4096 + 3LL * 4096 * 11008 + 2 * 4096);
  CHECK(w7.parameter_count() == 202383360);
  CHECK(w7.ops().size() == 19);
  CHECK(w7.tensor("l0.ffn.gate").shape == Shape{1, 512, 11008});
  CHECK(w7.tensor("l0.ffn.mul").shape == Shape{1, 512, 11008});
  CHECK(w7.tensor("l0.attn.norm.weight").shape == Shape{4096});
  CHECK_FALSE(w7.has_tensor("l0.attn.q.bias"));
  const auto& mul = w7.ops()[w7.producer("l0.ffn.mul")];
  CHECK(mul.expr.fn == Fn::Mul);
  CHECK(mul.expr.inputs[0].tensor == "l0.ffn.act");
  CHECK(mul.expr.inputs[1].tensor == "l0.ffn.up");
  CHECK(w7.ops()[w7.producer("l0.ffn.act")].expr.fn == Fn::Gelu);              // stands in for SiLU
  CHECK(w7.ops()[w7.producer("l0.attn.norm.ln")].expr.inputs.size() == 1);     // RMSNorm stand-in
  // 32 layers: 6,476,267,520 of LLaMA-2-7B's 6,738,415,616 (embeddings, LM head, final norm on top).
  CHECK(build_model("llama2-7b", opts(1, 128, 32)).parameter_count() == 6476267520LL);

  Workload w13 = build_model("llama2-13b", opts(1, 0, 2));
  CHECK(w13.parameter_count() == 2 * 317204480LL);
  CHECK(w13.tensor("l1.attn.scores").shape == Shape{1, 40, 512, 512});
  CHECK(w13.tensor("l1.ffn.down.weight").shape == Shape{13824, 5120});
  CHECK(w13.ops().size() == 38);
}

TEST_CASE("retnet-1.3b: multi-scale retention with a decay mask", "[models]") {
  // Per layer: Q,K 2*2048^2; V,G 2*2048*4096; O 4096*2048; FFN 2*2048*4096 + 4096 + 2048;
  // two LayerNorms 8,192. The decay mask D[h,i,j] (8 * 512 * 512) is a constant weight shared by
  // all layers.
  const std::int64_t per_layer = 2LL * 2048 * 2048 + 3LL * 2048 * 4096 + 2LL * 2048 * 4096 + 6144 + 8192;
  CHECK(per_layer == 50345984);
  Workload w = build_model("retnet-1.3b", {});
  check_well_formed(w);
  CHECK(w.parameter_count() == 50345984 + 8 * 512 * 512);
  CHECK(w.tensor("retention.decay").shape == Shape{8, 512, 512});
  CHECK(w.ops().size() == 21);
  CHECK(w.tensor("l0.ret.q").shape == Shape{1, 512, 8, 256});
  CHECK(w.tensor("l0.ret.v").shape == Shape{1, 512, 8, 512});
  CHECK(w.tensor("l0.ret.retention").shape == Shape{1, 512, 8, 512});
  CHECK(w.ops()[w.producer("l0.ret.scaled")].expr.scalar == 0.0625);
  const auto& dec = w.ops()[w.producer("l0.ret.decayed")];
  CHECK(dec.expr.fn == Fn::Mul);
  CHECK(dec.expr.inputs[1].tensor == "retention.decay");

  Workload w24 = build_model("retnet-1.3b", opts(1, 2048, 24));
  CHECK(w24.parameter_count() == 24 * 50345984LL + 8LL * 2048 * 2048);
  CHECK(w24.consumers("retention.decay").size() == 24);
}

TEST_CASE("build_model rejects unknown names and bad options", "[models]") {
  CHECK_THROWS_AS(build_model("gpt-5", {}), Error);
  CHECK_THROWS_WITH(build_model("gpt-5", {}), Contains("unknown model 'gpt-5'") && Contains("bert-large, llama2-13b"));
  CHECK_THROWS_WITH(build_model("bert-large", opts(0)), Contains("model 'bert-large': batch must be 1 .. 1024, got 0"));
  CHECK_THROWS_WITH(build_model("bert-large", opts(-3)), Contains("got -3"));
  CHECK_THROWS_WITH(build_model("bert-large", opts(2048)), Contains("batch"));
  CHECK_THROWS_WITH(build_model("opt-1.3b", opts(1, -1)), Contains("seq_len must be"));
  CHECK_THROWS_WITH(build_model("opt-1.3b", opts(1, 100000)), Contains("seq_len must be"));
  CHECK_THROWS_WITH(build_model("llama2-7b", opts(1, 0, -2)), Contains("model 'llama2-7b': layers must be"));
  CHECK_THROWS_WITH(build_model("llama2-7b", opts(1, 0, 1000)), Contains("layers must be"));
}
