#!/usr/bin/python3
"""Compiled plans compute what PyTorch computes.

Usage: /usr/bin/python3 test/compiler/pytorch_equality.py TESSERA SOURCE_DIR

For eight small models (a CNN with batch norm and a depthwise convolution, a transformer encoder
layer, a GPT block with a causal mask, a one-block MaxViT whose window and grid partitions split
an 8-wide feature map as 2 x 4 and as 4 x 2, a two-layer LSTM, a bidirectional GRU, a
batch-first RNN with ReLU and a bidirectional LSTM from a given state, the recurrent layers unrolled over
their sequence by the importer; and a GRU with linear_before_reset = 0, which PyTorch does not
export, written as an ONNX node and checked against the ONNX equations in numpy), fixed seeds: export to ONNX with Debian's python3-torch,
run PyTorch on a random input, run `tessera run --functional --inputs` with both planners on a
64-core version of configs/ipu-mk2.json, and compare tessera's outputs with PyTorch's:
max |tessera - torch| / (1 + |torch|) must be at most 1e-3. The reference is PyTorch itself.
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import warnings

import torch
import torch.nn as nn
import torchvision

warnings.filterwarnings("ignore")
TOLERANCE = 1e-3


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.bn1d = nn.BatchNorm1d(8)  # after the pool: not folded into a convolution by the exporter
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = nn.functional.relu6(self.dw(x))
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        return self.fc(self.bn1d(x))


class GPTBlock(nn.Module):
    def __init__(self, d=32, heads=4, seq=8):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.attn(self.ln1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.heads))
        att = torch.softmax(att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf")), dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).contiguous().view(b, t, c))
        return x + self.fc2(nn.functional.gelu(self.fc(self.ln2(x))))


class Recurrent(nn.Module):
    """A PyTorch recurrent layer's output sequence (the exporter writes one LSTM/GRU/RNN node per
    layer, with zero initial states made by Expand)."""

    def __init__(self, kind, **kw):
        super().__init__()
        self.layer = getattr(nn, kind)(**kw)

    def forward(self, x):
        return self.layer(x)[0]


class LSTMWithState(nn.Module):
    """A bidirectional LSTM started from a given (non-zero) state: the initial states are constants
    in the export, read by the first step."""

    def __init__(self):
        super().__init__()
        self.layer = nn.LSTM(6, 8, bidirectional=True)
        self.register_buffer("h0", torch.randn(2, 2, 8))
        self.register_buffer("c0", torch.randn(2, 2, 8))

    def forward(self, x):
        return self.layer(x, (self.h0, self.c0))[0]


class Assorted(nn.Module):
    """Operators the other models do not reach, in one small network: grouped convolution,
    HardSwish, both AvgPool padding modes (count_include_pad exports as a Pad before the pool),
    SiLU, tanh-approximated GELU, Hardsigmoid, a clamp, BatchNorm with its own epsilon."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1, groups=2)
        self.pool_in, self.pool_ex = nn.AvgPool2d(3, 1, 1), nn.AvgPool2d(3, 1, 1, count_include_pad=False)
        self.fc = nn.Linear(8 * 6 * 6, 16)
        self.bn = nn.BatchNorm1d(16, eps=0.3)

    def forward(self, x):
        x = nn.functional.hardswish(self.conv(x))
        x = torch.flatten(self.pool_in(x) + self.pool_ex(x), 1)
        x = nn.functional.gelu(nn.functional.silu(self.fc(x)), approximate="tanh")
        return torch.clamp(self.bn(nn.functional.hardsigmoid(x)), -0.4, 0.6)


def models():
    torch.manual_seed(1)
    cnn = CNN()
    with torch.no_grad():  # batch-norm statistics that are not the identity
        for bn in (cnn.bn, cnn.bn1d):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.5, 0.5)
    enc = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True)
    return [("cnn_bn_depthwise", cnn, torch.randn(2, 3, 8, 8)),
            ("transformer_encoder_layer", enc, torch.randn(1, 8, 32)),
            ("gpt_block_causal", GPTBlock(), torch.randn(1, 8, 32)),
            ("maxvit_block", maxvit(), torch.randn(1, 3, 32, 32)),
            ("lstm_two_layers", Recurrent("LSTM", input_size=6, hidden_size=8, num_layers=2), torch.randn(5, 2, 6)),
            ("gru_bidirectional", Recurrent("GRU", input_size=6, hidden_size=8, bidirectional=True), torch.randn(5, 2, 6)),
            ("rnn_batch_first_relu", Recurrent("RNN", input_size=6, hidden_size=8, batch_first=True, nonlinearity="relu"),
             torch.randn(2, 5, 6)),
            ("lstm_bidirectional_with_state", LSTMWithState(), torch.randn(5, 2, 6)),
            ("assorted_ops", Assorted(), torch.randn(2, 4, 6, 6)),
            # an epsilon that matters (rows of variance about 0.1): the importer ignored it before
            ("layernorm_eps", nn.Sequential(nn.Linear(8, 8), nn.LayerNorm(8, eps=0.5), nn.Linear(8, 4),
                                            nn.LayerNorm(4, eps=0.25)),
             0.3 * torch.randn(2, 3, 8))]


