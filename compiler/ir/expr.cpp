#include "compiler/ir/expr.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include "sim/common/error.h"

namespace tessera::ir {

std::string Index::str() const {
  std::string s;
  for (const auto& t : terms) {
    if (!s.empty()) s += "+";
    if (t.coeff != 1) s += fmt::format("{}*", t.coeff);
    s += t.axis;
  }
  if (offset > 0) s += fmt::format("{}{}", s.empty() ? "" : "+", offset);
  if (offset < 0) s += fmt::format("{}", offset);
  if (s.empty()) s = "0";
  return s;
}

std::string Access::str() const {
  std::string s = tensor + "[";
  for (std::size_t i = 0; i < indices.size(); ++i) s += (i ? "," : "") + indices[i].str();
  return s + "]";
}

const char* fn_name(Fn f) {
  switch (f) {
    case Fn::Copy: return "copy";
    case Fn::Add: return "add";
    case Fn::Sub: return "sub";
    case Fn::Mul: return "mul";
    case Fn::Div: return "div";
    case Fn::Max: return "max";
    case Fn::Relu: return "relu";
    case Fn::Gelu: return "gelu";
    case Fn::Exp: return "exp";
    case Fn::Softmax: return "softmax";
    case Fn::Layernorm: return "layernorm";
    case Fn::Min: return "min";
    case Fn::Pow: return "pow";
    case Fn::Sigmoid: return "sigmoid";
    case Fn::Tanh: return "tanh";
    case Fn::Erf: return "erf";
    case Fn::Sqrt: return "sqrt";
  }
  return "?";
}

const char* kind_name(ExprKind k) {
  switch (k) {
    case ExprKind::Contraction: return "contraction";
    case ExprKind::Elementwise: return "elementwise";
    case ExprKind::Reduction: return "reduction";
    case ExprKind::Softmax: return "softmax";
    case ExprKind::Layernorm: return "layernorm";
  }
  return "?";
}

std::vector<std::string> Expr::output_axes() const {
  std::vector<std::string> out;
  for (const auto& ix : output.indices) out.push_back(ix.terms[0].axis);
  return out;
}

std::vector<std::string> Expr::reduction_axes() const {
  auto outs = output_axes();
  std::vector<std::string> red;
  for (const auto& in : inputs)
    for (const auto& ix : in.indices)
      for (const auto& t : ix.terms)
        if (std::find(outs.begin(), outs.end(), t.axis) == outs.end() &&
            std::find(red.begin(), red.end(), t.axis) == red.end())
          red.push_back(t.axis);
  return red;
}

std::vector<std::string> Expr::all_axes() const {
  auto a = output_axes();
  for (auto& r : reduction_axes()) a.push_back(r);
  return a;
}

namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Expr parse() {
    Expr e;
    e.text = s_;
    e.output = access();
    skip();
    if (eat("+=")) e.reduce = Reduce::Sum;
    else if (eat("max=")) e.reduce = Reduce::Max;
    else if (eat("avg=")) e.reduce = Reduce::Mean;
    else if (eat("=")) e.reduce = Reduce::None;
    else fail("expected '=', '+=', 'max=' or 'avg=' after the output tensor");
    rhs(e);
    skip();
    if (pos_ != s_.size()) fail("unexpected text after the expression");
    check_output(e);
    classify(e);
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const {
    throw Error(fmt::format("expression \"{}\": column {}: {}", s_, pos_ + 1, msg));
  }
  void skip() { while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_; }
  bool eat(const std::string& tok) {
    skip();
    if (s_.compare(pos_, tok.size(), tok) == 0) { pos_ += tok.size(); return true; }
    return false;
  }
  bool peek_name() {
    skip();
    return pos_ < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_');
  }
  bool peek_number() {
    skip();
    return pos_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.');
  }
  std::string name() {
    if (!peek_name()) fail("expected a name");
    std::size_t b = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_' ||
                                s_[pos_] == '.' || s_[pos_] == '/' || s_[pos_] == ':'))
      ++pos_;
    return s_.substr(b, pos_ - b);
  }
  double number() {
    skip();
    const char* b = s_.c_str() + pos_;
    char* e = nullptr;
    double v = std::strtod(b, &e);
    if (e == b) fail("expected a number");
    if (!std::isfinite(v)) fail("number out of range");
    pos_ += static_cast<std::size_t>(e - b);
    return v;
  }
  std::int64_t integer() {
    skip();
    std::size_t b = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (b == pos_) fail("expected an integer");
    if (pos_ - b > 12) { pos_ = b; fail("integer too large"); }
    return std::stoll(s_.substr(b, pos_ - b));
  }

  // term := INT | INT '*' axis | axis ;  index := ['-'] term (('+'|'-') term)*
  Index index() {
    Index ix;
    bool neg = eat("-");
    for (;;) {
      std::int64_t sign = neg ? -1 : 1;
      if (peek_number()) {
        std::int64_t v = integer();
        if (eat("*")) ix.terms.push_back({sign * v, name()});
        else ix.offset += sign * v;
      } else {
        std::string a = name();
        ix.terms.push_back({sign, a});
      }
      if (eat("+")) neg = false;
      else if (eat("-")) neg = true;
      else break;
    }
    for (const auto& t : ix.terms)
      if (t.coeff <= 0) fail(fmt::format("axis '{}' needs a positive coefficient", t.axis));
    for (std::size_t i = 0; i < ix.terms.size(); ++i)
      for (std::size_t j = i + 1; j < ix.terms.size(); ++j)
        if (ix.terms[i].axis == ix.terms[j].axis) fail(fmt::format("axis '{}' appears twice in one index", ix.terms[i].axis));
    return ix;
  }

  Access access() {
    Access a;
    a.tensor = name();
    if (!eat("[")) fail(fmt::format("expected '[' after tensor '{}'", a.tensor));
    if (eat("]")) fail(fmt::format("tensor '{}' needs at least one index", a.tensor));
    do a.indices.push_back(index()); while (eat(","));
    if (!eat("]")) fail("expected ',' or ']'");
    return a;
  }

  // operand := access | number | fn '(' access {',' access} ')'
  void rhs(Expr& e) {
    skip();
    const bool negative = pos_ + 1 < s_.size() && s_[pos_] == '-' &&
                          (std::isdigit(static_cast<unsigned char>(s_[pos_ + 1])) || s_[pos_ + 1] == '.');
    if (peek_number() || negative) {  // `-1 - X[..]`
      e.scalar = number();
      e.scalar_first = true;
      binary(e, true);
      e.inputs.push_back(access());
      return;
    }
    std::size_t save = pos_;
    std::string n = name();
    skip();
    if (pos_ < s_.size() && s_[pos_] == '(') {
      ++pos_;
      static const std::map<std::string, Fn> fns = {
          {"relu", Fn::Relu},       {"gelu", Fn::Gelu}, {"exp", Fn::Exp}, {"softmax", Fn::Softmax},
          {"layernorm", Fn::Layernorm}, {"sigmoid", Fn::Sigmoid}, {"tanh", Fn::Tanh}, {"erf", Fn::Erf},
          {"sqrt", Fn::Sqrt}};
      auto it = fns.find(n);
      if (it == fns.end()) {
        pos_ = save;
        fail(fmt::format("unknown function '{}' (expected relu, gelu, exp, sigmoid, tanh, erf, sqrt, softmax or "
                         "layernorm)", n));
      }
      e.fn = it->second;
      do {
        // layernorm's last argument may be its epsilon: `layernorm(X[..], G[e], B[e], 1e-6)`
        skip();
        const bool minus = pos_ < s_.size() && s_[pos_] == '-';
        if (e.fn == Fn::Layernorm && !e.inputs.empty() && (peek_number() || minus)) {
          const double eps = number();
          if (!(eps > 0)) fail("layernorm's epsilon must be positive");
          e.epsilon = eps;
          break;
        }
        e.inputs.push_back(access());
      } while (eat(","));
      if (!eat(")")) fail(e.epsilon ? "expected ')' after layernorm's epsilon" : "expected ',' or ')'");
      std::size_t want_max = e.fn == Fn::Layernorm ? 3 : 1;
      if (e.inputs.size() > want_max || (e.fn == Fn::Layernorm && e.inputs.size() == 2))
        fail(fmt::format("{} takes {}", n, e.fn == Fn::Layernorm ? "x, or x, gamma and beta (then an epsilon, 1e-5 if none)" : "one tensor"));
      return;
    }
    pos_ = save;
    e.inputs.push_back(access());
    skip();
    if (pos_ == s_.size()) { e.fn = Fn::Copy; return; }
    binary(e, false);
    skip();
    const bool negative_scalar = pos_ + 1 < s_.size() && s_[pos_] == '-' &&
                          (std::isdigit(static_cast<unsigned char>(s_[pos_ + 1])) || s_[pos_ + 1] == '.');
    if (peek_number() || negative_scalar) e.scalar = number();  // `X[..] max -1`
    else e.inputs.push_back(access());
  }

  void binary(Expr& e, bool after_scalar) {
    skip();
    if (eat("*")) e.fn = Fn::Mul;
    else if (eat("+")) e.fn = Fn::Add;
    else if (eat("-")) e.fn = Fn::Sub;
    else if (eat("/")) e.fn = Fn::Div;
    else if (eat("max")) e.fn = Fn::Max;
    else if (eat("min")) e.fn = Fn::Min;
    else if (eat("pow")) e.fn = Fn::Pow;
    else fail(after_scalar ? "expected an operator after the number" : "expected '*', '+', '-', '/', 'max', 'min' or 'pow'");
  }

  void check_output(const Expr& e) {
    std::vector<std::string> seen;
    for (const auto& ix : e.output.indices) {
      if (!ix.plain()) fail(fmt::format("output '{}' must be indexed by plain axes, got '{}'", e.output.tensor, ix.str()));
      const auto& a = ix.terms[0].axis;
      if (std::find(seen.begin(), seen.end(), a) != seen.end()) fail(fmt::format("output axis '{}' appears twice", a));
      seen.push_back(a);
    }
  }

  void classify(Expr& e) {
    bool has_red = !e.reduction_axes().empty();
    if (e.fn == Fn::Softmax || e.fn == Fn::Layernorm) {
      if (e.reduce != Reduce::None || has_red) fail(fmt::format("{} is written 'Y[..] = {}(X[..])' with the same axes", fn_name(e.fn), fn_name(e.fn)));
      e.kind = e.fn == Fn::Softmax ? ExprKind::Softmax : ExprKind::Layernorm;
      return;
    }
    if (e.reduce == Reduce::None) {
      if (has_red) fail(fmt::format("axis '{}' is not in the output: use '+=', 'max=' or 'avg=' to reduce over it", e.reduction_axes()[0]));
      e.kind = ExprKind::Elementwise;
      return;
    }
    if (e.inputs.size() == 2 && e.fn == Fn::Mul && e.reduce == Reduce::Sum && !e.scalar) {
      e.kind = ExprKind::Contraction;
      return;
    }
    if (e.inputs.size() == 1 && e.fn == Fn::Copy && !e.scalar) {
      e.kind = ExprKind::Reduction;
      return;
    }
    fail("a reduction is either 'O[..] += A[..] * B[..]' or 'O[..] (+=|max=|avg=) X[..]'");
  }

  const std::string& s_;
  std::size_t pos_ = 0;
};

}  // namespace

Expr parse_expr(const std::string& text) { return Parser(text).parse(); }

}  // namespace tessera::ir
