#!/usr/bin/python3
"""DFModel's dataflow-mapping results, in shape, with `tessera plan-parallel` (analytical).

Writes results.json, tables.md and (with python3-matplotlib) heatmap.png under --out:

  case study  GPT-3 175B on 8 SN10-like chips (the paper's Table VI): kernel by kernel (the
              non-dataflow mapping) and the vendor's four partitions per layer on the 8-chip
              ring with TP8, the best fused mapping on the ring, the best on a 4 x 2 torus
  memory      the same model on 8 chips of 300 TFLOPS in a 4 x 2 torus, SRAM 150/300/500 MB x
              DRAM 100/300/600 GB/s: best fused and best kernel-by-kernel utilisation, and their
              ratio (the paper's Fig. 19: dataflow up to 1.63x)
  network     the model's all-reduce term against the simulator: one TP all-reduce of a layer's
              output (Proj's) from `plan-parallel`, and the same all-reduce run by `tessera
              collective` (ideal engine) on the TP group's dimensions alone
  kernels     the model's compute term against the simulator: GPT-3 175B's kernels as one chip of
              the SN10 ring holds them with TP8, compiled by the T10 compiler for that chip alone
              and simulated (`tessera run`), against FLOPs / peak
  training    issue 17's two A100 cases against the DFModel authors' stored runs of them: GPT-3
              XL's shape on 4 GPUs with TP4 fused, and a 60-layer, hidden-10240 model on 1024
              GPUs kernel by kernel (the mapping the search chooses), each with compute at peak
              and with the systolic compute model (--training-only: just this part)
  simulated   whole mappings on the simulator (`plan-parallel --simulate`, inference): GPT-3 XL
              TP4 on the A100 switch, GPT-3 175B on the SN10 ring and torus (their best
              mappings), against the model's (micro-batches + PP - 1) intervals
              (--simulated-only: just this part)

  scripts/reproduce_dfmodel.py [--tessera build/cli/tessera] [--out results/dfmodel] [--simulated-only | --training-only]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAPER_STEPS = {"vendor": 4.05, "fused ring": 1.19, "fused torus": 1.28}


def plan(tessera, config, *extra, model="gpt3-175b"):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        cmd = [tessera, "plan-parallel", "--config", config, "--model", model, "--out", out, *extra]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0 and not os.path.exists(out):
            sys.exit(f"reproduce_dfmodel: {' '.join(cmd)} failed: {p.stderr.strip()}")
        return json.load(open(out))


def best(result, execution):
    ok = [m for m in result["mappings"] if m["feasible"] and m["execution"] == execution]
    return max(ok, key=lambda m: m["utilisation"]) if ok else None


def short(m):
    return f"{','.join(m['dimensions'])} (TP{m['tp']} PP{m['pp']} DP{m['dp']})"


def describe(m):
    parts = " | ".join(" ".join(p["kernels"]) for p in m["partitions"])
    return f"{','.join(m['dimensions'])} (TP{m['tp']} PP{m['pp']} DP{m['dp']}): {parts}"


def case_study(args):
    ring = os.path.join(ROOT, "configs", "sn10-ring-8.json")
    torus = os.path.join(ROOT, "configs", "sn10-torus-4x2.json")
    rows = [("non-dataflow (kernel by kernel)", "8x1 ring",
             best(plan(args.tessera, ring, "--mapping", "TP", "--fusion", "kernel-by-kernel"), "kernel-by-kernel")),
            ("vendor partitions {Q,K,V} {MHA1,Softmax,MHA2,Proj} {Add,FFN0} {FFN1,Add}", "8x1 ring",
             best(plan(args.tessera, ring, "--mapping", "TP", "--partitions", "3,4,2,2"), "fused")),
            ("best fused mapping", "8x1 ring", best(plan(args.tessera, ring, "--fusion", "fused"), "fused")),
            ("best fused mapping", "4x2 torus", best(plan(args.tessera, torus, "--fusion", "fused"), "fused"))]
    out, prev = [], None
    paper = [1.0, 4.05, 1.19, 1.28]
    acc_paper = 1.0
    for (name, topo, m), pstep in zip(rows, paper):
        step = m["utilisation"] / prev if prev else 1.0
        acc_paper *= pstep
        out.append({"mapping": name, "topology": topo, "utilisation": m["utilisation"], "step": step,
                    "accumulated": m["utilisation"] / rows[0][2]["utilisation"], "paper_step": pstep,
                    "paper_accumulated": acc_paper, "partitions": describe(m)})
        prev = m["utilisation"]
    return out


def variant(base, sram_mb, dram_gbps, tmp):
    c = json.load(open(base))
    cores = 625  # x 240 MACs x 2 x 1 GHz = 300 TFLOPS
    c["name"] = f"torus-4x2-300tf-{sram_mb}mb-{dram_gbps}gbps"
    c["chip"]["cores"] = cores
    c["chip"]["core"]["sram_bytes"] = sram_mb * 1000000 // cores
    c["chip"]["offchip"]["channel_bytes_per_cycle"] = dram_gbps
    path = os.path.join(tmp, c["name"] + ".json")
    json.dump(c, open(path, "w"))
    return path


def memory_sweep(args):
    base = os.path.join(ROOT, "configs", "sn10-torus-4x2.json")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for sram in (150, 300, 500):
            for dram in (100, 300, 600):
                r = plan(args.tessera, variant(base, sram, dram, tmp))
                f, k = best(r, "fused"), best(r, "kernel-by-kernel")
                rows.append({"sram_mb": sram, "dram_gbps": dram,
                             "fused": f["utilisation"] if f else None, "fused_mapping": describe(f) if f else "does not fit",
                             "kernel_by_kernel": k["utilisation"] if k else None,
                             "kernel_mapping": describe(k) if k else "does not fit"})
    return rows


def network(args):
    """(label, config, model args, mapping, TP dimensions, collective algorithm)"""
    cases = [("GPT-3 175B, TP8 on the SN10 ring of 8", "sn10-ring-8.json", [], "TP", [0], "ring"),
             ("GPT-3 175B, TP4 on the torus's ring of 4", "sn10-torus-4x2.json", [], "TP,DP", [0], "ring"),
             ("GPT-3 XL, TP4 on 4 A100s behind a switch", "a100-switch-4.json", ["--model", "gpt3-1.3b"], "TP", [0], "direct"),
             ("60 layers, hidden 10240, TP8 in an A100 node (switch of 8)", "a100-1024.json",
              ["--layers", "60", "--hidden", "10240", "--heads", "80"], "TP,PP,DP", [0], "direct")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, cfg, model, mapping, dims, alg in cases:
            path = os.path.join(ROOT, "configs", cfg)
            extra = model[1:2] if model[:1] == ["--model"] else []
            r = plan(args.tessera, path, *(model[2:] if extra else model), "--mapping", mapping,
                     "--fusion", "kernel-by-kernel", **({"model": extra[0]} if extra else {}))
            m = r["mappings"][0]
            proj = next(p for p in m["partitions"] if p["kernels"] == ["Proj"])
            spec = r["model"]
            out_bytes = spec["seq"] * spec["micro_batch"] * spec["hidden"] * 2
            c = json.load(open(path))
            c["system"]["dimensions"] = [c["system"]["dimensions"][d] for d in dims]
            c["name"] += "-tp-group"
            group = os.path.join(tmp, c["name"] + ".json")
            json.dump(c, open(group, "w"))
            res = os.path.join(tmp, "c.json")
            p = subprocess.run([args.tessera, "collective", "--config", group, "--op", "allreduce", "--bytes",
                                str(out_bytes), "--algorithm", alg, "--out", res], capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"reproduce_dfmodel: tessera collective failed: {p.stderr.strip()}")
            sim = json.load(open(res))
            busy = list(sim.get("link_utilization", {}).values())
            rows.append({"case": label, "bytes": out_bytes, "algorithm": alg, "model_s": proj["network_s"],
                         "simulated_s": sim["seconds"], "link_busy_max": max(busy) if busy else None})
    return rows


def kernels(args):
    """(name, tensors, expression): GPT-3 175B's kernels, TP8 shards (12 of 96 heads), 2048 tokens."""
    cases = [("Q (X 2048x12288, W 12288x1536)", [("X", [2048, 12288], "input"), ("W", [12288, 1536], "weight")],
              "Y[m,n] += X[m,k] * W[k,n]", 2 * 2048 * 12288 * 1536),
             ("MHA1 (12 heads, scores 2048x2048)", [("Q", [12, 2048, 128], "input"), ("K", [12, 2048, 128], "input")],
              "S[h,i,j] += Q[h,i,d] * K[h,j,d]", 2 * 12 * 2048 * 2048 * 128),
             ("FFN0 (X 2048x12288, W 12288x6144)", [("X", [2048, 12288], "input"), ("W", [12288, 6144], "weight")],
              "Y[m,n] += X[m,k] * W[k,n]", 2 * 2048 * 12288 * 6144),
             ("FFN1 (X 2048x6144, W 6144x12288)", [("X", [2048, 6144], "input"), ("W", [6144, 12288], "weight")],
              "Y[m,n] += X[m,k] * W[k,n]", 2 * 2048 * 6144 * 12288)]
    c = json.load(open(os.path.join(ROOT, "configs", "sn10-ring-8.json")))
    c["name"] = "sn10-one-chip"
    c["system"] = {}
    peak = c["chip"]["cores"] * c["chip"]["core"]["matrix"]["macs_per_cycle"]["fp16"] * 2 * c["clock_ghz"] * 1e9
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "chip.json")
        json.dump(c, open(cfg, "w"))
        for name, tensors, expr, flops in cases:
            w = {"format": "tessera-workload", "version": 1, "name": name.split()[0],
                 "tensors": [{"name": t, "shape": sh, "role": role} for t, sh, role in tensors],
                 "ops": [{"name": "k", "expr": expr}]}
            wpath = os.path.join(tmp, "w.json")
            json.dump(w, open(wpath, "w"))
            out = os.path.join(tmp, "r.json")
            p = subprocess.run([args.tessera, "run", "--config", cfg, "--workload", wpath, "--quiet", "--out", out],
                               capture_output=True, text=True)
            if p.returncode != 0:
                rows.append({"kernel": name, "model_s": flops / peak, "error": p.stderr.strip()})
                continue
            r = json.load(open(out))
            op = r["operator_table"][0]["simulated"]
            hz = c["clock_ghz"] * 1e9
            rows.append({"kernel": name, "model_s": flops / peak, "simulated_s": r["total_seconds"],
                         "compute_s": op["compute_cycles"] / hz, "exchange_s": op["exchange_cycles"] / hz})
    return rows


