#!/usr/bin/python3
"""Exports stock PyTorch / torchvision models to ONNX, offline, with random weights (fixed seed).

Usage: /usr/bin/python3 scripts/export_torch_models.py OUT_DIR [--opsets 13,17] [--models a,b,...]
       [--small]

Uses Debian's python3-torch (1.13) and python3-torchvision (0.14); nothing is downloaded
(weights=None). Writes OUT_DIR/<model>-op<opset>.onnx. --small exports reduced sizes of the
model families (fewer layers, smaller images) for the tests; the default is the stock models.

Models: resnet18 resnet50 mobilenet_v2 efficientnet_b0 convnext_tiny vit_b_16 swin_t
        transformer_encoder gpt_block lstm
"""
import argparse
import math
import os
import sys
import warnings

import torch
import torch.nn as nn
import torchvision

warnings.filterwarnings("ignore")


class GPTBlock(nn.Module):
    """A nanoGPT-style decoder block: pre-LN causal self-attention and a GELU MLP."""

    def __init__(self, d=768, heads=12, seq=128):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.attn(self.ln1(x)).split(c, dim=2)
        h = self.heads
        q = q.view(b, t, h, c // h).transpose(1, 2)
        k = k.view(b, t, h, c // h).transpose(1, 2)
        v = v.view(b, t, h, c // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // h))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.proj(y)
        return x + self.fc2(nn.functional.gelu(self.fc(self.ln2(x))))


class LSTMModel(nn.Module):
    def __init__(self, d=256, layers=2):
        super().__init__()
        self.lstm = nn.LSTM(d, d, num_layers=layers, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0]


def build(name, small):
    """(module, example input) for a model name."""
    tv = torchvision.models
    img = 64 if small else 224
    if name in ("resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "convnext_tiny"):
        kw = {"num_classes": 10} if small else {}
        return getattr(tv, name)(weights=None, **kw), torch.randn(1, 3, img, img)
    if name == "vit_b_16":
        if small:
            m = tv.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4, hidden_dim=64,
                                     mlp_dim=128, num_classes=10)
            return m, torch.randn(1, 3, 32, 32)
        return tv.vit_b_16(weights=None), torch.randn(1, 3, 224, 224)
    if name == "swin_t":
        if small:
            m = tv.SwinTransformer(patch_size=[4, 4], embed_dim=32, depths=[2, 2], num_heads=[2, 4],
                                   window_size=[4, 4], num_classes=10)
            return m, torch.randn(1, 3, 32, 32)
        return tv.swin_t(weights=None), torch.randn(1, 3, 224, 224)
    if name == "transformer_encoder":
        d, heads, layers, seq = (64, 4, 2, 16) if small else (512, 8, 6, 128)
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, dropout=0.0, batch_first=True)
        return nn.TransformerEncoder(layer, layers), torch.randn(1, seq, d)
    if name == "gpt_block":
        d, heads, seq = (64, 4, 16) if small else (768, 12, 128)
        return GPTBlock(d, heads, seq), torch.randn(1, seq, d)
    if name == "lstm":
        d, seq = (32, 8) if small else (256, 64)
        return LSTMModel(d), torch.randn(1, seq, d)
    raise SystemExit(f"unknown model '{name}'")


MODELS = ["resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "convnext_tiny", "vit_b_16", "swin_t",
          "transformer_encoder", "gpt_block", "lstm"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--opsets", default="13,17")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--small", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out_dir, exist_ok=True)
    for name in a.models.split(","):
        for opset in (int(o) for o in a.opsets.split(",")):
            torch.manual_seed(0)
            model, x = build(name, a.small)
            model.eval()
            path = os.path.join(a.out_dir, f"{name}-op{opset}.onnx")
            # with gradients enabled: in eval mode under no_grad, attention takes PyTorch's fused
            # fast path (aten::_native_multi_head_attention), which does not export
            torch.onnx.export(model, (x,), path, opset_version=opset, input_names=["input"],
                              output_names=["output"], do_constant_folding=True)
            print(path, flush=True)


if __name__ == "__main__":
    sys.exit(main())
