#include "compiler/ir/models.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "sim/common/error.h"

namespace tessera::ir {

namespace {

using Shape = std::vector<std::int64_t>;

// A workload under construction. Every operator is named after the tensor it produces, so the
// helpers below return one name that is both.
struct Net {
  Workload w;

  std::string input(const std::string& n, Shape s) {
    w.add_tensor(n, std::move(s), TensorRole::Input);
    return n;
  }
  std::string weight(const std::string& n, Shape s) {
    w.add_tensor(n, std::move(s), TensorRole::Weight);
    return n;
  }
  // An activation whose shape the operator's inputs do not fix (strided or padded outputs).
  void declare(const std::string& n, Shape s) { w.add_tensor(n, std::move(s), TensorRole::Activation); }
  std::string op(const std::string& n, const std::string& expr,
                 const std::map<std::string, std::int64_t>& extents = {}) {
    w.add_op(n, expr, extents);
    return n;
  }
};

// ---- Building blocks. `rows` are the leading axes, e.g. "b,s" (tokens) or "r" (samples). ----

// Y[rows,n] = X[rows,k] * W[k,n] (+ B[n]). With a bias the product is `p.mm` and the sum `p`.
std::string linear(Net& net, const std::string& p, const std::string& x, const std::string& rows,
                   std::int64_t in, std::int64_t out, bool bias) {
  const std::string w = net.weight(p + ".weight", {in, out});
  const std::string mm = bias ? p + ".mm" : p;
  net.op(mm, fmt::format("{0}[{1},n] += {2}[{1},k] * {3}[k,n]", mm, rows, x, w));
  if (!bias) return mm;
  const std::string b = net.weight(p + ".bias", {out});
  return net.op(p, fmt::format("{0}[{1},n] = {2}[{1},n] + {3}[n]", p, rows, mm, b));
}

// Per-head projection without a reshape: P[b,s,h,d] = X[b,s,e] * W[e,h,d] (+ B[h,d]).
std::string head_proj(Net& net, const std::string& p, const std::string& x, std::int64_t hidden,
                      std::int64_t heads, std::int64_t head_dim, bool bias) {
  const std::string w = net.weight(p + ".weight", {hidden, heads, head_dim});
  const std::string mm = bias ? p + ".mm" : p;
  net.op(mm, fmt::format("{0}[b,s,h,d] += {1}[b,s,e] * {2}[e,h,d]", mm, x, w));
  if (!bias) return mm;
  const std::string b = net.weight(p + ".bias", {heads, head_dim});
  return net.op(p, fmt::format("{0}[b,s,h,d] = {1}[b,s,h,d] + {2}[h,d]", p, mm, b));
}

// Output projection from heads: Y[b,s,e] = C[b,s,h,d] * W[h,d,e] (+ B[e]).
std::string out_proj(Net& net, const std::string& p, const std::string& c, std::int64_t heads,
                     std::int64_t head_dim, std::int64_t hidden, bool bias) {
  const std::string w = net.weight(p + ".weight", {heads, head_dim, hidden});
  const std::string mm = bias ? p + ".mm" : p;
  net.op(mm, fmt::format("{0}[b,s,e] += {1}[b,s,h,d] * {2}[h,d,e]", mm, c, w));
  if (!bias) return mm;
  const std::string b = net.weight(p + ".bias", {hidden});
  return net.op(p, fmt::format("{0}[b,s,e] = {1}[b,s,e] + {2}[e]", p, mm, b));
}

// softmax(Q K^T * scale) V per head; returns the context C[b,s,h,d].
std::string attention(Net& net, const std::string& p, const std::string& q, const std::string& k,
                      const std::string& v, double scale) {
  const std::string s = net.op(p + ".scores", fmt::format("{}.scores[b,h,i,j] += {}[b,i,h,d] * {}[b,j,h,d]", p, q, k));
  const std::string t = net.op(p + ".scaled", fmt::format("{}.scaled[b,h,i,j] = {}[b,h,i,j] * {}", p, s, scale));
  const std::string pr = net.op(p + ".probs", fmt::format("{}.probs[b,h,i,j] = softmax({}[b,h,i,j])", p, t));
  return net.op(p + ".context", fmt::format("{}.context[b,i,h,d] += {}[b,h,i,j] * {}[b,j,h,d]", p, pr, v));
}

std::string add(Net& net, const std::string& n, const std::string& a, const std::string& b,
                const std::string& axes) {
  return net.op(n, fmt::format("{0}[{1}] = {2}[{1}] + {3}[{1}]", n, axes, a, b));
}

std::string unary(Net& net, const std::string& n, const char* fn, const std::string& x,
                  const std::string& axes) {
  return net.op(n, fmt::format("{0}[{1}] = {2}({3}[{1}])", n, axes, fn, x));
}

// LayerNorm over the last axis with gamma and beta.
std::string layernorm(Net& net, const std::string& p, const std::string& x, const std::string& rows,
                      std::int64_t dim) {
  const std::string g = net.weight(p + ".gamma", {dim});
  const std::string b = net.weight(p + ".beta", {dim});
  return net.op(p, fmt::format("{0}[{1},e] = layernorm({2}[{1},e], {3}[e], {4}[e])", p, rows, x, g, b));
}

// RMSNorm stand-in: LayerNorm without affine parameters, then times the RMSNorm weight g[e].
// Same shapes, same parameter count (dim), same memory traffic as RMSNorm.
std::string rmsnorm(Net& net, const std::string& p, const std::string& x, std::int64_t dim) {
  const std::string n = net.op(p + ".ln", fmt::format("{0}.ln[b,s,e] = layernorm({1}[b,s,e])", p, x));
  const std::string g = net.weight(p + ".weight", {dim});
  return net.op(p, fmt::format("{0}[b,s,e] = {1}[b,s,e] * {2}[e]", p, n, g));
}

struct Dims {
  std::int64_t hidden, heads, head_dim, ffn;
};

// Multi-head self-attention of layer `l` on x: Q, K, V projections, scaled softmax attention,
// output projection (biases on all four, or none).
std::string self_attention(Net& net, const std::string& l, const std::string& x, const Dims& d, bool bias) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(d.head_dim));
  auto q = head_proj(net, l + ".attn.q", x, d.hidden, d.heads, d.head_dim, bias);
  auto k = head_proj(net, l + ".attn.k", x, d.hidden, d.heads, d.head_dim, bias);
  auto v = head_proj(net, l + ".attn.v", x, d.hidden, d.heads, d.head_dim, bias);
  auto c = attention(net, l + ".attn", q, k, v, scale);
  return out_proj(net, l + ".attn.out", c, d.heads, d.head_dim, d.hidden, bias);
}

