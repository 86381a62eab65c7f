#pragma once
// Operators as tensor expressions over named axes (the T10 / TVM-style notation):
//   C[m,n] += A[m,k] * B[k,n]                        contraction (matmul, conv, attention)
//   O[n,f,y,x] += I[n,c,2*y+ky-1,2*x+kx-1] * W[f,c,ky,kx]   compound (strided, padded) axes
//   Y[m,n] = X[m,n] + B[n]     Y[m,n] = relu(X[m,n])     Y[m,n] = X[m,n] * 0.125
//   Y[m,n] = X[m,n] min 6      Y[m,n] = X[m,n] pow 2     Y[m,n] = sigmoid(X[m,n])  (tanh, erf, sqrt)
//   S[m] += X[m,n]             S[m] max= X[m,n]          O[n,c] avg= I[n,c,h,w]
//   Y[m,n] = softmax(X[m,n])   Y[m,n] = layernorm(X[m,n], G[n], B[n])   (along the last axis;
//   a last numeric argument is the epsilon: layernorm(X[m,n], G[n], B[n], 1e-6))
// An index is a sum of coeff*axis terms plus a constant; reads outside a tensor's bounds are
// "absent" (zero in sums, skipped in max), which is how convolution and pooling padding works.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tessera::ir {

struct IndexTerm {
  std::int64_t coeff = 1;
  std::string axis;
};

struct Index {
  std::vector<IndexTerm> terms;
  std::int64_t offset = 0;
  // A plain axis: one term, coefficient 1, no offset. Only plain dimensions may rotate.
  bool plain() const { return terms.size() == 1 && terms[0].coeff == 1 && offset == 0; }
  std::string str() const;
};

struct Access {
  std::string tensor;
  std::vector<Index> indices;
  std::string str() const;
};

enum class ExprKind { Contraction, Elementwise, Reduction, Softmax, Layernorm };
enum class Reduce { None, Sum, Max, Mean };  // '=', '+=', 'max=', 'avg='
// Element-wise function or binary combination of the right-hand side.
enum class Fn { Copy, Add, Sub, Mul, Div, Max, Relu, Gelu, Exp, Softmax, Layernorm, Min, Pow, Sigmoid, Tanh, Erf, Sqrt };

// What layernorm adds to the variance when its expression names no epsilon (PyTorch's default).
constexpr double kLayernormEpsilon = 1e-5;

struct Expr {
  ExprKind kind = ExprKind::Elementwise;
  Access output;
  Reduce reduce = Reduce::None;
  Fn fn = Fn::Copy;
  std::vector<Access> inputs;        // 1 or 2 tensors (layernorm: x, and optionally gamma, beta)
  std::optional<double> scalar;      // X[..] * 0.125: the constant operand of a binary fn
  bool scalar_first = false;         // 2.0 - X[..]
  std::optional<double> epsilon;     // layernorm's, when written (`layernorm(X[..], 1e-6)`); else kLayernormEpsilon
  std::string text;                  // as written

  std::vector<std::string> output_axes() const;     // in output order
  std::vector<std::string> reduction_axes() const;  // axes not in the output, first-seen order
  std::vector<std::string> all_axes() const;        // output axes, then reduction axes
};

// Parses one expression; errors (tessera::Error) quote the text and point at the column.
Expr parse_expr(const std::string& text);

const char* fn_name(Fn f);
const char* kind_name(ExprKind k);

// Value of an index for given axis values.
inline std::int64_t eval_index(const Index& ix, const std::map<std::string, std::int64_t>& at) {
  std::int64_t v = ix.offset;
  for (const auto& t : ix.terms) v += t.coeff * at.at(t.axis);
  return v;
}

}  // namespace tessera::ir