def maxvit():
    """One MaxViT block on an 8 x 8 map with 4 x 4 partitions: the grid attention re-splits the
    window attention's merged dimensions another way (a reshape that is not a view of a view)."""
    torch.manual_seed(2)
    m = torchvision.models.MaxVit(input_size=(32, 32), stem_channels=8, partition_size=4, block_channels=[16],
                                  block_layers=[1], head_dim=8, stochastic_depth_prob=0.0, num_classes=5)
    # weights of unit gain (torchvision's std 0.02 leaves activations near 1e-3, where a wrong
    # partition would hide under the tolerance), and the feature map, not the pooled classifier
    # output, so that a wrong partition shows
    with torch.no_grad():
        for mod in m.modules():
            if isinstance(mod, (nn.Conv2d, nn.Linear)):
                fan_in = mod.weight[0].numel()
                mod.weight.normal_(0.0, 1.0 / math.sqrt(fan_in))
    return nn.Sequential(m.stem, *m.blocks)


def gru_reset_before(path):
    """A GRU with linear_before_reset = 0, which PyTorch never exports: the ONNX node written
    directly, its reference the ONNX specification's equations in numpy (not tessera's code)."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper, TensorProto
    rng = np.random.default_rng(5)
    T, B, I, H = 4, 2, 3, 5
    W, R, Bias = (rng.standard_normal(s).astype(np.float32) * 0.5 for s in ((1, 3 * H, I), (1, 3 * H, H), (1, 6 * H)))
    h0 = rng.standard_normal((1, B, H)).astype(np.float32)
    x = rng.standard_normal((T, B, I)).astype(np.float32)
    node = helper.make_node("GRU", ["input", "W", "R", "B", "", "h0"], ["y"], hidden_size=H, linear_before_reset=0)
    sq = helper.make_node("Squeeze", ["y", "axes"], ["output"])
    inits = [numpy_helper.from_array(a, n) for a, n in ((W, "W"), (R, "R"), (Bias, "B"), (h0, "h0"))]
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "axes"))
    g = helper.make_graph([node, sq], "gru", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [T, B, I])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, [T, B, H])], initializer=inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)
    sig = lambda v: 1 / (1 + np.exp(-v))
    Wz, Wr, Wh = np.split(W[0], 3)
    Rz, Rr, Rh = np.split(R[0], 3)
    Wbz, Wbr, Wbh, Rbz, Rbr, Rbh = np.split(Bias[0], 6)
    h, ys = h0[0], []
    for t in range(T):
        z = sig(x[t] @ Wz.T + h @ Rz.T + Wbz + Rbz)
        r = sig(x[t] @ Wr.T + h @ Rr.T + Wbr + Rbr)
        n = np.tanh(x[t] @ Wh.T + (r * h) @ Rh.T + Rbh + Wbh)
        h = (1 - z) * n + z * h
        ys.append(h)
    return torch.from_numpy(x), np.stack(ys).flatten().tolist()


def main():
    tessera, src = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp()
    cfg = json.load(open(os.path.join(src, "configs", "ipu-mk2.json")))
    cfg["name"] = "ipu-mk2-64"
    cfg["chip"]["cores"] = 64
    cfg_path = os.path.join(tmp, "ipu-mk2-64.json")
    json.dump(cfg, open(cfg_path, "w"))
    failed = 0
    for name, model, x in models() + [("gru_reset_before (numpy reference)", None, None)]:
        path = os.path.join(tmp, name.split()[0] + ".onnx")
        if model is None:
            x, ref = gru_reset_before(path)
        else:
            model.eval()
            torch.onnx.export(model, (x,), path, opset_version=17, input_names=["input"], output_names=["output"])
            with torch.no_grad():
                ref = model(x).flatten().tolist()
        json.dump({"input": x.flatten().tolist()}, open(os.path.join(tmp, "in.json"), "w"))
        for planner in ("t10", "vgm"):
            out = os.path.join(tmp, f"{name.split()[0]}-{planner}.json")
            run = subprocess.run([tessera, "run", "--config", cfg_path, "--workload", path, "--functional", "--inputs",
                                  os.path.join(tmp, "in.json"), "--planner", planner, "--quiet", "--out", out],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                print(f"FAILED: {name} ({planner}): tessera exited {run.returncode}: {run.stderr.strip()}")
                failed = 1
                continue
            outputs = json.load(open(out))["outputs"]
            # the graph output keeps the name of the tensor it views when it is one in the same
            # order (a final Squeeze); then it is the only tensor stored
            got = (outputs["output"] if "output" in outputs or len(outputs) != 1 else next(iter(outputs.values())))["values"]
            if len(got) != len(ref):
                print(f"FAILED: {name} ({planner}): {len(got)} output values, the reference has {len(ref)}")
                failed = 1
                continue
            err = max(abs(g - r) / (1 + abs(r)) for g, r in zip(got, ref))
            ok = err <= TOLERANCE
            failed |= not ok
            print(f"{'ok' if ok else 'FAILED'}: {name} ({planner}) matches its reference: max relative error {err:.2e} "
                  f"over {len(ref)} outputs (limit {TOLERANCE})")
    return failed


if __name__ == "__main__":
    sys.exit(main())
