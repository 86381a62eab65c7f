#!/usr/bin/env python3
"""Cost-model report over built-in models: for each model, the end-to-end prediction error of the
analytical and the calibrated model, per-class MAPE and tau from `tessera validate-cost`, and the
simulated time of the plans each model chooses (calibrated vs analytical). Prints a Markdown table.

usage: validate_models.py --config configs/ipu-mk2.json [--calibration F] [--models a,b] [--batch 1]
       [--offchip-io] [--tessera build/cli/tessera] [--out-dir build/validation]
With --offchip-io the model inputs are loaded from off-chip memory while operators run (the network
is shared beyond one operator's own traffic).
The calibration defaults to configs/calibrations/<config name>.json."""
import argparse
import json
import os
import subprocess
import sys

MODELS = ["resnet-18", "nerf", "vit-base", "bert-large", "retnet-1.3b", "opt-1.3b", "opt-6.7b",
          "llama2-7b", "opt-13b", "llama2-13b"]


def tessera(binary, *args):
    p = subprocess.run([binary, *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr.strip().splitlines()[-1] if p.stderr.strip() else f"exit {p.returncode}")
    return p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", required=True)
    ap.add_argument("--calibration")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--batch", default="1")
    ap.add_argument("--offchip-io", action="store_true")
    ap.add_argument("--tessera", default="build/cli/tessera")
    ap.add_argument("--out-dir", default="build/validation")
    a = ap.parse_args()
    name = os.path.splitext(os.path.basename(a.config))[0]
    cal = a.calibration or f"configs/calibrations/{name}.json"
    os.makedirs(a.out_dir, exist_ok=True)
    print(f"config {name}, calibration {cal}, batch {a.batch}\n")
    print("| model | analytical plans: simulated cycles | predicted (error) | calibrated plans: simulated cycles | "
          "predicted (error) | speed-up of calibrated plans | worst class MAPE in model | mean tau (analytical tau) |")
    print("|---|---|---|---|---|---|---|---|")
    for model in a.models.split(","):
        stem = os.path.join(a.out_dir, f"{name}-{model}-b{a.batch}" + ("-io" if a.offchip_io else ""))
        io = ["--offchip-io"] if a.offchip_io else []
        try:
            tessera(a.tessera, "run", "--config", a.config, "--workload", model, "--batch", a.batch,
                    "--quiet", "--out", stem + ".analytical.json", *io)
            with open(stem + ".analytical.json") as f:
                r = json.load(f)
            tessera(a.tessera, "validate-cost", "--config", a.config, "--workload", model, "--batch", a.batch,
                    "--calibration", cal, "--csv", stem + ".csv", "--json", stem + ".summary.json",
                    "--rank-ops", "1", "--rank-plans", "5", *io)
            with open(stem + ".summary.json") as f:
                v = json.load(f)
        except RuntimeError as e:
            print(f"| {model} | not run: {e} | | | | | | |")
            sys.stdout.flush()
            continue
        a_sim, a_pred = r["total_cycles"], r["predicted_cycles"]
        e = v["end_to_end"]
        c_sim, c_pred = e["simulated_cycles"], e["predicted_cycles"]
        worst = max(v["classes"].items(), key=lambda kv: kv[1]["mape"])
        taus = [c["kendall_tau"] for c in v["classes"].values() if c["ranked_operators"]]
        ataus = [c["analytical_kendall_tau"] for c in v["classes"].values() if c["ranked_operators"]]
        mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")
        print(f"| {model} | {a_sim} | {a_pred:.0f} ({100 * (a_pred - a_sim) / a_sim:+.1f}%) | {c_sim:.0f} | "
              f"{c_pred:.0f} ({100 * e['error']:+.1f}%) | {a_sim / c_sim:.2f}x | {worst[0]} {100 * worst[1]['mape']:.1f}% | "
              f"{mean(taus):.2f} ({mean(ataus):.2f}) |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