// BERT encoder layer (post-LN): attention, residual, LN, FFN with GELU, residual, LN.
std::string bert_layer(Net& net, const std::string& l, const std::string& x, const Dims& d) {
  auto o = self_attention(net, l, x, d, true);
  auto r = add(net, l + ".attn.residual", x, o, "b,s,e");
  auto h = layernorm(net, l + ".attn.norm", r, "b,s", d.hidden);
  auto f = linear(net, l + ".ffn.up", h, "b,s", d.hidden, d.ffn, true);
  auto a = unary(net, l + ".ffn.act", "gelu", f, "b,s,n");
  auto dn = linear(net, l + ".ffn.down", a, "b,s", d.ffn, d.hidden, true);
  auto r2 = add(net, l + ".ffn.residual", h, dn, "b,s,e");
  return layernorm(net, l + ".ffn.norm", r2, "b,s", d.hidden);
}

// Pre-LN transformer layer with biases (ViT with GELU, OPT with ReLU).
std::string pre_ln_layer(Net& net, const std::string& l, const std::string& x, const Dims& d,
                         const char* act) {
  auto h = layernorm(net, l + ".attn.norm", x, "b,s", d.hidden);
  auto o = self_attention(net, l, h, d, true);
  auto r = add(net, l + ".attn.residual", x, o, "b,s,e");
  auto h2 = layernorm(net, l + ".ffn.norm", r, "b,s", d.hidden);
  auto f = linear(net, l + ".ffn.up", h2, "b,s", d.hidden, d.ffn, true);
  auto a = unary(net, l + ".ffn.act", act, f, "b,s,n");
  auto dn = linear(net, l + ".ffn.down", a, "b,s", d.ffn, d.hidden, true);
  return add(net, l + ".ffn.residual", r, dn, "b,s,e");
}

