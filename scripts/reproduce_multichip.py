#!/usr/bin/python3
"""Models split evenly over the chips of vipu-2 and vipu-4, against one chip (issue 16's
"vipu-2 and vipu-4: throughput per model vs one chip"; README, "Across IPUs").

For each model and system: the operators in execution order cut into as many runs of (nearly)
equal count as the system has chips (a placement file, docs/partition.md), evaluated with
`tessera partition --placement P --one-chip` under /usr/bin/time -v; prints a Markdown table
(interval, throughput, ratio to one chip, latency, the slowest chip alone, CPU-s of compile and
simulate, peak host memory) and writes the results JSON files under --out.

  scripts/reproduce_multichip.py [--tessera build/cli/tessera] [--out results/multichip]
      [--models bert-large,resnet-18,vit-base] [--configs vipu-2,vipu-4]
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def operators(tessera, config, model, tmp):
    """The model's operators in execution order, from a greedy placement's file."""
    path = os.path.join(tmp, f"{model}.greedy.json")
    cmd = [tessera, "partition", "--config", config, "--workload", model, "--search", "greedy",
           "--score-by", "model", "--budget-samples", "1", "--out", path]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"reproduce_multichip: {' '.join(cmd)} failed: {p.stderr.strip()}")
    return [o["name"] for o in json.load(open(path))["operators"]]


def even_placement(names, chips):
    """Runs of equal count in execution order (the first ones one longer when it does not divide)."""
    base, extra = divmod(len(names), chips)
    out, at = [], 0
    for chip in range(chips):
        n = base + (1 if chip < extra else 0)
        out += [{"name": name, "chip": chip} for name in names[at:at + n]]
        at += n
    return out


def run(tessera, config, model, placement, results):
    cmd = ["/usr/bin/time", "-v", tessera, "partition", "--config", config, "--workload", model,
           "--placement", placement, "--one-chip", "--results", results]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"reproduce_multichip: {' '.join(cmd)} failed: {p.stderr.strip()[-2000:]}")
    peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    # the last "compile X CPU-s, simulate Y CPU-s" printed: the placement's
    host = re.findall(r"compile ([0-9.]+) CPU-s, simulate ([0-9.]+) CPU-s", p.stdout)
    return json.load(open(results)), peak_kb / 2**20, host, p.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "cli", "tessera"))
    ap.add_argument("--out", default=os.path.join(ROOT, "results", "multichip"))
    ap.add_argument("--models", default="bert-large,resnet-18,vit-base")
    ap.add_argument("--configs", default="vipu-2,vipu-4")
    args = ap.parse_args()
    if not os.access(args.tessera, os.X_OK):
        sys.exit(f"reproduce_multichip: {args.tessera} is not an executable; build first (scripts/build.sh)")
    os.makedirs(args.out, exist_ok=True)
    rows = ["| model | system | chips | interval (cycles) | throughput /s | vs one chip | latency (cycles) | "
            "slowest chip alone | one chip (cycles) | CPU-s (compile, simulate) | peak host GiB |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for model in args.models.split(","):
        for name in args.configs.split(","):
            config = os.path.join(ROOT, "configs", name + ".json")
            names = operators(args.tessera, config, model, args.out)
            chips = json.load(open(os.path.join(args.out, f"{model}.greedy.json")))["chips"]
            placement = os.path.join(args.out, f"{model}.{name}.even.json")
            json.dump({"workload": model, "config": name, "chips": chips, "chips_used": chips,
                       "operators": even_placement(names, chips)}, open(placement, "w"), indent=1)
            results = os.path.join(args.out, f"{model}.{name}.results.json")
            r, peak, host, stdout = run(args.tessera, config, model, placement, results)
            pipe, one = r["pipeline"], r.get("one_chip", {})
            alone = max(c["simulated_cycles"] for c in r["chips"])
            ratio = (pipe["throughput_per_second"] / one["throughput_per_second"]
                     if one.get("throughput_per_second") else float("nan"))
            rows.append(f"| {model} | {name} | {chips} | {round(pipe['interval_cycles']):,} | "
                        f"{pipe['throughput_per_second']:,.1f} | {ratio:.2f}x | {pipe['latency_cycles']:,} | "
                        f"{alone:,} | {format(one['cycles'], ',') if 'cycles' in one else 'does not fit'} | "
                        f"{', '.join(host[-1]) if host else '-'} | {peak:.2f} |")
            print(rows[-1], flush=True)
            open(os.path.join(args.out, f"{model}.{name}.stdout.txt"), "w").write(stdout)
    table = "\n".join(rows) + "\n"
    open(os.path.join(args.out, "tables.md"), "w").write(table)
    print(table)


if __name__ == "__main__":
    main()
