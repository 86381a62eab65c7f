#!/usr/bin/python3
"""Reproduce the shape of the ACE paper's collective experiments on the simulator.

Runs `tessera collective` (hierarchical all-reduce on the L x V (x H) torus configs) and writes
a results JSON, one CSV per experiment, PNG plots and the Markdown tables the README shows:

  bytes    4x4x4, each engine: time, injected bandwidth, memory read and written per NPU
           (the paper's analytical model: ACE reads N; the baseline 1.5 N per N sent)
  memory   Fig. 5: injected bandwidth against the memory bandwidth collectives may use, 16 and
           64 NPUs, baseline (cores) and ACE against Ideal; the memory each needs for 90%
  cores    Fig. 6: the baseline's bandwidth against the cores (SMs) running its kernels
  sram     Fig. 9a: ACE's bandwidth over SRAM size x FSM count
  train    Sec. VI: `tessera train`, all five configurations, per model (the README's table)

  scripts/reproduce_ace.py [--tessera build/cli/tessera] [--out results/ace] [--bytes 64MiB]
                           [--jobs 2] [--only bytes,memory,cores,sram,train]
                           [--train-config ace-torus-128] [--train-models resnet-50,resnet-50-b8,gnmt,dlrm]
                           [--share-hold static|in-flight] [--forwarding message|packet]

Every run is one process; --jobs runs that many at once. Matplotlib (python3-matplotlib) draws
the plots; without it the tables are still written.
"""
import argparse
import concurrent.futures
import csv
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MEMORY_GB_PER_S = [32, 64, 96, 128, 192, 256, 320, 384, 450, 600, 900]
CORES = [1, 2, 3, 4, 5, 6, 8, 10]
SRAM_MIB = [1, 2, 4, 8]
FSMS = [4, 8, 12, 16, 20]


FORWARDING = []  # ["--forwarding", "packet"] with --forwarding packet (collective runs only)


def collective(tessera, config, size, engine, extra=()):
    """One `tessera collective` run; returns its results JSON (or {"error": ...})."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        cmd = [tessera, "collective", "--config", os.path.join(ROOT, "configs", config + ".json"),
               "--op", "allreduce", "--algorithm", "hierarchical", "--bytes", size,
               "--engine", engine, "--out", out, *FORWARDING, *extra]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            msg = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
            print(f"  {config} {engine} {' '.join(extra)}: ERROR: {msg}", file=sys.stderr, flush=True)
            return {"error": msg}
        return json.load(open(out))


def run_all(tessera, jobs, runs):
    """runs: {key: (config, size, engine, extra)} -> {key: result}, `jobs` processes at a time."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {k: pool.submit(collective, tessera, *v) for k, v in runs.items()}
        return {k: f.result() for k, f in futures.items()}


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def bytes_experiment(args, out):
    runs = {e: ("ace-torus-64", args.bytes, e, ()) for e in ("ideal", "cores", "ace")}
    res = run_all(args.tessera, args.jobs, runs)
    rows = []
    for e in ("ideal", "cores", "ace"):
        r = res[e]
        n = r["bytes"]
        sent = max(r["sent_bytes_per_chip"])
        read = max(r["memory_read_bytes_per_chip"])
        written = max(r["memory_write_bytes_per_chip"])
        rows.append([e, r["cycles"], round(r["injected_gb_per_s"], 1), round(sent / n, 4), round(read / n, 4),
                     round(written / n, 4), round(read / sent, 3)])
    header = ["engine", "cycles", "injected_gb_per_s", "sent_per_N", "read_per_N", "written_per_N",
              "read_per_N_sent"]
    write_csv(os.path.join(out, "bytes.csv"), header, rows)
    table = ["| engine | cycles | injected GB/s | sent / N | memory read / N | written / N | read per N sent |",
             "|---|---|---|---|---|---|---|"]
    table += [f"| {r[0]} | {r[1]:,} | {r[2]} | {r[3]} | {r[4]} | {r[5]} | {r[6]} |" for r in rows]
    return {"rows": [dict(zip(header, r)) for r in rows], "table": table}


def needed(points, target):
    """The smallest swept memory bandwidth whose injected bandwidth reaches `target`, or None."""
    for mem, bw in sorted(points):
        if bw >= target:
            return mem
    return None


