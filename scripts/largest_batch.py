#!/usr/bin/python3
"""Every built-in model at the largest batch that fits a config: host memory and CPU time.

Issue 12's goal: each built-in model, at the largest batch that fits `ipu-mk2`, compiles and
simulates within 3 GB of host memory. For each model the batch doubles from 1 while
`tessera compile` fits it (exit 0; a model that does not fit exits 1 with the compiler's
"does not fit" message) up to --max-batch; then `tessera run` at that batch is measured by
/usr/bin/time (peak RSS of the whole process: compile and simulate) and its simulated time
is read from the results file. Writes a Markdown table to stdout and the rows as JSON to
--out. Powers of two only: "largest" means the largest power of two.

  /usr/bin/python3 scripts/largest_batch.py [--tessera build/cli/tessera]
      [--config configs/ipu-mk2.json] [--models bert-large,nerf] [--max-batch 64]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

MODELS = ["bert-large", "llama2-13b", "llama2-7b", "nerf", "opt-1.3b", "opt-13b", "opt-6.7b",
          "resnet-18", "retnet-1.3b", "vit-base"]


def fits(tessera, config, model, batch, tmp):
    r = subprocess.run([tessera, "compile", "--config", config, "--workload", model, "--batch", str(batch),
                        "--out", os.path.join(tmp, "p.tpb")], capture_output=True, text=True)
    if r.returncode == 0:
        return True, ""
    msg = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
    if "does not fit" not in msg:
        sys.exit(f"{model} at batch {batch}: compile failed for another reason: {msg}")
    return False, msg


def measure(tessera, config, model, batch, tmp):
    out = os.path.join(tmp, "r.json")
    r = subprocess.run(["/usr/bin/time", "-f", "TIME %U %S %M", tessera, "run", "--config", config, "--workload",
                        model, "--batch", str(batch), "--quiet", "--out", out], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{model} at batch {batch}: run failed: {r.stderr.strip()[-400:]}")
    m = re.search(r"TIME ([0-9.]+) ([0-9.]+) ([0-9]+)", r.stderr)
    res = json.load(open(out))
    return {"cpu_seconds": float(m.group(1)) + float(m.group(2)), "peak_gb": int(m.group(3)) / 1024 / 1024,
            "cycles": res["total_cycles"], "messages": res.get("messages")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessera", default="build/cli/tessera")
    ap.add_argument("--config", default="configs/ipu-mk2.json")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--max-batch", type=int, default=64)
    ap.add_argument("--out", default="results/largest_batch.json")
    a = ap.parse_args()
    rows = []
    print("| model | largest batch that fits (≤ {}) | next batch | simulated cycles | CPU-s (compile + simulate) "
          "| peak host memory |".format(a.max_batch))
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for model in a.models.split(","):
            best, why, b = 0, "", 1
            while b <= a.max_batch:
                ok, msg = fits(a.tessera, a.config, model, b, tmp)
                if not ok:
                    why = msg
                    break
                best, b = b, b * 2
            if best == 0:
                row = {"model": model, "batch": 0, "why": why}
                print(f"| {model} | does not fit at batch 1 | | | | |", flush=True)
            else:
                row = {"model": model, "batch": best, **measure(a.tessera, a.config, model, best, tmp),
                       "next": "does not fit" if why else f"not tried (cap {a.max_batch})"}
                print(f"| {model} | {best} | {row['next']} | {row['cycles']:,} | {row['cpu_seconds']:.0f} | "
                      f"{row['peak_gb']:.2f} GB |", flush=True)
            rows.append(row)
    os.makedirs(os.path.dirname(a.out) or ".", exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
