#!/usr/bin/python3
"""Write the layer tables `tessera train` reads (docs/train.md) from the models' public definitions.

  scripts/make_train_tables.py [--out workloads/train]

resnet-50.json  torchvision ResNet-50 (v1.5: stride in the 3x3 convolution), 224x224 images,
                batch 32 per NPU (the ACE paper's); resnet-50-b8.json the same at batch 8. A layer is a convolution with its batch norm
                and ReLU (and the block's residual add on its last convolution), or the final
                fully connected layer.
dlrm.json       MLPerf DLRM (Criteo Terabyte): data-parallel MLPs, 26 model-parallel embedding
                tables of 128 with an all-to-all each way, batch 512 per NPU (the ACE paper's).
gnmt.json       GNMT as the MLPerf training reference defines it: 4 encoder LSTM layers (the
                first bidirectional, 2 x 512), 4 decoder LSTM layers with attention, 1024 units,
                a 32,317-token vocabulary, batch 128 per NPU (the ACE paper's), 50-token sentences.

FP16 throughout (2 bytes a value). Per layer and pass: FLOPs (2 per multiply-add) and memory
bytes (activations read and written, weights read; what a layer-at-a-time kernel moves, with no
reuse across layers). The input gradient of the first layer is not computed. Uses only the
Python standard library.
"""
import argparse
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B2 = 2  # bytes per FP16 value


def layer(name, params, fwd, ig, wg):
    return {"name": name, "parameters": int(params),
            "forward": {"flops": float(fwd[0]), "bytes": float(fwd[1])},
            "input_grad": {"flops": float(ig[0]), "bytes": float(ig[1])},
            "weight_grad": {"flops": float(wg[0]), "bytes": float(wg[1])}}


def conv(name, batch, h, w, cin, cout, k, stride, first=False, residual=False):
    """A convolution with batch norm and ReLU; returns (layer, output height, output width)."""
    ho, wo = (h + stride - 1) // stride, (w + stride - 1) // stride
    weights = cin * cout * k * k
    macs = batch * ho * wo * cout * cin * k * k
    x = batch * h * w * cin * B2          # input activations
    y = batch * ho * wo * cout * B2       # output activations
    extra = 3 * y if residual else 0      # the residual add: read two, write one
    fwd = (2 * macs, x + weights * B2 + 3 * y + extra)     # conv writes y; BN + ReLU read and write it
    ig = (0, 0) if first else (2 * macs, 3 * y + weights * B2 + x + extra)  # BN/ReLU backward, then dX
    wg = (2 * macs, x + y + weights * B2)
    return layer(name, weights + 2 * cout, fwd, ig, wg), ho, wo


def resnet50(batch=32):
    layers = []
    l, h, w = conv("conv1", batch, 224, 224, 3, 64, 7, 2, first=True)
    layers.append(l)
    h, w = h // 2, w // 2  # max pool (its traffic is small next to conv1's; folded away)
    cin = 64
    for stage, (blocks, width, stride) in enumerate([(3, 64, 1), (4, 128, 2), (6, 256, 2), (3, 512, 2)], 1):
        for b in range(blocks):
            s = stride if b == 0 else 1
            name = f"layer{stage}.{b}"
            l1, h1, w1 = conv(f"{name}.conv1", batch, h, w, cin, width, 1, 1)
            l2, h2, w2 = conv(f"{name}.conv2", batch, h1, w1, width, width, 3, s)
            l3, h3, w3 = conv(f"{name}.conv3", batch, h2, w2, width, 4 * width, 1, 1, residual=True)
            layers += [l1, l2, l3]
            if b == 0:
                ld, _, _ = conv(f"{name}.downsample", batch, h, w, cin, 4 * width, 1, s)
                layers.append(ld)
            h, w, cin = h3, w3, 4 * width
    macs = batch * 2048 * 1000
    x, y = batch * 2048 * B2, batch * 1000 * B2
    wbytes = 2048 * 1000 * B2
    layers.append(layer("fc", 2048 * 1000 + 1000, (2 * macs, x + wbytes + y), (2 * macs, y + wbytes + x),
                        (2 * macs, x + y + wbytes)))
    return {"name": "resnet-50", "description": "torchvision ResNet-50 v1.5, 224x224, FP16 (scripts/make_train_tables.py)",
            "batch_per_npu": batch, "bytes_per_parameter": 2, "layers": layers}


def lstm(name, batch, steps, inputs, hidden):
    """One LSTM layer (one direction) over `steps` tokens: 4 gates, weights re-read every step."""
    weights = 4 * hidden * (inputs + hidden)
    macs = batch * steps * weights
    act = batch * steps * (inputs + 4 * hidden + 2 * hidden) * B2  # inputs, gates, cell and hidden state
    per_step_weights = weights * B2 * steps
    return layer(name, weights + 8 * hidden, (2 * macs, act + per_step_weights),
                 (2 * macs, act + per_step_weights), (2 * macs, act + per_step_weights))