# The DFModel authors' stored runs (github.com/kosho2013/DFModel, LLM/Compare_w_existing/GPU/):
# GPT3_1.5B_seq2048_A100_4x1_FC_fwdbwd/log.txt (forward Compute_Latency 278,876.6 ns a layer,
# util 0.741; its backward graph has no weight-gradient kernels) and Megatron_LM/10240/log.txt
# (TP8 PP4 DP32, micro-batch 1, 56 micro-batches, util 0.595). Both: 432 arrays of 16 x 16 at
# 1.41 GHz, sequence tiles of 32 tokens.
AUTHORS_XL = {"forward_us": 278.8766, "utilisation": 0.741}
AUTHORS_BIG = {"mapping": "TP8 PP4 DP32", "utilisation": 0.595}
# Compute models per case: at peak, and the systolic model with the weights' load as the authors'
# run has it: streamed for GPT-3 XL (their micro-batch of 538 sequences leaves 30 ns of setup a
# layer), before each kernel for the 1024-GPU case (micro-batch 1: 51 us for an FFN kernel).
XL_MODELS = [("peak", ["--compute", "peak"]), ("systolic", ["--compute", "systolic"])]
BIG_MODELS = [("peak", ["--compute", "peak"]),
              ("systolic, weights as setup", ["--compute", "systolic", "--weight-load", "setup"])]


