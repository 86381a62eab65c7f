// The tensor-expression parser: every kind of expression, compound indices, and the error
// messages for malformed text (they quote the text and give the column of the problem).
#include <catch2/catch.hpp>

#include "compiler/ir/expr.h"
#include "sim/common/error.h"

using namespace tessera;
using namespace tessera::ir;
using Catch::Contains;
using Names = std::vector<std::string>;

namespace {
std::string error_of(const std::string& text) {
  try {
    parse_expr(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("expr: contraction", "[expr]") {
  Expr e = parse_expr("C[m,n] += A[m,k] * B[k,n]");
  CHECK(e.kind == ExprKind::Contraction);
  CHECK(e.reduce == Reduce::Sum);
  CHECK(e.fn == Fn::Mul);
  CHECK(e.output.tensor == "C");
  REQUIRE(e.inputs.size() == 2);
  CHECK(e.inputs[0].str() == "A[m,k]");
  CHECK(e.inputs[1].str() == "B[k,n]");
  CHECK(e.output_axes() == Names{"m", "n"});
  CHECK(e.reduction_axes() == Names{"k"});
  CHECK(e.all_axes() == Names{"m", "n", "k"});
  CHECK_FALSE(e.scalar);
  CHECK(e.text == "C[m,n] += A[m,k] * B[k,n]");

  // Multi-dimensional (attention) with dotted names and two reduction axes in first-seen order.
  Expr a = parse_expr("l3.attn.out[b,s,e]+=l3.attn.ctx[b,s,h,d]*l3.attn.o.weight[h,d,e]");
  CHECK(a.kind == ExprKind::Contraction);
  CHECK(a.output.tensor == "l3.attn.out");
  CHECK(a.inputs[1].tensor == "l3.attn.o.weight");
  CHECK(a.reduction_axes() == Names{"h", "d"});
}

TEST_CASE("expr: compound, strided, padded and constant indices", "[expr]") {
  Expr e = parse_expr("O[n,f,y,x] += I[n,c,2*y+ky-1,2*x+kx-1] * W[f,c,ky,kx]");
  CHECK(e.kind == ExprKind::Contraction);
  const Index& iy = e.inputs[0].indices[2];
  REQUIRE(iy.terms.size() == 2);
  CHECK(iy.terms[0].coeff == 2);
  CHECK(iy.terms[0].axis == "y");
  CHECK(iy.terms[1].coeff == 1);
  CHECK(iy.terms[1].axis == "ky");
  CHECK(iy.offset == -1);
  CHECK_FALSE(iy.plain());
  CHECK(e.inputs[0].indices[0].plain());
  CHECK(iy.str() == "2*y+ky-1");
  CHECK(e.inputs[0].str() == "I[n,c,2*y+ky-1,2*x+kx-1]");
  CHECK(e.reduction_axes() == Names{"c", "ky", "kx"});
  CHECK(eval_index(iy, {{"y", 5}, {"ky", 0}}) == 9);
  CHECK(eval_index(iy, {{"y", 0}, {"ky", 0}}) == -1);  // padding: an absent read

  Expr c = parse_expr("H[b,e] += X[b, 0 ,e] * W[e , 7]");  // constant indices, spaces
  CHECK(c.inputs[0].indices[1].terms.empty());
  CHECK(c.inputs[0].indices[1].offset == 0);
  CHECK(c.inputs[0].indices[1].str() == "0");
  CHECK(c.inputs[1].indices[1].str() == "7");
  CHECK(c.output_axes() == Names{"b", "e"});

  Expr s = parse_expr("T[b,t,e] = P[b,t-1,e] + C[2*t,e]");
  CHECK(s.kind == ExprKind::Elementwise);
  CHECK(s.inputs[0].indices[1].str() == "t-1");
  CHECK(s.inputs[1].indices[0].str() == "2*t");
  CHECK(parse_expr("Y[i] = X[-3+i]").inputs[0].indices[0].str() == "i-3");
  CHECK(parse_expr("Y[i,j] = X[3*i+2*j+4]").inputs[0].indices[0].str() == "3*i+2*j+4");
}

TEST_CASE("expr: elementwise binary ops, broadcasting and scalar operands", "[expr]") {
  struct Case {
    const char* text;
    Fn fn;
  };
  for (const Case& c : {Case{"Y[m,n] = X[m,n] + B[n]", Fn::Add}, Case{"Y[m,n] = X[m,n] - B[n]", Fn::Sub},
                        Case{"Y[m,n] = X[m,n] * B[m,n]", Fn::Mul}, Case{"Y[m,n] = X[m,n] / B[m]", Fn::Div},
                        Case{"Y[m,n] = X[m,n] max B[m,n]", Fn::Max}}) {
    INFO(c.text);
    Expr e = parse_expr(c.text);
    CHECK(e.kind == ExprKind::Elementwise);
    CHECK(e.reduce == Reduce::None);
    CHECK(e.fn == c.fn);
    CHECK(e.inputs.size() == 2);
    CHECK_FALSE(e.scalar);
    CHECK(e.reduction_axes().empty());
  }
  Expr s = parse_expr("T[b,h,i,j] = S[b,h,i,j] * 0.125");
  CHECK(s.kind == ExprKind::Elementwise);
  CHECK(s.fn == Fn::Mul);
  REQUIRE(s.scalar);
  CHECK(*s.scalar == 0.125);
  CHECK_FALSE(s.scalar_first);
  CHECK(s.inputs.size() == 1);

  Expr f = parse_expr("Y[m] = 2.5 - X[m]");
  CHECK(f.fn == Fn::Sub);
  CHECK(*f.scalar == 2.5);
  CHECK(f.scalar_first);
  CHECK(f.inputs.size() == 1);
  CHECK(*parse_expr("Y[m] = X[m] / 1e-3").scalar == 0.001);
  CHECK(*parse_expr("Y[m] = X[m] max 0").scalar == 0);

  Expr cp = parse_expr("Y[n,m] = X[m,n]");  // copy (a transpose)
  CHECK(cp.kind == ExprKind::Elementwise);
  CHECK(cp.fn == Fn::Copy);
  CHECK(cp.output_axes() == Names{"n", "m"});
}

TEST_CASE("expr: unary functions, softmax and layernorm", "[expr]") {
  CHECK(parse_expr("Y[m,n] = relu(X[m,n])").fn == Fn::Relu);
  CHECK(parse_expr("Y[m,n] = gelu(X[m,n])").fn == Fn::Gelu);
  Expr ex = parse_expr("Y[m,n] = exp (X[m,n])");
  CHECK(ex.fn == Fn::Exp);
  CHECK(ex.kind == ExprKind::Elementwise);

  Expr sm = parse_expr("P[b,h,i,j] = softmax(T[b,h,i,j])");
  CHECK(sm.kind == ExprKind::Softmax);
  CHECK(sm.fn == Fn::Softmax);
  CHECK(sm.output_axes().back() == "j");

  Expr ln = parse_expr("Y[b,s,e] = layernorm(X[b,s,e], G[e], B[e])");
  CHECK(ln.kind == ExprKind::Layernorm);
  REQUIRE(ln.inputs.size() == 3);
  CHECK(ln.inputs[1].str() == "G[e]");
  CHECK(ln.inputs[2].str() == "B[e]");
  CHECK(parse_expr("Y[b,s,e] = layernorm(X[b,s,e])").inputs.size() == 1);
  CHECK(!ln.epsilon);
  // a last numeric argument is the epsilon, with or without gamma and beta
  const Expr lne = parse_expr("Y[b,s,e] = layernorm(X[b,s,e], G[e], B[e], 1e-12)");
  CHECK(lne.inputs.size() == 3);
  CHECK(lne.epsilon == 1e-12);
  CHECK(parse_expr("Y[b,e] = layernorm(X[b,e], 0.5)").epsilon == 0.5);
  CHECK_THROWS_WITH(parse_expr("Y[b,e] = layernorm(X[b,e], 0)"), Contains("layernorm's epsilon must be positive"));
  CHECK_THROWS_WITH(parse_expr("Y[b,e] = layernorm(X[b,e], -1e-6)"), Contains("layernorm's epsilon must be positive"));
  CHECK_THROWS_WITH(parse_expr("Y[b,e] = layernorm(X[b,e], 1e-6, G[e])"), Contains("expected ')' after layernorm's epsilon"));
  CHECK_THROWS_WITH(parse_expr("Y[b,e] = softmax(X[b,e], 1e-6)"), Contains("expected a name"));
  CHECK(std::string(kind_name(ExprKind::Layernorm)) == "layernorm");
  CHECK(std::string(fn_name(Fn::Gelu)) == "gelu");
}

TEST_CASE("expr: reductions sum, max and avg", "[expr]") {
  Expr s = parse_expr("S[m] += X[m,n]");
  CHECK(s.kind == ExprKind::Reduction);
  CHECK(s.reduce == Reduce::Sum);
  CHECK(s.fn == Fn::Copy);
  CHECK(s.reduction_axes() == Names{"n"});

  Expr mx = parse_expr("M[n,c,y,x] max= R[n,c,2*y+ky-1,2*x+kx-1]");
  CHECK(mx.kind == ExprKind::Reduction);
  CHECK(mx.reduce == Reduce::Max);
  CHECK(mx.reduction_axes() == Names{"ky", "kx"});

  Expr av = parse_expr("O[n,c] avg= I[n,c,h,w]");
  CHECK(av.kind == ExprKind::Reduction);
  CHECK(av.reduce == Reduce::Mean);
  CHECK(av.reduction_axes() == Names{"h", "w"});
}

TEST_CASE("expr: malformed text gives the column and the problem", "[expr]") {
  // Columns are 1-based.
  CHECK_THAT(error_of("C[m,n] A[m,k]"),
             Contains("expression \"C[m,n] A[m,k]\"") && Contains("column 8: expected '=', '+=', 'max=' or 'avg='"));
  CHECK_THAT(error_of("C[m,n] = foo(A[m,n])"), Contains("column 10: unknown function 'foo'"));
  CHECK_THAT(error_of("C[m,n] = A[m,n] % B[m,n]"), Contains("column 17: expected '*', '+', '-', '/', 'max', 'min' or 'pow'"));
  CHECK_THAT(error_of("C[m,n] = A[m,n"), Contains("column 15: expected ',' or ']'"));
  CHECK_THAT(error_of("C[] = A[m]"), Contains("tensor 'C' needs at least one index"));
  CHECK_THAT(error_of("C = A[m]"), Contains("column 3: expected '[' after tensor 'C'"));
  CHECK_THAT(error_of("[m] = A[m]"), Contains("column 1: expected a name"));
  CHECK_THAT(error_of("C[m] = A[m] B[m]"), Contains("column 13: expected '*', '+', '-', '/', 'max', 'min' or 'pow'"));
  CHECK_THAT(error_of("C[m] = A[m] + B[m] + D[m]"), Contains("column 20: unexpected text after the expression"));
  CHECK_THAT(error_of("C[m] = relu(A[m]"), Contains("expected ',' or ')'"));
  CHECK_THAT(error_of("C[m] = 2 A[m]"), Contains("column 10: expected an operator after the number"));
  CHECK_THAT(error_of("C[m] = A[m] * 1e999"), Contains("number out of range"));
  CHECK_THAT(error_of("C[m] = A[99999999999999999999*m]"), Contains("column 10: integer too large"));

  // Index rules.
  CHECK_THAT(error_of("C[m] = A[m-n]"), Contains("axis 'n' needs a positive coefficient"));
  CHECK_THAT(error_of("C[m] = A[m+m]"), Contains("axis 'm' appears twice in one index"));
  CHECK_THAT(error_of("C[m] = A[m*2]"), Contains("column 11: expected ',' or ']'"));
  CHECK_THAT(error_of("C[m+1] = A[m]"), Contains("output 'C' must be indexed by plain axes, got 'm+1'"));
  CHECK_THAT(error_of("C[2*m] = A[m]"), Contains("must be indexed by plain axes"));
  CHECK_THAT(error_of("C[m,m] = A[m]"), Contains("output axis 'm' appears twice"));

  // Kinds.
  CHECK_THAT(error_of("C[m] = A[m,k]"), Contains("axis 'k' is not in the output: use '+=', 'max=' or 'avg='"));
  CHECK_THAT(error_of("C[m] += A[m,k] + B[k]"), Contains("a reduction is either"));
  CHECK_THAT(error_of("C[m] max= A[m,k] * B[k]"), Contains("a reduction is either"));
  CHECK_THAT(error_of("C[m] += A[m,k] * 2"), Contains("a reduction is either"));
  CHECK_THAT(error_of("C[m] += softmax(A[m,k])"), Contains("softmax is written 'Y[..] = softmax(X[..])'"));
  CHECK_THAT(error_of("C[m] = layernorm(A[m], G[m])"), Contains("layernorm takes x, or x, gamma and beta"));
  CHECK_THAT(error_of("C[m] = relu(A[m], B[m])"), Contains("relu takes one tensor"));
  CHECK_THROWS_AS(parse_expr(""), Error);
}
