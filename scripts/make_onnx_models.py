#!/usr/bin/python3
"""Builds small ONNX models for the importer's tests (test/ir/onnx_import_test.cpp).

Usage: /usr/bin/python3 scripts/make_onnx_models.py OUT_DIR

Uses Debian's python3-onnx and python3-numpy only; nothing is downloaded. Weights are random
(the importer reads their shapes, never their values). The valid models pass onnx.checker.

  mlp.onnx          MatMul + Add + Relu, then Gemm (transB, bias)
  convnet.onnx      Conv (pads, strides, bias) + Relu + MaxPool + Conv + Relu
                    + GlobalAveragePool + Flatten + Gemm
  attention.onnx    pre-LN attention block (LayerNormalization, MatMul, Reshape splitting heads,
                    Transpose, scalar Mul, Softmax, Reshape merging heads) and an FFN whose GELU is
                    the Erf pattern x * (1 + erf(x / sqrt 2)) * 0.5
  ops.onnx          batched MatMul with a broadcast weight, Gelu (com.microsoft), scalar Div/Sub/
                    Mul/Add, Unsqueeze/Squeeze, Transpose into Softmax, AveragePool with pads,
                    broadcast Add, Gemm (transA, bias [M,1]), Transpose+Reshape merge into Relu
  variants.onnx     the other two GELU-with-Erf association orders (constants from Constant
                    nodes, x * (1/sqrt 2) instead of x / sqrt 2), Identity, LayerNormalization
                    without bias (two operators), names that need sanitizing
  unsupported.onnx  a TopK node (error test)
  softmax_axis.onnx Softmax along axis 1 of a 3-D tensor (error test)
  bad_reshape.onnx  Reshape [4,6] -> [6,4] (error test)
  symbolic.onnx     an input with a symbolic batch dimension (error test)
  lone_erf.onnx     Erf outside the GELU pattern (error test)
  merge_window.onnx a Reshape merging [4,4] into a convolution's spatial dimension (made solid)
  resplit.onnx      a Reshape merging [2,3] into 6, then one splitting 6 into [3,2] (made solid)
  folding.onnx      Shape -> Gather -> Unsqueeze -> Concat -> Reshape (folded at import) + Relu
  dataops.onnx      Slice, Concat, Where on a constant mask, Sigmoid, Clip, ReduceMean, Pow
  depthwise.onnx    a depthwise (group = channels) convolution
  einsum.onnx       Einsum: a two-operand contraction and a one-operand sum
  problems.onnx     two unsupported nodes in one model (error test: both are reported)
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, checker, helper, numpy_helper

RNG = np.random.default_rng(0)
OPSET = [helper.make_opsetid("", 17)]


def weight(name, *shape):
    return numpy_helper.from_array(RNG.standard_normal(shape).astype(np.float32), name)


def ints(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def scalar(name, value, shape=()):
    return numpy_helper.from_array(np.full(shape, value, dtype=np.float32), name)


def vi(name, shape, dtype=TensorProto.FLOAT):
    return helper.make_tensor_value_info(name, dtype, shape)


def save(out_dir, name, nodes, inputs, outputs, inits, check=True, opset=None):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=opset or OPSET, producer_name="tessera-tests")
    model.ir_version = 8
    if check:
        checker.check_model(model)
    onnx.save(model, os.path.join(out_dir, name + ".onnx"))


def mlp(out):
    nodes = [
        helper.make_node("MatMul", ["x", "fc1.weight"], ["fc1.mm"], name="fc1"),
        helper.make_node("Add", ["fc1.mm", "fc1.bias"], ["fc1.out"], name="fc1_bias"),
        helper.make_node("Relu", ["fc1.out"], ["act"], name="relu"),
        helper.make_node("Gemm", ["act", "fc2.weight", "fc2.bias"], ["logits"], name="fc2",
                         transB=1),
    ]
    inits = [weight("fc1.weight", 16, 32), weight("fc1.bias", 32), weight("fc2.weight", 10, 32),
             weight("fc2.bias", 10)]
    save(out, "mlp", nodes, [vi("x", [4, 16])], [vi("logits", [4, 10])], inits)


def convnet(out):
    nodes = [
        helper.make_node("Conv", ["image", "conv1.w", "conv1.b"], ["c1"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["p1", "conv2.w"], ["c2"], name="conv2", kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
    ]
    inits = [weight("conv1.w", 8, 3, 3, 3), weight("conv1.b", 8), weight("conv2.w", 16, 8, 3, 3),
             weight("fc.w", 10, 16), weight("fc.b", 10)]
    save(out, "convnet", nodes, [vi("image", [1, 3, 16, 16])], [vi("logits", [1, 10])], inits)


def attention(out):
    d, heads, hd, seq, ff = 32, 4, 8, 6, 64
    N = helper.make_node
    nodes = [
        N("LayerNormalization", ["x", "ln1.g", "ln1.b"], ["h"], name="ln1", axis=-1),
        N("MatMul", ["h", "wq"], ["q"], name="q_proj"),
        N("MatMul", ["h", "wk"], ["k"], name="k_proj"),
        N("MatMul", ["h", "wv"], ["v"], name="v_proj"),
        N("Reshape", ["q", "heads_shape"], ["q4"], name="q_split"),
        N("Transpose", ["q4"], ["qt"], name="q_t", perm=[0, 2, 1, 3]),
        N("Reshape", ["k", "heads_shape"], ["k4"], name="k_split"),
        N("Transpose", ["k4"], ["kt"], name="k_t", perm=[0, 2, 3, 1]),
        N("Reshape", ["v", "heads_shape"], ["v4"], name="v_split"),
        N("Transpose", ["v4"], ["vt"], name="v_t", perm=[0, 2, 1, 3]),
        N("MatMul", ["qt", "kt"], ["scores"], name="qk"),
        N("Mul", ["scores", "scale"], ["scaled"], name="scale"),
        N("Softmax", ["scaled"], ["probs"], name="softmax", axis=-1),
        N("MatMul", ["probs", "vt"], ["ctx"], name="pv"),
        N("Transpose", ["ctx"], ["ctx_t"], name="ctx_t", perm=[0, 2, 1, 3]),
        N("Reshape", ["ctx_t", "merge_shape"], ["ctx_m"], name="ctx_merge"),
        N("MatMul", ["ctx_m", "wo"], ["attn"], name="o_proj"),
        N("Add", ["x", "attn"], ["res1"], name="residual1"),
        N("LayerNormalization", ["res1", "ln2.g", "ln2.b"], ["h2"], name="ln2", axis=-1),
        N("MatMul", ["h2", "w1"], ["f1"], name="ffn1"),
        N("Add", ["f1", "b1"], ["f1b"], name="ffn1_bias"),
        # GELU as exported by PyTorch: x * (1 + erf(x / sqrt(2))) * 0.5
        N("Div", ["f1b", "sqrt2"], ["g_div"], name="gelu_div"),
        N("Erf", ["g_div"], ["g_erf"], name="gelu_erf"),
        N("Add", ["g_erf", "one"], ["g_add"], name="gelu_add"),
        N("Mul", ["f1b", "g_add"], ["g_mul"], name="gelu_mul"),
        N("Mul", ["g_mul", "half"], ["gelu"], name="gelu_half"),
        N("MatMul", ["gelu", "w2"], ["f2"], name="ffn2"),
        N("Add", ["f2", "b2"], ["f2b"], name="ffn2_bias"),
        N("Add", ["res1", "f2b"], ["y"], name="residual2"),
    ]
    inits = [
        weight("ln1.g", d), weight("ln1.b", d),
        weight("wq", d, d), weight("wk", d, d), weight("wv", d, d), weight("wo", d, d),
        ints("heads_shape", [1, seq, heads, hd]), ints("merge_shape", [1, seq, d]),
        scalar("scale", 1.0 / np.sqrt(hd)),
        weight("ln2.g", d), weight("ln2.b", d),
        weight("w1", d, ff), weight("b1", ff), weight("w2", ff, d), weight("b2", d),
        scalar("sqrt2", np.sqrt(2.0)), scalar("one", 1.0), scalar("half", 0.5),
    ]
    save(out, "attention", nodes, [vi("x", [1, seq, d])], [vi("y", [1, seq, d])], inits)


def ops(out):
    N = helper.make_node
    nodes = [
        N("MatMul", ["a", "b"], ["mm"], name="bmm"),                      # [2,3,4,8] x [1,8,5]
        N("Gelu", ["mm"], ["g"], name="gelu", domain="com.microsoft"),
        N("Div", ["g", "two"], ["d"], name="div2"),
        N("Sub", ["one", "d"], ["s"], name="one_minus"),
        N("Unsqueeze", ["s", "axis1"], ["u"], name="unsq"),               # [2,1,3,4,5]
        N("Squeeze", ["u", "axis1"], ["sq"], name="sq"),                  # [2,3,4,5]
        N("Transpose", ["sq"], ["st"], name="swap", perm=[0, 1, 3, 2]),   # [2,3,5,4]
        N("Softmax", ["st"], ["sm"], name="softmax"),
        N("AveragePool", ["sm"], ["ap"], name="avgpool", kernel_shape=[2, 2],
          pads=[0, 0, 1, 1]),                                            # [2,3,5,4]
        N("Add", ["ap", "v"], ["apv"], name="bcast_add"),                 # v: [3,1,4]
        N("Mul", ["half", "apv"], ["hm"], name="halve"),
        N("Add", ["hm", "minus1"], ["out1"], name="minus_one"),
        N("Gemm", ["gin", "gw", "gc"], ["out2"], name="gemm_ta", transA=1),  # [6,4]^T x [6,3]
        N("Transpose", ["x"], ["xt"], name="xt", perm=[0, 2, 1]),        # [2,4,3]
        N("Reshape", ["xt", "shape_2_12"], ["xm"], name="merge"),         # [2,12]
        N("Relu", ["xm"], ["out3"], name="relu_merged"),
    ]
    inits = [
        weight("b", 1, 8, 5), weight("v", 3, 1, 4), weight("gw", 6, 3), weight("gc", 4, 1),
        scalar("two", 2.0), scalar("one", 1.0, (1,)), scalar("half", 0.5), scalar("minus1", -1.0),
        ints("axis1", [1]), ints("shape_2_12", [2, 12]),
    ]
    inputs = [vi("a", [2, 3, 4, 8]), vi("gin", [6, 4]), vi("x", [2, 3, 4])]
    outputs = [vi("out1", [2, 3, 5, 4]), vi("out2", [4, 3]), vi("out3", [2, 12])]
    opset = OPSET + [helper.make_opsetid("com.microsoft", 1)]
    save(out, "ops", nodes, inputs, outputs, inits, opset=opset)


def variants(out):
    N = helper.make_node

    def const(name, value):
        return N("Constant", [], [name], name=name + "_const", value_float=value)

    nodes = [
        const("c_rsqrt2", float(1.0 / np.sqrt(2.0))), const("c_one", 1.0), const("c_half", 0.5),
        # 0.5 * x times (1 + erf(x * (1/sqrt 2)))
        N("Mul", ["c_rsqrt2", "x"], ["e1_in"], name="g1_scale"),
        N("Erf", ["e1_in"], ["e1"], name="g1_erf"),
        N("Add", ["c_one", "e1"], ["t1"], name="g1_add"),
        N("Mul", ["x", "c_half"], ["h1"], name="g1_half"),
        N("Mul", ["h1", "t1"], ["y1"], name="g1_mul"),
        # x times ((1 + erf(x / sqrt 2)) * 0.5)
        N("Div", ["y1", "sqrt2"], ["e2_in"], name="g2_div"),
        N("Erf", ["e2_in"], ["e2"], name="g2_erf"),
        N("Add", ["e2", "c_one"], ["t2"], name="g2_add"),
        N("Mul", ["t2", "c_half"], ["h2"], name="g2_half"),
        N("Mul", ["y1", "h2"], ["y2"], name="g2_mul"),
        N("Identity", ["y2"], ["y2i"], name="ident"),
        # PyTorch-style names: characters the expression parser does not accept become '_'
        N("LayerNormalization", ["y2i", "ln.g"], ["/ln/out-1"], name="/ln/LayerNorm"),
    ]
    inits = [scalar("sqrt2", np.sqrt(2.0)), weight("ln.g", 8)]
    save(out, "variants", nodes, [vi("x", [4, 8])], [vi("/ln/out-1", [4, 8])], inits)


def errors(out):
    N = helper.make_node
    save(out, "unsupported",
         [N("Relu", ["x"], ["r"], name="relu"),
          N("TopK", ["r", "k"], ["vals", "idx"], name="top_k", axis=-1)],
         [vi("x", [4, 16])], [vi("vals", [4, 3]), vi("idx", [4, 3], TensorProto.INT64)],
         [ints("k", [3])])
    save(out, "softmax_axis", [N("Softmax", ["x"], ["y"], name="sm_axis1", axis=1)],
         [vi("x", [2, 4, 8])], [vi("y", [2, 4, 8])], [])
    save(out, "bad_reshape",
         [N("Reshape", ["x", "shape"], ["xr"], name="reshape_64"),
          N("Relu", ["xr"], ["y"], name="relu")],
         [vi("x", [4, 6])], [vi("y", [6, 4])], [ints("shape", [6, 4])])
    save(out, "symbolic", [N("Relu", ["x"], ["y"], name="relu")],
         [vi("x", ["batch", 16])], [vi("y", ["batch", 16])], [])
    save(out, "lone_erf", [N("Erf", ["x"], ["y"], name="erf")],
         [vi("x", [4, 16])], [vi("y", [4, 16])], [])
    save(out, "merge_window",
         [N("Reshape", ["x", "shape"], ["xm"], name="merge_h"),
          N("Conv", ["xm", "w"], ["y"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
         [vi("x", [1, 3, 4, 4, 16])], [vi("y", [1, 8, 16, 16])],
         [ints("shape", [1, 3, 16, 16]), weight("w", 8, 3, 3, 3)])
    # attributes the importer does not implement, one per node; a folded node's too
    save(out, "attributes",
         [N("AveragePool", ["x"], ["p"], name="avg_pad", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
            count_include_pad=1),
          N("Relu", ["x2"], ["r"], name="relu_alpha", alpha=0.5),
          N("Reshape", ["shape_in", "s2"], ["s3"], name="fold_flag", bogus=1),
          N("Reshape", ["r", "s3"], ["y2"], name="use_fold")],
         [vi("x", [1, 2, 4, 4]), vi("x2", [4, 8])], [vi("p", [1, 2, 4, 4]), vi("y2", [8, 4])],
         [ints("shape_in", [8, 4]), ints("s2", [2])], check=False)
    # a layer norm's epsilon other than 1e-5 goes into its expression (it was ignored)
    save(out, "ln_eps",
         [N("LayerNormalization", ["x", "g", "b"], ["y"], name="ln", axis=-1, epsilon=1e-12),
          N("LayerNormalization", ["x", "g"], ["z"], name="ln_nob", axis=-1, epsilon=1e-6),
          N("LayerNormalization", ["x", "g"], ["w"], name="ln_default", axis=-1)],
         [vi("x", [4, 8])], [vi("y", [4, 8]), vi("z", [4, 8]), vi("w", [4, 8])], [weight("g", 8), weight("b", 8)])
    # inputs the importer does not read; Dropout in training mode that drops, and one that cannot
    save(out, "inputs",
         [N("MatMul", ["x2", "w", "w"], ["m"], name="matmul_three"),
          N("Dropout", ["x2", "r3", "on"], ["d1"], name="drop_train"),
          N("Dropout", ["x2", "r0", "on"], ["d0"], name="drop_zero"),
          N("Relu", ["d0"], ["d0r"], name="after_zero")],
         [vi("x2", [4, 8])], [vi("m", [4, 8]), vi("d1", [4, 8]), vi("d0r", [4, 8])],
         [weight("w", 8, 8), scalar("r3", 0.3), scalar("r0", 0.0),
          numpy_helper.from_array(np.array(True), "on")], check=False)
    # the same AveragePool without padding: count_include_pad changes nothing and is accepted
    save(out, "avg_nopad",
         [N("AveragePool", ["x"], ["p"], name="avg", kernel_shape=[2, 2], strides=[2, 2], count_include_pad=1)],
         [vi("x", [1, 2, 4, 4])], [vi("p", [1, 2, 2, 2])], [])
    save(out, "future_opset", [N("Relu", ["x"], ["y"], name="relu")],
         [vi("x", [4, 16])], [vi("y", [4, 16])], [], check=False, opset=[helper.make_opsetid("", 999)])
    save(out, "resplit",
         [N("Reshape", ["x", "s6"], ["xm"], name="merge"),
          N("Reshape", ["xm", "s32"], ["xs"], name="split"),
          N("Relu", ["xs"], ["y"], name="relu")],
         [vi("x", [1, 2, 3])], [vi("y", [1, 3, 2])], [ints("s6", [1, 6]), ints("s32", [1, 3, 2])])


def recurrent(out):
    """Recurrent layers: a two-step RNN to count the unrolled operators, and LSTMs with what the
    unroll does not take."""
    N = helper.make_node
    save(out, "rnn_small",
         [N("RNN", ["x", "W", "R", "B"], ["y"], name="rnn", hidden_size=2)],
         [vi("x", [2, 1, 3])], [vi("y", [2, 1, 1, 2])],
         [weight("W", 1, 2, 3), weight("R", 1, 2, 2), weight("B", 1, 4)])
    # two RNNs of one name (ONNX does not require unique node names), each with weights of its own
    save(out, "rnn_same_names",
         [N("RNN", ["x", "W", "R", "B"], ["y1"], name="rnn", hidden_size=2),
          N("Squeeze", ["y1", "axes"], ["h1"]),
          N("RNN", ["h1", "W2", "R", "B"], ["y"], name="rnn", hidden_size=2)],
         [vi("x", [2, 1, 3])], [vi("y", [2, 1, 1, 2])],
         [weight("W", 1, 2, 3), weight("R", 1, 2, 2), weight("B", 1, 4), weight("W2", 1, 2, 2), ints("axes", [1])])
    save(out, "rnn_leaky",
         [N("RNN", ["x", "W", "R"], ["y"], name="rnn", hidden_size=2, activations=["LeakyRelu"])],
         [vi("x", [2, 1, 3])], [vi("y", [2, 1, 1, 2])], [weight("W", 1, 2, 3), weight("R", 1, 2, 2)])
    lstm = [weight("W4", 1, 8, 3), weight("R4", 1, 8, 2)]
    save(out, "lstm_clip",
         [N("LSTM", ["x", "W4", "R4"], ["y"], name="lstm", hidden_size=2, clip=1.0)],
         [vi("x", [5, 1, 3])], [vi("y", [5, 1, 1, 2])], lstm)
    save(out, "lstm_short",
         [N("LSTM", ["x", "W4", "R4", "", "lens"], ["y"], name="lstm", hidden_size=2)],
         [vi("x", [5, 1, 3])], [vi("y", [5, 1, 1, 2])], lstm + [numpy_helper.from_array(np.array([3], np.int32), "lens")])


def exporter_ops(out):
    """What exporters write: shape arithmetic to fold, and the data ops of issue 11."""
    N = helper.make_node
    # x [2,3,4] -> Reshape to (Shape(x)[0], -1) = [2,12] -> Relu: the shape path folds away.
    save(out, "folding",
         [N("Shape", ["x"], ["s"], name="shape"),
          N("Gather", ["s", "zero"], ["n"], name="take_n", axis=0),
          N("Unsqueeze", ["n", "axes0"], ["n1"], name="unsq"),
          N("Concat", ["n1", "minus1"], ["target"], name="cat_shape", axis=0),
          N("Reshape", ["x", "target"], ["xr"], name="reshape"),
          N("Relu", ["xr"], ["y"], name="relu")],
         [vi("x", [2, 3, 4])], [vi("y", [2, 12])],
         [ints("zero", 0), ints("axes0", [0]), ints("minus1", [-1])])
    # x [2,8]: Slice columns 2..6 -> Concat(x, slice) -> [2,12]; Where(causal-style mask, ., -inf);
    # Sigmoid; Clip to [0.25, 0.75]; ReduceMean over the last axis (keepdims); Pow 2.
    mask = np.array([1, 0] * 6, dtype=bool)
    save(out, "dataops",
         [N("Slice", ["x", "st", "en", "ax"], ["xs"], name="slice"),
          N("Concat", ["x", "xs"], ["xc"], name="concat", axis=1),
          N("Where", ["mask", "xc", "ninf"], ["xw"], name="where"),
          N("Sigmoid", ["xw"], ["sg"], name="sigmoid"),
          N("Clip", ["sg", "lo", "hi"], ["cl"], name="clip"),
          N("ReduceMean", ["cl"], ["rm"], name="mean", axes=[1], keepdims=1),
          N("Pow", ["rm", "two"], ["y"], name="square")],
         [vi("x", [2, 8])], [vi("y", [2, 1])],
         [ints("st", [2]), ints("en", [6]), ints("ax", [1]), numpy_helper.from_array(mask, "mask"),
          scalar("ninf", -np.inf), scalar("lo", 0.25), scalar("hi", 0.75), scalar("two", 2.0)])
    # Depthwise convolution: 4 channels, 4 groups, 3x3, pads 1.
    save(out, "depthwise",
         [N("Conv", ["x", "w"], ["y"], name="dw", group=4, kernel_shape=[3, 3], pads=[1, 1, 1, 1])],
         [vi("x", [1, 4, 6, 6])], [vi("y", [1, 4, 6, 6])], [weight("w", 4, 1, 3, 3)])
    # Einsum: attention scores over heads, then a sum over the last axis of one operand.
    save(out, "einsum",
         [N("Einsum", ["q", "k"], ["s"], name="scores", equation="bhid,bhjd->bhij"),
          N("Einsum", ["s"], ["t"], name="rowsum", equation="bhij->bhi")],
         [vi("q", [1, 2, 3, 4]), vi("k", [1, 2, 5, 4])], [vi("t", [1, 2, 3])], [])
    # Two problems in one model (a TopK and a Softmax on axis 0) and a node that only reads the
    # TopK's output, which is not listed.
    save(out, "problems",
         [N("TopK", ["x", "k"], ["tv", "ti"], name="top_k"),
          N("Relu", ["tv"], ["r"], name="after_topk"),
          N("Softmax", ["x"], ["sm"], name="sm0", axis=0),
          N("Relu", ["x"], ["ok"], name="fine")],
         [vi("x", [4, 8])], [vi("r", [4, 2]), vi("sm", [4, 8]), vi("ok", [4, 8])],
         [ints("k", [2])])


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make_onnx_models.py OUT_DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    mlp(out)
    convnet(out)
    attention(out)
    ops(out)
    variants(out)
    errors(out)
    recurrent(out)
    exporter_ops(out)


if __name__ == "__main__":
    main()