def authors_system(tmp):
    """The authors' 1024-GPU system of that run: A100s with 2039 GB/s of 80 GB HBM, rings of 8,
    4 and 32 at 600, 25 and 25 GB/s per link."""
    c = json.load(open(os.path.join(ROOT, "configs", "a100-1024.json")))
    hz = c["clock_ghz"] * 1e9
    c["name"] = "a100-1024-dfmodel-authors"
    c["chip"]["offchip"]["channel_bytes_per_cycle"] = 2039e9 / hz
    c["chip"]["offchip"]["capacity_bytes"] = 85899345920
    c["system"]["dimensions"] = [
        {"kind": "ring", "size": n, "link_bytes_per_cycle": gbps * 1e9 / hz, "link_latency_cycles": 500}
        for n, gbps in ((8, 600), (4, 25), (32, 25))]
    path = os.path.join(tmp, "a100-1024-dfmodel-authors.json")
    json.dump(c, open(path, "w"))
    return path


def training(args):
    """The two A100 cases of issue 17 against the DFModel authors' stored runs of them, with our
    model's compute at peak and with the systolic compute model and weights loaded as setup."""
    a4 = os.path.join(ROOT, "configs", "a100-switch-4.json")
    rows = []
    for label, flags in XL_MODELS:
        common = ["--mapping", "TP", "--fusion", "fused", "--seq-tile", "32", *flags]
        fwd = plan(args.tessera, a4, *common, model="gpt3-1.3b")["mappings"][0]
        train = plan(args.tessera, a4, *common, "--training", model="gpt3-1.3b")["mappings"][0]
        rows.append({"case": "GPT-3 XL shape (hidden 2048, 16 heads, 24 layers), 4 GPUs, TP4, fused, tiles of 32",
                     "compute": label, "mapping": short(train),
                     "forward_compute_us": sum(p["compute_s"] for p in fwd["partitions"]) * 1e6,
                     "authors_forward_us": AUTHORS_XL["forward_us"], "utilisation": train["utilisation"],
                     "authors_utilisation": AUTHORS_XL["utilisation"]})
    shape = ["--layers", "60", "--hidden", "10240", "--heads", "80", "--training", "--global-batch", "1792",
             "--fusion", "kernel-by-kernel", "--seq-tile", "32"]
    with tempfile.TemporaryDirectory() as tmp:
        cfg = authors_system(tmp)
        for label, flags in BIG_MODELS:
            m = best(plan(args.tessera, cfg, *shape, *flags), "kernel-by-kernel")
            fixed = plan(args.tessera, cfg, *shape, *flags, "--mapping", "TP,PP,DP")["mappings"][0]
            rows.append({"case": "60 layers, hidden 10240, 1024 GPUs (the authors' system), global batch 1792, "
                                 "kernel by kernel, tiles of 32", "compute": label,
                         "mapping": short(m) if m else "does not fit",
                         "utilisation": m["utilisation"] if m else None, "tp8_pp4_dp32": fixed.get("utilisation"),
                         "authors_mapping": AUTHORS_BIG["mapping"], "authors_utilisation": AUTHORS_BIG["utilisation"]})
    return rows