// LLaMA-2 layer: RMSNorm (as layernorm * g), attention without biases, SwiGLU MLP (GELU for SiLU).
std::string llama_layer(Net& net, const std::string& l, const std::string& x, const Dims& d) {
  auto h = rmsnorm(net, l + ".attn.norm", x, d.hidden);
  auto o = self_attention(net, l, h, d, false);
  auto r = add(net, l + ".attn.residual", x, o, "b,s,e");
  auto h2 = rmsnorm(net, l + ".ffn.norm", r, d.hidden);
  auto g = linear(net, l + ".ffn.gate", h2, "b,s", d.hidden, d.ffn, false);
  auto ga = unary(net, l + ".ffn.act", "gelu", g, "b,s,n");
  auto u = linear(net, l + ".ffn.up", h2, "b,s", d.hidden, d.ffn, false);
  auto m = net.op(l + ".ffn.mul", fmt::format("{}.ffn.mul[b,s,n] = {}[b,s,n] * {}[b,s,n]", l, ga, u));
  auto dn = linear(net, l + ".ffn.down", m, "b,s", d.ffn, d.hidden, false);
  return add(net, l + ".ffn.residual", r, dn, "b,s,e");
}

// RetNet layer (paper configuration): LN, multi-scale retention with key dim hidden/heads, value
// dim 2*hidden/heads, decay mask D[h,i,j], per-head group norm, GELU gate (for swish), output
// projection; LN, FFN with GELU and biases.
std::string retnet_layer(Net& net, const std::string& l, const std::string& x, const Dims& d,
                         const std::string& decay) {
  const std::int64_t vdim = 2 * d.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d.head_dim));
  auto h = layernorm(net, l + ".ret.norm", x, "b,s", d.hidden);
  auto q = head_proj(net, l + ".ret.q", h, d.hidden, d.heads, d.head_dim, false);
  auto k = head_proj(net, l + ".ret.k", h, d.hidden, d.heads, d.head_dim, false);
  auto v = head_proj(net, l + ".ret.v", h, d.hidden, d.heads, vdim, false);
  auto g = head_proj(net, l + ".ret.g", h, d.hidden, d.heads, vdim, false);
  auto ga = unary(net, l + ".ret.gate", "gelu", g, "b,s,h,d");
  const std::string p = l + ".ret";
  auto s = net.op(p + ".scores", fmt::format("{}.scores[b,h,i,j] += {}[b,i,h,d] * {}[b,j,h,d]", p, q, k));
  auto t = net.op(p + ".scaled", fmt::format("{}.scaled[b,h,i,j] = {}[b,h,i,j] * {}", p, s, scale));
  auto dc = net.op(p + ".decayed", fmt::format("{}.decayed[b,h,i,j] = {}[b,h,i,j] * {}[h,i,j]", p, t, decay));
  auto rt = net.op(p + ".retention", fmt::format("{}.retention[b,i,h,d] += {}[b,h,i,j] * {}[b,j,h,d]", p, dc, v));
  auto gn = unary(net, p + ".groupnorm", "layernorm", rt, "b,s,h,d");
  auto gt = net.op(p + ".gated", fmt::format("{}.gated[b,s,h,d] = {}[b,s,h,d] * {}[b,s,h,d]", p, gn, ga));
  auto o = out_proj(net, p + ".out", gt, d.heads, vdim, d.hidden, false);
  auto r = add(net, p + ".residual", x, o, "b,s,e");
  auto h2 = layernorm(net, l + ".ffn.norm", r, "b,s", d.hidden);
  auto f = linear(net, l + ".ffn.up", h2, "b,s", d.hidden, d.ffn, true);
  auto a = unary(net, l + ".ffn.act", "gelu", f, "b,s,n");
  auto dn = linear(net, l + ".ffn.down", a, "b,s", d.ffn, d.hidden, true);
  return add(net, l + ".ffn.residual", r, dn, "b,s,e");
}

