#!/usr/bin/python3
"""Reproduce the shape of the T10 paper's evaluation on the simulator.

For every built-in model: batch sizes doubling from 1 until neither planner fits, both planners
(t10 = compute-shift, vgm = the Roller-like load-compute-store baseline) on configs/ipu-mk2.json;
prints latency, speedup, exchange share of time and the largest batch that fits. Then the
core-count sweep (368/736/1472 cores) and 2-/4-chip V-IPU runs for a few models.

  scripts/reproduce_t10.py [--tessera build/cli/tessera] [--models bert-large,nerf] [--max-batch 64]
                           [--skip-sweeps] [--out results.json]

Everything printed is also written to --out (JSON). Uses only the Python standard library.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["bert-large", "vit-base", "resnet-18", "nerf", "opt-1.3b", "opt-6.7b", "opt-13b",
          "llama2-7b", "llama2-13b", "retnet-1.3b"]


def run(tessera, config, model, planner, batch, workdir):
    out = os.path.join(workdir, f"{model}-{planner}-{batch}.json")
    cmd = [tessera, "run", "--config", config, "--workload", model, "--planner", planner,
           "--batch", str(batch), "--quiet", "--out", out]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        msg = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        # Only the compiler's own verdict means "does not fit"; anything else (killed for host
        # memory, a crash) is reported as an error, not as a batch that does not fit.
        if "does not fit" not in msg:
            print(f"  {model} {planner} batch {batch}: ERROR: {msg}", file=sys.stderr, flush=True)
            return {"fits": False, "error": msg, "failed": True}
        return {"fits": False, "error": msg}
    r = json.load(open(out))
    os.remove(out)
    return {"fits": True, "cycles": r["total_cycles"], "ms": r["total_seconds"] * 1e3,
            "exchange_share": r["exchange_share"], "predicted_cycles": r["predicted_cycles"],
            "roofline_cycles": r["roofline"]["bound_cycles"], "roofline_fraction": r["roofline"]["fraction"]}


def batch_sweep(args, workdir):
    rows = []
    config = os.path.join(ROOT, "configs", "ipu-mk2.json")
    print(f"{'model':<12} {'batch':>5} {'t10 ms':>9} {'vgm ms':>9} {'speedup':>8} {'t10 exch':>9} {'vgm exch':>9} {'t10 roof':>9} {'vgm roof':>9}")
    for model in args.models:
        batch = 1
        largest = {"t10": 0, "vgm": 0}
        while batch <= args.max_batch:
            res = {pl: run(args.tessera, config, model, pl, batch, workdir) for pl in ("t10", "vgm")}
            for pl in res:
                if res[pl]["fits"]:
                    largest[pl] = batch
            if not res["t10"]["fits"] and not res["vgm"]["fits"]:
                break
            if res["t10"].get("failed") or res["vgm"].get("failed"):
                rows.append({"model": model, "batch": batch, "t10": res["t10"], "vgm": res["vgm"]})
                print(f"{model:<12} {batch:>5} run failed (see the error above); stopping this model", flush=True)
                break
            t, v = res["t10"], res["vgm"]
            fmt = lambda r, k, f: (f.format(r[k]) if r["fits"] else "-")
            speed = f"{v['cycles'] / t['cycles']:.2f}x" if t["fits"] and v["fits"] else "-"
            print(f"{model:<12} {batch:>5} {fmt(t, 'ms', '{:.3f}'):>9} {fmt(v, 'ms', '{:.3f}'):>9} {speed:>8} "
                  f"{fmt(t, 'exchange_share', '{:.0%}'):>9} {fmt(v, 'exchange_share', '{:.0%}'):>9} "
                  f"{fmt(t, 'roofline_fraction', '{:.1%}'):>9} {fmt(v, 'roofline_fraction', '{:.1%}'):>9}", flush=True)
            rows.append({"model": model, "batch": batch, "t10": t, "vgm": v})
            batch *= 2
        print(f"{model:<12} largest batch that fits: t10 {largest['t10']}, vgm {largest['vgm']}", flush=True)
        rows.append({"model": model, "largest_batch": largest})
    both = [r for r in rows if "t10" in r and r["t10"]["fits"] and r["vgm"]["fits"]]
    if both:
        ups = [r["vgm"]["cycles"] / r["t10"]["cycles"] for r in both]
        print(f"speedup over vgm: mean {sum(ups) / len(ups):.2f}x, max {max(ups):.2f}x over {len(ups)} runs "
              f"(paper: 1.69x mean, 3.3x max over Roller)")
        te = [r["t10"]["exchange_share"] for r in both]
        ve = [r["vgm"]["exchange_share"] for r in both]
        print(f"exchange share: t10 {min(te):.0%}-{max(te):.0%}, vgm {min(ve):.0%}-{max(ve):.0%} "
              f"(paper: 8-43% vs 50-74%)")
    return rows


def variant_config(path, cores=None, workdir=None):
    c = json.load(open(path))
    if cores:
        c["chip"]["cores"] = cores
        c["name"] = f"{c['name']}-{cores}"
    out = os.path.join(workdir, f"{c['name']}.json")
    json.dump(c, open(out, "w"))
    return out


def sweeps(args, workdir):
    rows = []
    base = os.path.join(ROOT, "configs", "ipu-mk2.json")
    print("\ncore-count sweep (batch 1)")
    print(f"{'model':<12} {'cores':>5} {'t10 ms':>9} {'vgm ms':>9}")
    for model in args.sweep_models:
        for cores in (368, 736, 1472):
            cfg = variant_config(base, cores, workdir)
            res = {pl: run(args.tessera, cfg, model, pl, 1, workdir) for pl in ("t10", "vgm")}
            f = lambda r: f"{r['ms']:.3f}" if r["fits"] else "-"
            print(f"{model:<12} {cores:>5} {f(res['t10']):>9} {f(res['vgm']):>9}", flush=True)
            rows.append({"model": model, "cores": cores, **res})
    print("\nmulti-chip V-IPU (batch 1)")
    print(f"{'model':<12} {'config':>8} {'t10 ms':>9} {'vgm ms':>9} {'t10 exch':>9} {'vgm exch':>9}")
    for model in args.sweep_models:
        for name in ("ipu-mk2", "vipu-2", "vipu-4"):
            cfg = os.path.join(ROOT, "configs", f"{name}.json")
            res = {pl: run(args.tessera, cfg, model, pl, 1, workdir) for pl in ("t10", "vgm")}
            f = lambda r, k, s: s.format(r[k]) if r["fits"] else "-"
            print(f"{model:<12} {name:>8} {f(res['t10'], 'ms', '{:.3f}'):>9} {f(res['vgm'], 'ms', '{:.3f}'):>9} "
                  f"{f(res['t10'], 'exchange_share', '{:.0%}'):>9} {f(res['vgm'], 'exchange_share', '{:.0%}'):>9}", flush=True)
            rows.append({"model": model, "config": name, **res})
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "cli", "tessera"))
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--sweep-models", default="resnet-18,nerf")
    ap.add_argument("--max-batch", type=int, default=256)
    ap.add_argument("--skip-sweeps", action="store_true")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    args.sweep_models = [m for m in args.sweep_models.split(",") if m]
    if not os.access(args.tessera, os.X_OK):
        sys.exit(f"reproduce_t10: {args.tessera} is not an executable; build first (scripts/build.sh)")
    with tempfile.TemporaryDirectory() as workdir:
        result = {"batches": batch_sweep(args, workdir)}
        if not args.skip_sweeps:
            result["sweeps"] = sweeps(args, workdir)
    if args.out:
        json.dump(result, open(args.out, "w"), indent=1)


if __name__ == "__main__":
    main()