def training_table(train):
    fmt = lambda x: f"{x:.3f}" if x is not None else "-"
    lines = ["| case | compute model | chosen mapping | forward compute per layer (authors) | utilisation | "
             "TP8 PP4 DP32 | the authors' run |", "|---|---|---|---|---|---|---|"]
    for r in train:
        fwd = (f"{r['forward_compute_us']:.1f} us ({r['authors_forward_us']:.1f})" if "forward_compute_us" in r else "")
        fixed = fmt(r.get("tp8_pp4_dp32")) if "tp8_pp4_dp32" in r else ""
        authors = f"{r.get('authors_mapping', 'TP4')}, {r['authors_utilisation']:.3f}"
        lines.append(f"| {r['case']} | {r['compute']} | {r['mapping']} | {fwd} | {fmt(r['utilisation'])} | {fixed} | "
                     f"{authors} |")
    return "\n".join(lines) + "\n"


def tables(case, sweep, train, net, kern):
    lines = ["| mapping | topology | utilisation | step | accumulated | paper: step | paper: accumulated |",
             "|---|---|---|---|---|---|---|"]
    for r in case:
        lines.append(f"| {r['mapping']} | {r['topology']} | {r['utilisation']:.3f} | {r['step']:.2f}x | "
                     f"{r['accumulated']:.2f}x | {r['paper_step']:.2f}x | {r['paper_accumulated']:.2f}x |")
    lines += ["", "Partitions of the fused mappings:", ""]
    lines += [f"- {r['mapping']}, {r['topology']}: {r['partitions']}" for r in case]
    lines += ["", "| SRAM \\ DRAM | 100 GB/s | 300 GB/s | 600 GB/s |", "|---|---|---|---|"]
    fmt = lambda x: f"{x:.3f}" if x is not None else "-"
    for sram in (150, 300, 500):
        cells = []
        for dram in (100, 300, 600):
            r = next(x for x in sweep if x["sram_mb"] == sram and x["dram_gbps"] == dram)
            ratio = (f"{r['fused'] / r['kernel_by_kernel']:.2f}x" if r["fused"] and r["kernel_by_kernel"] else "-")
            cells.append(f"{fmt(r['fused'])} / {fmt(r['kernel_by_kernel'])} ({ratio})")
        lines.append(f"| {sram} MB | " + " | ".join(cells) + " |")
    lines += ["", "| TP all-reduce | bytes per chip | model (formula) | simulated (ideal engine) | simulated / model |",
              "|---|---|---|---|---|"]
    for r in net:
        lines.append(f"| {r['case']} ({r['algorithm']}) | {r['bytes'] / 2**20:.0f} MiB | {r['model_s'] * 1e6:.1f} us | "
                     f"{r['simulated_s'] * 1e6:.1f} us | {r['simulated_s'] / r['model_s']:.3f}x |")
    lines += ["", "| kernel (one SN10-like chip, TP8 shard) | model: FLOPs / peak | simulated (T10 plan) | of which compute | of which exchange | simulated / model |",
              "|---|---|---|---|---|---|"]
    for r in kern:
        if "error" in r:
            lines.append(f"| {r['kernel']} | {r['model_s'] * 1e3:.3f} ms | {r['error']} | | | |")
            continue
        lines.append(f"| {r['kernel']} | {r['model_s'] * 1e3:.3f} ms | {r['simulated_s'] * 1e3:.3f} ms | "
                     f"{r['compute_s'] * 1e3:.3f} ms | {r['exchange_s'] * 1e3:.3f} ms | {r['simulated_s'] / r['model_s']:.2f}x |")
    lines += ["", training_table(train)]
    return "\n".join(lines) + "\n"