// ---- Models ----

void bert(Net& net, std::int64_t batch, std::int64_t seq, std::int64_t layers) {
  const Dims d{1024, 16, 64, 4096};
  std::string x = net.input("embeddings", {batch, seq, d.hidden});
  for (std::int64_t i = 0; i < layers; ++i) x = bert_layer(net, fmt::format("l{}", i), x, d);
}

void vit(Net& net, std::int64_t batch, std::int64_t, std::int64_t layers) {
  const Dims d{768, 12, 64, 3072};
  const std::int64_t patches = 14 * 14, patch_elems = 3 * 16 * 16, tokens = patches + 1;
  // The host cuts the 224x224x3 image into 196 patches of 16x16x3 (a relayout, no arithmetic);
  // the patch embedding (a stride-16 16x16 convolution) is then a matmul over flattened patches.
  auto in = net.input("image.patches", {batch, patches, patch_elems});
  auto pe = linear(net, "embed.patch", in, "b,s", patch_elems, d.hidden, true);
  // Token 0 is the class token, tokens 1..196 the patches: out-of-bounds reads are absent, so
  // row t reads patch t-1 (absent for t = 0) plus cls[2t] (present only for t = 0).
  auto cls = net.weight("embed.cls", {1, d.hidden});
  net.declare("embed.tokens", {batch, tokens, d.hidden});
  auto tok = net.op("embed.tokens", fmt::format("embed.tokens[b,t,e] = {}[b,t-1,e] + {}[2*t,e]", pe, cls));
  auto pos = net.weight("embed.pos", {tokens, d.hidden});
  std::string x = net.op("embed", fmt::format("embed[b,s,e] = {}[b,s,e] + {}[s,e]", tok, pos));
  for (std::int64_t i = 0; i < layers; ++i) x = pre_ln_layer(net, fmt::format("l{}", i), x, d, "gelu");
  auto n = layernorm(net, "norm", x, "b,s", d.hidden);
  auto w = net.weight("head.weight", {d.hidden, 1000});
  auto mm = net.op("head.mm", fmt::format("head.mm[b,n] += {}[b,0,e] * {}[e,n]", n, w));
  auto hb = net.weight("head.bias", {1000});
  net.op("head", fmt::format("head[b,n] = {}[b,n] + {}[n]", mm, hb));
}

// One convolution (NCHW, square kernel) with the folded-BN bias; returns the output name.
std::string conv(Net& net, const std::string& p, const std::string& x, std::int64_t batch,
                 std::int64_t cin, std::int64_t cout, std::int64_t k, std::int64_t stride,
                 std::int64_t pad, std::int64_t& hw) {
  const std::int64_t out = (hw + 2 * pad - k) / stride + 1;
  auto ix = [&](const char* a, const char* ka) {
    std::string s = stride == 1 ? a : fmt::format("{}*{}", stride, a);
    s += fmt::format("+{}", ka);
    if (pad) s += fmt::format("-{}", pad);
    return s;
  };
  auto w = net.weight(p + ".weight", {cout, cin, k, k});
  net.declare(p + ".conv", {batch, cout, out, out});
  net.op(p + ".conv", fmt::format("{}.conv[n,f,y,x] += {}[n,c,{},{}] * {}[f,c,ky,kx]", p, x, ix("y", "ky"),
                                  ix("x", "kx"), w));
  auto b = net.weight(p + ".bias", {cout});
  hw = out;
  return net.op(p, fmt::format("{0}[n,f,y,x] = {0}.conv[n,f,y,x] + {1}[f]", p, b));
}

