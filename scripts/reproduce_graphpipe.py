#!/usr/bin/python3
"""GraphPipe's results, in shape, with `tessera plan-pipeline` on configs/summit-32.json
(32 V100-like NPUs, 4 per node): every plan estimated and run on the simulator.

Writes results.json and tables.md under --out:

  throughput  MMT, CANDLE-Uno and DLRM on 4, 8, 16 and 32 devices (mini-batch as in the thesis:
              16, 1024 and 64 samples per device): GraphPipe vs the sequential pipeline, simulated
              samples/s, their ratio, pipeline depths, search CPU time and DP states
  branches    CANDLE-Uno with 2, 4, 8 and 16 branches on 4, 8 and 16 devices: the ratio, with data
              parallelism and without (--max-replicas 1)
  no DP       the same models and devices with one replica per stage (--max-replicas 1): the
              ratio when the planners cannot balance stages by data parallelism
  case study  the 2-branch model (4 x [MHA, 2 linear] per branch) on 8 devices: stages, depth,
              micro-batch sizes of both planners, with data parallelism and without (the thesis's
              case study found no data parallelism)
  schedules   1F1B, kFkB (k of 1, 2 or 4 per stage) and greedy on GraphPipe's plans, 8 devices
  estimate    the planner's estimated iteration against the simulated one, every run above
  heat maps   utilisation.png: each device's busy share over the simulated iteration (40 slices),
              GraphPipe against the sequential pipeline, for DLRM and CANDLE-Uno on 8 and 16 devices
              (needs python3-matplotlib)

  scripts/reproduce_graphpipe.py [--tessera build/cli/tessera] [--out results/graphpipe]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "configs", "summit-32.json")
SEARCH = re.compile(r"^(graphpipe|sequential): .*\n  search ([0-9.]+) CPU-s", re.M)


def run(tessera, model, devices, *extra):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        cmd = [tessera, "plan-pipeline", "--config", CONFIG, "--model", model, "--devices", str(devices),
               "--out", out, *extra]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            sys.exit(f"reproduce_graphpipe: {' '.join(cmd)} failed: {p.stderr.strip()}")
        r = json.load(open(out))
    cpu = {m.group(1): float(m.group(2)) for m in SEARCH.finditer(p.stdout)}
    for plan in r["plans"]:
        plan["search_cpu_s"] = cpu.get(plan["planner"])
    return r


def plans(r):
    return {p["planner"]: p for p in r["plans"]}


def throughput(args, estimates):
    rows = ["| model | devices | mini-batch | GraphPipe samples/s | sequential samples/s | ratio (simulated) | "
            "ratio (estimated) | depth G / S | stages G / S | search CPU-s G / S | DP states G / S |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    data = []
    for model in ["mmt", "candle-uno", "dlrm"]:
        for devices in [4, 8, 16, 32]:
            r = run(args.tessera, model, devices)
            ps = plans(r)
            g, s = ps["graphpipe"], ps["sequential"]
            ratio = r["graphpipe_over_sequential"]
            for p in (g, s):
                estimates.append((r["model"], devices, p["planner"], p["estimate"]["iteration_s"],
                                  p["simulated"]["iteration_s"]))
            rows.append(f"| {r['model']} | {devices} | {r['mini_batch']} | {g['simulated']['samples_per_s']:,.0f} | "
                        f"{s['simulated']['samples_per_s']:,.0f} | **{ratio['simulated_throughput']:.2f}x** | "
                        f"{ratio['estimated_throughput']:.2f}x | {g['depth']} / {s['depth']} | "
                        f"{len(g['stages'])} / {len(s['stages'])} | {g['search_cpu_s']:.3f} / {s['search_cpu_s']:.3f} | "
                        f"{g['dp_states']:,} / {s['dp_states']:,} |")
            data.append(r)
    return rows, data


def branches(args):
    rows = ["| branches | 4 devices | 8 devices | 16 devices | no DP: 4 devices | no DP: 8 devices | no DP: 16 devices |",
            "|---|---|---|---|---|---|---|"]
    data = []
    for b in [2, 4, 8, 16]:
        cells = []
        for extra in ([], ["--max-replicas", "1"]):
            for devices in [4, 8, 16]:
                r = run(args.tessera, "candle-uno", devices, "--branches", str(b), *extra)
                cells.append(f"{r['graphpipe_over_sequential']['simulated_throughput']:.2f}x")
                data.append(r)
        rows.append(f"| {b} | " + " | ".join(cells) + " |")
    return rows, data


def no_data_parallel(args):
    rows = ["| model | devices | ratio (simulated) | ratio (estimated) | depth G / S | stages G / S | devices used G / S |",
            "|---|---|---|---|---|---|---|"]
    data = []
    for model in ["mmt", "candle-uno", "dlrm"]:
        for devices in [4, 8, 16, 32]:
            r = run(args.tessera, model, devices, "--max-replicas", "1")
            g, s = plans(r)["graphpipe"], plans(r)["sequential"]
            ratio = r["graphpipe_over_sequential"]
            rows.append(f"| {r['model']} | {devices} | **{ratio['simulated_throughput']:.2f}x** | "
                        f"{ratio['estimated_throughput']:.2f}x | {g['depth']} / {s['depth']} | "
                        f"{len(g['stages'])} / {len(s['stages'])} | {g['devices_used']} / {s['devices_used']} |")
            data.append(r)
    return rows, data


def case_study(args):
    rows = ["| data parallelism | planner | stages | depth | micro-batch sizes | replicas | in-flight at the first stage | "
            "simulated samples/s |", "|---|---|---|---|---|---|---|---|"]
    data, ratios = [], []
    for label, extra in (("allowed", []), ("none (--max-replicas 1)", ["--max-replicas", "1"])):
        r = run(args.tessera, "two-branch", 8, *extra)
        for p in r["plans"]:
            mbs = sorted({s["micro_batch"] for s in p["stages"]})
            reps = sorted({s["replicas"] for s in p["stages"]})
            rows.append(f"| {label} | {p['planner']} | {len(p['stages'])} | {p['depth']} | {', '.join(map(str, mbs))} | "
                        f"{', '.join(map(str, reps))} | {p['stages'][0]['in_flight_samples']} | "
                        f"{p['simulated']['samples_per_s']:,.0f} |")
        ratios.append(f"{label}: {r['graphpipe_over_sequential']['simulated_throughput']:.3f}x")
        data.append(r)
    rows.append("")
    rows.append(f"GraphPipe / sequential, simulated: {'; '.join(ratios)}.")
    return rows, data


def schedules(args):
    rows = ["| model (8 devices) | 1F1B | kFkB | greedy |", "|---|---|---|---|"]
    data = []
    for model in ["mmt", "candle-uno", "dlrm"]:
        cells = []
        for sched in ["1f1b", "kfkb", "greedy"]:
            r = run(args.tessera, model, 8, "--planner", "graphpipe", "--schedule", sched)
            p = r["plans"][0]
            cells.append(f"{p['simulated']['samples_per_s']:,.0f}")
            data.append(r)
        rows.append(f"| {model} | " + " | ".join(cells) + " |")
    return rows, data


def heatmaps(runs, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("reproduce_graphpipe: python3-matplotlib is not installed; no heat maps", file=sys.stderr)
        return
    fig, axes = plt.subplots(len(runs), 2, figsize=(12, 2.6 * len(runs)), squeeze=False)
    for row, r in enumerate(runs):
        for col, p in enumerate(r["plans"]):
            ax = axes[row][col]
            grid = p["simulated"]["utilisation_bins"]
            im = ax.imshow(grid, aspect="auto", cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
            ms = p["simulated"]["iteration_s"] * 1e3
            ax.set_title(f"{r['model']}, {r['devices']} devices, {p['planner']}: {ms:.1f} ms", fontsize=9)
            ax.set_xlabel(f"time (40 slices of {ms / 40:.2f} ms)", fontsize=8)
            ax.set_ylabel("device", fontsize=8)
            fig.colorbar(im, ax=ax)
    fig.suptitle("Busy share per device over one simulated iteration (tessera plan-pipeline, summit-32)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "cli", "tessera"))
    ap.add_argument("--out", default=os.path.join(ROOT, "results", "graphpipe"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    estimates = []
    tp_rows, tp = throughput(args, estimates)
    br_rows, br = branches(args)
    nd_rows, nd = no_data_parallel(args)
    cs_rows, cs = case_study(args)
    sc_rows, sc = schedules(args)
    maps = [r for r in tp if r["model"].startswith(("dlrm", "candle")) and r["devices"] in (8, 16)]
    heatmaps(maps, os.path.join(args.out, "utilisation.png"))
    errs = [abs(e - s) / s for (_, _, _, e, s) in estimates]
    est_rows = [f"Estimated vs simulated iteration over the {len(errs)} runs of the throughput table: mean absolute "
                f"error {100 * sum(errs) / len(errs):.1f}%, largest {100 * max(errs):.1f}%."]
    md = ["### Throughput: GraphPipe vs the sequential pipeline (simulated)", "", *tp_rows, "",
          "### Branch count (CANDLE-Uno, GraphPipe / sequential, simulated; no DP: --max-replicas 1)", "", *br_rows, "",
          "### Without data parallelism (one replica per stage, GraphPipe / sequential)", "", *nd_rows, "",
          "### Case study: two branches on 8 devices", "", *cs_rows, "",
          "### Micro-batch schedules (GraphPipe plans, simulated samples/s)", "", *sc_rows, "",
          "### The planner's estimate", "", *est_rows, ""]
    with open(os.path.join(args.out, "tables.md"), "w") as f:
        f.write("\n".join(md))
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump({"throughput": tp, "branches": br, "no_data_parallel": nd, "case_study": cs, "schedules": sc,
                   "estimate_vs_simulated": [list(e) for e in estimates]}, f, indent=1)
    print("\n".join(md))
    print(f"({time.time() - t0:.0f} s; tables in {args.out}/tables.md)")


if __name__ == "__main__":
    main()
