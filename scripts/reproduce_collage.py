#!/usr/bin/python3
"""Collage's choice (T10 or VGM per operator) against all-T10 and all-VGM, simulated.

For every built-in model and batch (1, 2, 4 by default), runs `tessera run --planner t10|vgm|collage`
on configs/ipu-mk2.json (or --config) and prints, per run: the three simulated latencies, how
many operators the collage put on VGM, and the collage over the faster of the other two that fit
(above 1.00x: the mix is faster than either planner alone). A batch that T10 or the collage does
not fit is left out; one that only VGM does not fit shows it as "-".

  scripts/reproduce_collage.py [--tessera build/cli/tessera] [--models opt-6.7b,bert-large]
                               [--batches 1,2,4] [--calibration configs/calibrations/ipu-mk2.json]
                               [--jobs 2] [--out results.json]

Everything printed is also written to --out (JSON). Uses only the Python standard library.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["bert-large", "vit-base", "resnet-18", "nerf", "opt-1.3b", "opt-6.7b", "opt-13b",
          "llama2-7b", "llama2-13b", "retnet-1.3b"]
PLANNERS = ("t10", "vgm", "collage")
ON_VGM = re.compile(r"collage: (\d+) of (\d+) operators on VGM plans")


def run(tessera, config, calibration, model, planner, batch, workdir):
    out = os.path.join(workdir, f"{model}-{planner}-{batch}.json")
    cmd = [tessera, "run", "--config", config, "--workload", model, "--planner", planner,
           "--batch", str(batch), "--quiet", "--out", out]
    if calibration and planner != "vgm":  # the VGM baseline keeps its own pricing (tessera run refuses one)
        cmd += ["--calibration", calibration]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        msg = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        return {"fits": False, "error": msg, "failed": "does not fit" not in msg}
    r = json.load(open(out))
    os.remove(out)
    res = {"fits": True, "cycles": r["total_cycles"], "ms": r["total_seconds"] * 1e3,
           "predicted_cycles": r["predicted_cycles"], "schedule_planner": r.get("schedule_planner", planner)}
    m = ON_VGM.search(p.stdout + p.stderr)
    if m:
        res["on_vgm"], res["operators"] = int(m.group(1)), int(m.group(2))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "cli", "tessera"))
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "ipu-mk2.json"))
    ap.add_argument("--calibration", default="",
                    help="a calibration for the t10 and collage runs (default: analytical weights)")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--batches", default="1,2,4")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        sys.exit(f"reproduce_collage.py: unknown model(s) {', '.join(unknown)}; expected some of {', '.join(MODELS)}")
    try:
        batches = [int(b) for b in args.batches.split(",") if b]
    except ValueError:
        sys.exit(f"reproduce_collage.py: --batches {args.batches!r}: expected comma-separated integers")
    if not batches or min(batches) < 1:
        sys.exit("reproduce_collage.py: --batches: expected positive integers")
    if not os.path.exists(args.tessera):
        sys.exit(f"reproduce_collage.py: {args.tessera} not found (build first: scripts/build.sh)")

    jobs = [(m, b, pl) for m in models for b in batches for pl in PLANNERS]
    results = {}
    with tempfile.TemporaryDirectory() as workdir, concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        futures = {pool.submit(run, args.tessera, args.config, args.calibration, m, pl, b, workdir): (m, b, pl)
                   for m, b, pl in jobs}
        for f in concurrent.futures.as_completed(futures):
            results[futures[f]] = f.result()

    rows, failed = [], False
    print(f"{'model':<12} {'batch':>5} {'t10 ms':>9} {'vgm ms':>9} {'collage ms':>10} {'on vgm':>9} {'vs best':>8} {'predicted':>10}")
    for m in models:
        for b in batches:
            r = {pl: results[(m, b, pl)] for pl in PLANNERS}
            for pl, x in r.items():
                if x.get("failed"):
                    failed = True
                    print(f"  {m} {pl} batch {b}: ERROR: {x['error']}", file=sys.stderr)
            if not (r["t10"]["fits"] and r["collage"]["fits"]):
                continue
            t, v, c = r["t10"], r["vgm"], r["collage"]
            best = min(x["cycles"] for x in (t, v) if x["fits"])
            row = {"model": m, "batch": b, "t10": t, "vgm": v, "collage": c,
                   "collage_over_best": best / c["cycles"]}
            rows.append(row)
            on = f"{c.get('on_vgm', 0)}/{c.get('operators', '?')}"
            vgm_ms = f"{v['ms']:.3f}" if v["fits"] else "-"
            print(f"{m:<12} {b:>5} {t['ms']:>9.3f} {vgm_ms:>9} {c['ms']:>10.3f} {on:>9} "
                  f"{row['collage_over_best']:>7.3f}x {c['predicted_cycles'] / c['cycles']:>9.3f}x", flush=True)
    if rows:
        ratios = [r["collage_over_best"] for r in rows]
        print(f"collage over the better of all-T10 and all-VGM: {min(ratios):.3f}x to {max(ratios):.3f}x over "
              f"{len(rows)} runs; faster than both in {sum(x > 1.0005 for x in ratios)}, slower in "
              f"{sum(x < 0.9995 for x in ratios)}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"config": args.config, "calibration": args.calibration, "rows": rows}, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