def memory_experiment(args, out):
    runs = {}
    for cfg in ("ace-torus-16", "ace-torus-64"):
        runs[(cfg, "ideal", 0)] = (cfg, args.bytes, "ideal", ())
        for e in ("cores", "ace"):
            for m in MEMORY_GB_PER_S:
                runs[(cfg, e, m)] = (cfg, args.bytes, e, ("--memory-gb-per-s", str(m), "--cores", "80"))
    res = run_all(args.tessera, args.jobs, runs)
    rows, summary = [], []
    for cfg in ("ace-torus-16", "ace-torus-64"):
        ideal = res[(cfg, "ideal", 0)]["injected_gb_per_s"]
        need = {}
        for e in ("cores", "ace"):
            pts = [(m, res[(cfg, e, m)]["injected_gb_per_s"]) for m in MEMORY_GB_PER_S if "error" not in res[(cfg, e, m)]]
            rows += [[cfg, e, m, round(bw, 1), round(bw / ideal, 3)] for m, bw in pts]
            best = max(bw for _, bw in pts)
            need[e] = {"best": best, "of_ideal": needed(pts, 0.9 * ideal), "of_own_best": needed(pts, 0.9 * best)}
        summary.append({"config": cfg, "ideal_gb_per_s": ideal, **need})
    write_csv(os.path.join(out, "memory.csv"), ["config", "engine", "memory_gb_per_s", "injected_gb_per_s", "of_ideal"], rows)
    table = ["| NPUs | Ideal GB/s | baseline best (share of Ideal) | memory for 90% of Ideal: baseline / ACE | "
             "ACE best (share of Ideal) | memory for 90% of own best: baseline / ACE | ratio |",
             "|---|---|---|---|---|---|---|"]
    for s in summary:
        c, a, ideal = s["cores"], s["ace"], s["ideal_gb_per_s"]
        fmt = lambda v: "not reached" if v is None else f"{v} GB/s"
        ratio = (c["of_own_best"] / a["of_own_best"]) if c["of_own_best"] and a["of_own_best"] else None
        table.append(f"| {s['config'].split('-')[-1]} | {ideal:.1f} | {c['best']:.1f} ({c['best'] / ideal:.0%}) | "
                     f"{fmt(c['of_ideal'])} / {fmt(a['of_ideal'])} | {a['best']:.1f} ({a['best'] / ideal:.0%}) | "
                     f"{fmt(c['of_own_best'])} / {fmt(a['of_own_best'])} | "
                     f"{'' if ratio is None else f'{ratio:.1f}x'} |")
    plot(os.path.join(out, "memory.png"), "memory bandwidth for collectives (GB/s)", "injected bandwidth (GB/s)",
         {f"{cfg.split('-')[-1]} NPUs {e}": [(r[2], r[3]) for r in rows if r[0] == cfg and r[1] == e]
          for cfg in ("ace-torus-16", "ace-torus-64") for e in ("cores", "ace")},
         {f"{s['config'].split('-')[-1]} NPUs ideal": s["ideal_gb_per_s"] for s in summary})
    return {"rows": rows, "summary": summary, "table": table}


def cores_experiment(args, out):
    runs = {c: ("ace-torus-64", args.bytes, "cores", ("--memory-gb-per-s", "900", "--cores", str(c))) for c in CORES}
    runs["ideal"] = ("ace-torus-64", args.bytes, "ideal", ())
    res = run_all(args.tessera, args.jobs, runs)
    ideal = res["ideal"]["injected_gb_per_s"]
    rows = [[c, round(res[c]["injected_gb_per_s"], 1), round(res[c]["injected_gb_per_s"] / ideal, 3)] for c in CORES]
    write_csv(os.path.join(out, "cores.csv"), ["cores", "injected_gb_per_s", "of_ideal"], rows)
    table = ["| cores (SMs) | " + " | ".join(str(r[0]) for r in rows) + " |",
             "|---|" + "---|" * len(rows),
             "| injected GB/s | " + " | ".join(f"{r[1]}" for r in rows) + " |",
             "| share of Ideal | " + " | ".join(f"{r[2]:.0%}" for r in rows) + " |"]
    plot(os.path.join(out, "cores.png"), "cores (SMs) running the baseline's kernels", "injected bandwidth (GB/s)",
         {"baseline, 900 GB/s memory": [(r[0], r[1]) for r in rows]}, {"ideal": ideal})
    return {"rows": rows, "ideal_gb_per_s": ideal, "table": table}


def sram_experiment(args, out):
    runs = {(s, f): ("ace-torus-64", args.bytes, "ace", ("--ace-sram-bytes", f"{s}MiB", "--ace-fsms", str(f)))
            for s in SRAM_MIB for f in FSMS}
    res = run_all(args.tessera, args.jobs, runs)
    base = res[(4, 16)]["injected_gb_per_s"]
    rows = [[s, f, round(res[(s, f)].get("injected_gb_per_s", 0), 1)] for s in SRAM_MIB for f in FSMS]
    write_csv(os.path.join(out, "sram.csv"), ["sram_mib", "fsms", "injected_gb_per_s"], rows)
    table = ["| SRAM \\ FSMs | " + " | ".join(str(f) for f in FSMS) + " |", "|---|" + "---|" * len(FSMS)]
    for s in SRAM_MIB:
        cells = []
        for f in FSMS:
            r = res[(s, f)]
            cells.append("too small" if "error" in r else f"{r['injected_gb_per_s'] / base:.2f}")
        table.append(f"| {s} MiB | " + " | ".join(cells) + " |")
    plot(os.path.join(out, "sram.png"), "FSMs", "injected bandwidth (GB/s)",
         {f"{s} MiB": [(r[1], r[2]) for r in rows if r[0] == s and r[2] > 0] for s in SRAM_MIB}, {})
    return {"rows": rows, "base_gb_per_s": base, "table": table}