def gnmt(batch=128, steps=50, hidden=1024, vocab=32317):
    tokens = batch * steps
    emb = vocab * hidden
    lookup = tokens * hidden * B2
    layers = [layer("encoder.embedding", emb, (0, 2 * lookup), (0, 0), (0, 2 * lookup))]
    layers.append(lstm("encoder.lstm0.forward", batch, steps, hidden, hidden // 2))
    layers.append(lstm("encoder.lstm0.backward", batch, steps, hidden, hidden // 2))
    for i in range(1, 4):
        layers.append(lstm(f"encoder.lstm{i}", batch, steps, hidden, hidden))
    layers.append(layer("decoder.embedding", emb, (0, 2 * lookup), (0, 0), (0, 2 * lookup)))
    # attention (normalised Bahdanau): query and key projections and the score vector; per
    # target token it scores every source token
    att_params = 2 * hidden * hidden + hidden
    att_macs = tokens * 2 * hidden * hidden + tokens * steps * hidden * 2
    att_bytes = tokens * steps * B2 * 3 + 2 * tokens * hidden * B2 * 3 + att_params * B2
    layers.append(layer("decoder.attention", att_params, (2 * att_macs, att_bytes), (2 * att_macs, att_bytes),
                        (2 * att_macs, att_bytes)))
    layers.append(lstm("decoder.lstm0", batch, steps, 2 * hidden, hidden))  # input: embedding + context
    for i in range(1, 4):
        layers.append(lstm(f"decoder.lstm{i}", batch, steps, 2 * hidden, hidden))
    macs = tokens * hidden * vocab
    logits = tokens * vocab * B2
    wbytes = hidden * vocab * B2
    layers.append(layer("classifier", hidden * vocab + vocab, (2 * macs, tokens * hidden * B2 + wbytes + 3 * logits),
                        (2 * macs, 3 * logits + wbytes + tokens * hidden * B2),
                        (2 * macs, tokens * hidden * B2 + logits + wbytes)))
    return {"name": "gnmt", "description": "GNMT (MLPerf reference: 4+4 LSTM layers of 1024, attention, "
                                           "32,317 tokens), 50-token sentences, FP16 (scripts/make_train_tables.py)",
            "batch_per_npu": batch, "bytes_per_parameter": 2, "layers": layers}


def mlp(name, batch, dims):
    """Dense layers of an MLP, in order: (in, out) pairs."""
    out = []
    for i, (a, b) in enumerate(zip(dims, dims[1:])):
        macs = batch * a * b
        x, y, wbytes = batch * a * B2, batch * b * B2, a * b * B2
        out.append(layer(f"{name}.{i}", a * b + b, (2 * macs, x + wbytes + 3 * y), (2 * macs, 3 * y + wbytes + x),
                         (2 * macs, x + y + wbytes)))
    return out


def dlrm(batch=512, tables=26, dim=128):
    """MLPerf DLRM (Criteo Terabyte): a bottom MLP 13-512-256-128 on the dense features, 26
    embedding tables of 128 (model parallel: each NPU looks up its share of the tables for the
    whole global batch, then an all-to-all hands every NPU its samples' rows), the pairwise
    interaction (351 dot products + the 128 dense), a top MLP 479-1024-1024-512-256-1."""
    layers = mlp("bottom_mlp", batch, [13, 512, 256, 128])
    rows = batch * tables * dim * B2  # per NPU: as many rows as its own samples need, weak scaling
    emb = layer("embeddings", 0, (0, 2 * rows), (0, 0), (0, 3 * rows))  # lookup; sparse update in place
    emb["alltoall_bytes"] = rows
    layers.append(emb)
    pairs = (tables + 1) * tables // 2
    inter_macs = batch * pairs * dim
    inter_bytes = batch * ((tables + 1) * dim + pairs + dim) * B2
    layers.append(layer("interaction", 0, (2 * inter_macs, inter_bytes), (2 * inter_macs, inter_bytes), (0, 0)))
    layers += mlp("top_mlp", batch, [dim + pairs, 1024, 1024, 512, 256, 1])
    return {"name": "dlrm", "description": "MLPerf DLRM: bottom MLP 13-512-256-128, 26 embedding tables of 128 "
                                           "(model parallel, all-to-all), top MLP 479-1024-1024-512-256-1, FP16 "
                                           "(scripts/make_train_tables.py)",
            "batch_per_npu": batch, "bytes_per_parameter": 2, "layers": layers}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "workloads", "train"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    small = resnet50(8)  # a quarter of the compute per iteration for the same gradients
    small["name"] = "resnet-50-b8"
    small["description"] = small["description"].replace("224x224", "224x224, batch 8 per NPU")
    for table in (resnet50(), small, gnmt(), dlrm()):
        path = os.path.join(args.out, table["name"] + ".json")
        with open(path, "w") as f:
            json.dump(table, f, indent=1)
            f.write("\n")
        params = sum(l["parameters"] for l in table["layers"])
        flops = sum(l[p]["flops"] for l in table["layers"] for p in ("forward", "input_grad", "weight_grad"))
        print(f"{path}: {len(table['layers'])} layers, {params / 1e6:.2f} M parameters, "
              f"{flops / 1e12:.2f} TFLOP per iteration per NPU")


if __name__ == "__main__":
    main()