def heatmap(sweep, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("reproduce_dfmodel: python3-matplotlib is not installed; no heat map", file=sys.stderr)
        return
    srams, drams = (150, 300, 500), (100, 300, 600)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, key, title in zip(axes, ("fused", "kernel_by_kernel", "ratio"),
                              ("dataflow (fused) utilisation", "kernel-by-kernel utilisation", "dataflow / kernel by kernel")):
        grid = []
        for s in srams:
            row = []
            for d in drams:
                r = next(x for x in sweep if x["sram_mb"] == s and x["dram_gbps"] == d)
                if key == "ratio":
                    v = r["fused"] / r["kernel_by_kernel"] if r["fused"] and r["kernel_by_kernel"] else float("nan")
                else:
                    v = r[key] if r[key] is not None else float("nan")
                row.append(v)
            grid.append(row)
        im = ax.imshow(grid, origin="lower", cmap="viridis")
        for i in range(3):
            for j in range(3):
                ax.text(j, i, f"{grid[i][j]:.2f}", ha="center", va="center", color="w")
        ax.set_xticks(range(3), [f"{d} GB/s" for d in drams])
        ax.set_yticks(range(3), [f"{s} MB" for s in srams])
        ax.set_xlabel("DRAM bandwidth")
        ax.set_ylabel("SRAM")
        ax.set_title(title)
        fig.colorbar(im, ax=ax)
    fig.suptitle("GPT-3 175B on 8 chips of 300 TFLOPS, 4 x 2 torus (tessera plan-parallel)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


SIMULATED = [("a100-switch-4", "gpt3-1.3b", ["--mapping", "TP", "--fusion", "fused"], 4),
             ("sn10-ring-8", "gpt3-175b", [], 2),
             ("sn10-torus-4x2", "gpt3-175b", [], 4),
             ("a100-switch-4", "gpt3-1.3b", ["--mapping", "TP", "--fusion", "fused", "--training", "--global-batch", "4"], 0),
             ("sn10-torus-4x2", "gpt3-1.3b", ["--training", "--global-batch", "16"], 0),
             ("sn10-torus-4x2", "gpt3-1.3b", ["--training", "--global-batch", "16", "--mapping", "DP,PP"], 0),
             # issue 17's 1024-GPU mapping, at a global batch of 128 (4 micro-batches per replica; its
             # program of 83 M messages needs 10.5 GB), on A100s of 80 GiB and at message granularity
             # (see big_config)
             ("a100-1024", "gpt3-175b", ["--layers", "60", "--hidden", "10240", "--heads", "80", "--training",
                                         "--global-batch", "128", "--fusion", "kernel-by-kernel", "--micro-batch", "1",
                                         "--mapping", "TP,PP,DP"], 0)]


def big_config(tmp):
    """a100-1024 with 80 GiB per GPU (TP8 PP4 DP32 needs 60.4 GB by the model, 40 GiB hold 37.7 GB
    of weights and optimiser state and then no activations) and a packet as large as any message
    (buffers of two), so the links carry each message whole: packet by packet its TP all-reduces
    did not finish in 15 CPU-minutes."""
    c = json.load(open(os.path.join(ROOT, "configs", "a100-1024.json")))
    c["name"] = "a100-1024-80g-messages"
    c["chip"]["offchip"]["capacity_bytes"] = 80 * 1024 ** 3
    c["system"]["packet_bytes"] = 64 * 1024 ** 2
    c["system"]["buffer_bytes"] = c["system"]["afi"]["port_buffer_bytes"] = 2 * 64 * 1024 ** 2
    path = os.path.join(tmp, "a100-1024-80g-messages.json")
    json.dump(c, open(path, "w"))
    return path


def simulated(args):
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for config, model, extra, mbs in SIMULATED:
            path = big_config(tmp) if config == "a100-1024" else os.path.join(ROOT, "configs", config + ".json")
            shown = model
            if config == "a100-1024":
                config, shown = "a100-1024 (80 GiB, whole messages)", "60 layers, hidden 10240"
            run = [path, "--simulate", "--sim-micro-batches", str(max(mbs, 1)), *extra]
            r = plan(args.tessera, *run, model=model)
            mbs = r["simulated"]["micro_batches"]
            m = r["mappings"][0]
            plain = None  # the TP all-reduces after each partition's compute, not streamed beside it
            if m["tp"] > 1:
                plain = plan(args.tessera, *run, "--sim-no-stream", model=model)["simulated"]["seconds"]
            net = sum(p["network_s"] for p in m["partitions"])
            comp = sum(max(p["compute_s"], p["memory_s"]) for p in m["partitions"])
            if "--training" in extra:  # forward and backward: the sum against the sum of the maxima
                net += sum(p.get("backward_network_s", 0) for p in m["partitions"])
                comp += sum(max(p.get("backward_compute_s", 0), p.get("backward_memory_s", 0)) for p in m["partitions"])
            rows.append({"config": config, "model": shown, "training": "--training" in extra,
                         "mapping": short(m), "execution": m["execution"],
                         "micro_batches": mbs, "model_s": r["simulated"]["model_seconds"],
                         "simulated_s": r["simulated"]["seconds"], "ratio": r["simulated"]["simulated_over_model"],
                         "not_streamed_s": plain,
                         "layer_compute_s": comp, "layer_network_s": net,
                         "layer_s": m["layer_s"] + m.get("backward_layer_s", 0)})
    return rows


def simulated_table(rows):
    md = ["| system | model | mapping | micro-batches | model ms | simulated ms | simulated / model | "
          "not streamed: simulated ms (/ model) | "
          "a layer: max(compute, DRAM) + network vs the model's max of the three |", "|---|---|---|---|---|---|---|---|---|"]
    for x in rows:
        run = "training iteration of " if x["training"] else ""
        plain = x.get("not_streamed_s")
        plain = f"{plain * 1e3:.1f} ({plain / x['model_s']:.2f}x)" if plain else "(no TP)"
        md.append(f"| {x['config']} | {x['model']} | {x['mapping']} {x['execution']} | {run}{x['micro_batches']} | "
                  f"{x['model_s'] * 1e3:.1f} | {x['simulated_s'] * 1e3:.1f} | **{x['ratio']:.2f}x** | {plain} | "
                  f"{(x['layer_compute_s'] + x['layer_network_s']) / x['layer_s']:.2f}x |")
    return "\n".join(md) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "cli", "tessera"))
    ap.add_argument("--out", default=os.path.join(ROOT, "results", "dfmodel"))
    ap.add_argument("--simulated-only", action="store_true", help="only the mappings on the simulator")
    ap.add_argument("--training-only", action="store_true", help="only the two A100 cases against the authors' runs")
    args = ap.parse_args()
    if not os.access(args.tessera, os.X_OK):
        sys.exit(f"reproduce_dfmodel: {args.tessera} is not an executable; build first (scripts/build.sh)")
    os.makedirs(args.out, exist_ok=True)
    if args.training_only:
        train = training(args)
        json.dump({"training": train}, open(os.path.join(args.out, "training.json"), "w"), indent=1)
        print(training_table(train))
        return
    sim = simulated(args)
    if args.simulated_only:
        json.dump({"simulated": sim}, open(os.path.join(args.out, "simulated.json"), "w"), indent=1)
        print(simulated_table(sim))
        return
    case, sweep, train, net = case_study(args), memory_sweep(args), training(args), network(args)
    kern = kernels(args)
    json.dump({"case_study": case, "memory_sweep": sweep, "training": train, "network": net, "kernels": kern,
               "simulated": sim}, open(os.path.join(args.out, "results.json"), "w"), indent=1)
    md = tables(case, sweep, train, net, kern) + "\n" + simulated_table(sim)
    open(os.path.join(args.out, "tables.md"), "w").write(md)
    print(md)
    heatmap(sweep, os.path.join(args.out, "heatmap.png"))


if __name__ == "__main__":
    main()