def train_one(tessera, config, model, share_hold):
    """`tessera train --mode all` of one layer table; returns {mode: results} (or {"error": ...})."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "t.json")
        cmd = [tessera, "train", "--config", os.path.join(ROOT, "configs", config + ".json"),
               "--layers", os.path.join(ROOT, "workloads", "train", model + ".json"), "--out", out,
               "--share-hold", share_hold]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            msg = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
            print(f"  train {model}: ERROR: {msg}", file=sys.stderr, flush=True)
            return {"error": msg}
        return {r["mode"]: r for r in json.load(open(out))}


def train_experiment(args, out):
    models = [m for m in args.train_models.split(",") if m]
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = {m: pool.submit(train_one, args.tessera, args.train_config, m, args.share_hold) for m in models}
        res = {m: f.result() for m, f in futures.items()}
    modes = ["nooverlap", "commopt", "compopt", "ace"]
    rows, table = [], ["| model (batch per NPU) | Ideal iteration | " + " | ".join(modes) +
                       " | ACE over the best baseline |", "|---|---|" + "---|" * len(modes) + "---|"]
    for m in models:
        r = res[m]
        if "error" in r:
            table.append(f"| {m} | error: {r['error']} |")
            continue
        ideal = r["ideal"]["iteration_cycles"]
        share = {k: ideal / r[k]["iteration_cycles"] for k in modes}
        best = min(r[k]["iteration_cycles"] for k in ("nooverlap", "commopt", "compopt"))
        speedup = best / r["ace"]["iteration_cycles"]
        rows.append([m, r["ideal"]["batch_per_npu"], r["ideal"]["compute_cycles"]] + [round(share[k], 4) for k in modes] +
                    [round(speedup, 3)])
        table.append(f"| {m} ({r['ideal']['batch_per_npu']}) | {r['ideal']['iteration_us'] / 1e3:.2f} ms | " +
                     " | ".join(f"{share[k]:.1%}" for k in modes) + f" | {speedup:.2f}x |")
    name = "train.csv" if args.share_hold == "static" else f"train-{args.share_hold}.csv"
    write_csv(os.path.join(out, name), ["model", "batch_per_npu", "ideal_compute_cycles"] +
              [f"{k}_share_of_ideal" for k in modes] + ["ace_over_best_baseline"], rows)
    return {"rows": rows, "table": table}


def plot(path, xlabel, ylabel, series, lines):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"  (no matplotlib: {path} not drawn)", file=sys.stderr)
        return
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for name, pts in series.items():
        if pts:
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    for name, y in lines.items():
        ax.axhline(y, linestyle="--", linewidth=1, color="gray")
        ax.annotate(name, (ax.get_xlim()[0], y), fontsize=7, va="bottom")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "cli", "tessera"))
    ap.add_argument("--out", default=os.path.join(ROOT, "results", "ace"))
    ap.add_argument("--bytes", default="64MiB", help="all-reduce size per NPU (the paper's Fig. 5: 64 MB)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="bytes,memory,cores,sram,train")
    ap.add_argument("--train-config", default="ace-torus-128", help="system for the train experiment (configs/NAME.json)")
    ap.add_argument("--train-models", default="resnet-50,resnet-50-b8,gnmt,dlrm",
                    help="layer tables for the train experiment (workloads/train/NAME.json)")
    ap.add_argument("--share-hold", default="static", choices=["static", "in-flight"],
                    help="train: communication holds its share of the NPU for the whole iteration (the paper) "
                         "or only while a collective is in flight")
    ap.add_argument("--forwarding", choices=["message", "packet"],
                    help="how the ideal and ace engines forward a ring step (tessera collective --forwarding); "
                         "default: the configs' system.collective_forwarding. Not for the train experiment")
    args = ap.parse_args()
    if args.forwarding:
        FORWARDING[:] = ["--forwarding", args.forwarding]
    if not os.access(args.tessera, os.X_OK):
        sys.exit(f"reproduce_ace.py: {args.tessera} is not an executable; build first (scripts/build.sh) or pass --tessera")
    known = {"bytes": bytes_experiment, "memory": memory_experiment, "cores": cores_experiment, "sram": sram_experiment,
             "train": train_experiment}
    wanted = [w for w in args.only.split(",") if w]
    for w in wanted:
        if w not in known:
            sys.exit(f"reproduce_ace.py: --only: unknown experiment '{w}' (expected {', '.join(known)})")
    if args.forwarding and "train" in wanted:
        sys.exit("reproduce_ace.py: --forwarding applies to the collective experiments; for train, set "
                 "system.collective_forwarding in the --train-config")
    os.makedirs(args.out, exist_ok=True)
    results = {"bytes_per_npu": args.bytes, "forwarding": args.forwarding or "the configs'"}
    for w in wanted:
        print(f"== {w}", flush=True)
        results[w] = known[w](args, args.out)
        print("\n".join(results[w]["table"]), flush=True)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1, default=str)
    print(f"results in {args.out}")


if __name__ == "__main__":
    main()