std::string basic_block(Net& net, const std::string& p, const std::string& x, std::int64_t batch,
                        std::int64_t cin, std::int64_t cout, std::int64_t stride, std::int64_t& hw) {
  const std::int64_t hin = hw;
  auto a = conv(net, p + ".conv1", x, batch, cin, cout, 3, stride, 1, hw);
  auto ar = unary(net, p + ".relu1", "relu", a, "n,c,y,x");
  auto b = conv(net, p + ".conv2", ar, batch, cout, cout, 3, 1, 1, hw);
  std::string skip = x;
  if (stride != 1 || cin != cout) {
    std::int64_t h2 = hin;
    skip = conv(net, p + ".downsample", x, batch, cin, cout, 1, stride, 0, h2);
  }
  auto s = add(net, p + ".add", b, skip, "n,c,y,x");
  return unary(net, p + ".relu", "relu", s, "n,c,y,x");
}

void resnet18(Net& net, std::int64_t batch, std::int64_t, std::int64_t) {
  std::int64_t hw = 224;
  auto img = net.input("image", {batch, 3, hw, hw});
  auto c1 = conv(net, "conv1", img, batch, 3, 64, 7, 2, 3, hw);  // 112
  auto r1 = unary(net, "conv1.relu", "relu", c1, "n,c,y,x");
  hw = (hw + 2 - 3) / 2 + 1;  // 3x3 stride-2 max pool, padding 1: 56
  net.declare("maxpool", {batch, 64, hw, hw});
  std::string x = net.op("maxpool", fmt::format("maxpool[n,c,y,x] max= {}[n,c,2*y+ky-1,2*x+kx-1]", r1),
                         {{"ky", 3}, {"kx", 3}});
  std::int64_t cin = 64;
  for (int stage = 1; stage <= 4; ++stage) {
    const std::int64_t cout = 64LL << (stage - 1);
    for (int blk = 0; blk < 2; ++blk) {
      const std::int64_t stride = stage > 1 && blk == 0 ? 2 : 1;
      x = basic_block(net, fmt::format("layer{}.{}", stage, blk), x, batch, cin, cout, stride, hw);
      cin = cout;
    }
  }
  auto pool = net.op("avgpool", fmt::format("avgpool[b,c] avg= {}[b,c,y,x]", x));
  linear(net, "fc", pool, "b", 512, 1000, true);
}

void nerf(Net& net, std::int64_t batch, std::int64_t samples, std::int64_t hidden_layers) {
  // 63 = xyz (3) plus sin/cos at 10 frequencies (3*2*10) of the positional encoding.
  std::string x = net.input("samples", {batch * samples, 63});
  std::int64_t in = 63;
  for (std::int64_t i = 1; i <= hidden_layers; ++i) {
    auto p = fmt::format("fc{}", i);
    auto y = linear(net, p, x, "r", in, 128, true);
    x = unary(net, p + ".relu", "relu", y, "r,n");
    in = 128;
  }
  linear(net, "out", x, "r", in, 4, true);  // rgb + density
}

void decoder(Net& net, std::int64_t batch, std::int64_t seq, std::int64_t layers, const Dims& d,
             const char* kind) {
  std::string x = net.input("embeddings", {batch, seq, d.hidden});
  std::string decay;
  if (std::string(kind) == "retnet") decay = net.weight("retention.decay", {d.heads, seq, seq});
  for (std::int64_t i = 0; i < layers; ++i) {
    const auto l = fmt::format("l{}", i);
    if (std::string(kind) == "opt") x = pre_ln_layer(net, l, x, d, "relu");
    else if (std::string(kind) == "llama") x = llama_layer(net, l, x, d);
    else x = retnet_layer(net, l, x, d, decay);
  }
}

using BuildFn = std::function<void(Net&, std::int64_t, std::int64_t, std::int64_t)>;

struct ModelSpec {
  std::string name;
  std::int64_t default_seq;     // 0: the model has no sequence-length option
  std::int64_t default_layers;  // 0: the model has no layers option
  const char* seq_note;         // why seq_len is fixed, when it is
  BuildFn build;
};

BuildFn decoder_fn(Dims d, const char* kind) {
  return [d, kind](Net& n, std::int64_t b, std::int64_t s, std::int64_t l) { decoder(n, b, s, l, d, kind); };
}

const std::vector<ModelSpec>& specs() {
  static const std::vector<ModelSpec> all = {
      {"bert-large", 128, 24, "", bert},
      {"llama2-13b", 512, 1, "", decoder_fn({5120, 40, 128, 13824}, "llama")},
      {"llama2-7b", 512, 1, "", decoder_fn({4096, 32, 128, 11008}, "llama")},
      {"nerf", 1024, 2, "", nerf},
      {"opt-1.3b", 512, 1, "", decoder_fn({2048, 32, 64, 8192}, "opt")},
      {"opt-13b", 512, 1, "", decoder_fn({5120, 40, 128, 20480}, "opt")},
      {"opt-6.7b", 512, 1, "", decoder_fn({4096, 32, 128, 16384}, "opt")},
      {"resnet-18", 0, 0, "its input is one 224x224x3 image per batch element", resnet18},
      {"retnet-1.3b", 512, 1, "", decoder_fn({2048, 8, 256, 4096}, "retnet")},
      {"vit-base", 0, 12, "it always has 197 tokens (196 patches of a 224x224 image and a class token)", vit},
  };
  return all;
}

std::string names_list() {
  std::string s;
  for (const auto& n : model_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> out;
  for (const auto& s : specs()) out.push_back(s.name);
  std::sort(out.begin(), out.end());
  return out;
}

bool is_model_name(const std::string& name) {
  for (const auto& s : specs())
    if (s.name == name) return true;
  return false;
}

Workload build_model(const std::string& name, const ModelOptions& opt) {
  const ModelSpec* spec = nullptr;
  for (const auto& s : specs())
    if (s.name == name) spec = &s;
  if (!spec) throw Error(fmt::format("unknown model '{}' (built-in models: {})", name, names_list()));
  auto fail = [&](const std::string& msg) { throw Error(fmt::format("model '{}': {}", name, msg)); };
  if (opt.batch < 1 || opt.batch > 1024) fail(fmt::format("batch must be 1 .. 1024, got {}", opt.batch));
  if (opt.seq_len < 0 || opt.seq_len > 16384)
    fail(fmt::format("seq_len must be 1 .. 16384 (or 0 for the default), got {}", opt.seq_len));
  if (opt.layers < 0 || opt.layers > 256)
    fail(fmt::format("layers must be 1 .. 256 (or 0 for the default), got {}", opt.layers));
  if (spec->default_seq == 0 && opt.seq_len != 0)
    fail(fmt::format("has no sequence length option ({}); leave seq_len 0", spec->seq_note));
  if (spec->default_layers == 0 && opt.layers != 0)
    fail("has a fixed number of layers; leave layers 0");
  Net net;
  net.w.name = name;
  spec->build(net, opt.batch, opt.seq_len ? opt.seq_len : spec->default_seq,
              opt.layers ? opt.layers : spec->default_layers);
  net.w.finalize();
  return std::move(net.w);
}

}  // namespace tessera::ir
