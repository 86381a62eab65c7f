#!/usr/bin/python3
"""Placement searches across chips on the simulator, in the shape of the MCM partitioning paper.

Runs `tessera partition` and writes results JSON, Markdown tables and (with python3-matplotlib)
convergence plots under --out:

  search   per model on the 36-chiplet ring: the greedy heuristic once, then random search and
           simulated annealing for --seeds seeds of --samples samples each, ranked by the cost
           model (--score-by model, fast); samples to reach 90%, 95%, 99% of the best throughput
           any search found for the model, mean +- std over the seeds that reach it (the shape of
           the paper's Tables 2-3), and the best at the end over greedy's
  learned  the graph-network policy (scripts/partition_rl.py): pre-trained on a generated corpus,
           then on each --rl-models model from scratch and fine-tuned, --rl-seeds seeds of
           --samples samples; rows in the same table (normalised by the same greedy run)
  fidelity random placements of BERT-large scored by both the simulator and the cost model:
           Pearson R between the two, and the share of solver-valid placements that do not fit a
           chip's memory when compiled (the paper: R 0.91, 13.5%)
  budget   (not in the default --only) random, SA and the fine-tuned policy on each
           --budget-models model under the same wall-clock budget (--budget-seconds, 120),
           every sample scored by the simulator, --budget-seeds seeds, one run at a time:
           samples evaluated and the best simulated throughput, over greedy's

  scripts/reproduce_partition.py [--tessera build/cli/tessera] [--out results/partition]
      [--models bert-large,vit-base,resnet-18,nerf] [--seeds 5] [--samples 40]
      [--fidelity-samples 40] [--only search,learned,fidelity,budget] [--jobs 2]
      [--budget-models bert-large] [--budget-seconds 120] [--budget-seeds 3] [--weights-share S]
      [--rl-models bert-large] [--rl-seeds 3] [--corpus-graphs 18] [--pretrain-samples 32]
"""
import argparse
import concurrent.futures
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "configs", "mcm-ring-36.json")
FRACTIONS = [0.9, 0.95, 0.99]  # of the best throughput any search found for the model


def share_args(args):
    """--weights-share for tessera partition, when given."""
    return ["--weights-share", str(args.weights_share)] if args.weights_share else []


def partition(args, model, search, seed, samples, score_by, seconds=0.0):
    """One `tessera partition` run; its results JSON (or {"error": ...})."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "r.json")
        cmd = [args.tessera, "partition", "--config", CONFIG, "--workload", model, "--search", search,
               "--seed", str(seed), "--budget-samples", str(samples), "--score-by", score_by,
               "--results", out] + (["--budget-seconds", str(seconds)] if seconds > 0 else []) + share_args(args)
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            return {"error": (p.stderr or p.stdout).strip(), "command": " ".join(cmd)}
        with open(out) as f:
            return json.load(f)


def first_reaching(curve, level):
    for s in curve:
        if s["best_per_second"] >= level:
            return s["sample"]
    return None


def mean_std(xs):
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def rows_for(model, method, results, base, best_known):
    ok = [r for r in results if "error" not in r]
    if not ok:
        return f"| {model} | {method} | failed: {results[0].get('error', '?')[-200:]} |"
    cells = []
    for t in FRACTIONS:
        hits = [first_reaching(r["convergence"], t * best_known) for r in ok]
        hits = [h for h in hits if h is not None]
        if not hits:
            cells.append(f"N.A. (0/{len(ok)})")
        else:
            m, s = mean_std(hits)
            cells.append(f"{m:.1f} ± {s:.1f} ({len(hits)}/{len(ok)})")
    m, s = mean_std([r["convergence"][-1]["best_per_second"] / base for r in ok])
    oom = sum(sum(1 for c in r["convergence"] if not c["fits"]) for r in ok)
    n = sum(len(r["convergence"]) for r in ok)
    return f"| {model} | {method} | " + " | ".join(cells) + f" | {m:.2f}x ± {s:.2f} | {oom}/{n} |"


def table(everything, cache):
    """Rows for every model and method, thresholds from the best any run found for the model."""
    runs = {}
    for part in ("search", "learned"):
        for model, methods in everything.get(part, {}).items():
            for method, results in methods.items():
                if method != "greedy" and isinstance(results, list):
                    runs.setdefault(model, {})[method] = results
    rows = []
    for model, methods in runs.items():
        base = cache[model]["convergence"][-1]["best_per_second"]
        best_known = max([base] + [r["convergence"][-1]["best_per_second"] for rs in methods.values()
                                   for r in rs if "error" not in r])
        rows.append(f"| {model} | greedy | (best known {best_known / base:.2f}x greedy) | | | 1.00x | |")
        for method, results in methods.items():
            rows.append(rows_for(model, method, results, base, best_known))
    return rows


def greedy_base(args, model, cache):
    if model not in cache:
        cache[model] = partition(args, model, "greedy", 1, 10, "model")
    g = cache[model]
    return None if "error" in g else g["convergence"][-1]["best_per_second"]


def search_runs(args, pool, cache):
    data = {}
    for model in args.models:
        base = greedy_base(args, model, cache)
        if base is None:
            print(f"{model}: greedy failed: {cache[model]['error']}", file=sys.stderr)
            data[model] = {"greedy": cache[model]}
            continue
        runs = {m: list(pool.map(lambda s, m=m: partition(args, model, m, s, args.samples, "model"),
                                 range(1, args.seeds + 1)))
                for m in ("random", "sa")}
        data[model] = {"greedy": cache[model], **runs}
    return data


def rl(args, cmd_args):
    cmd = ["/usr/bin/python3", os.path.join(ROOT, "scripts", "partition_rl.py")] + cmd_args + ["--tessera", args.tessera]
    if cmd_args[0] == "train":
        cmd += share_args(args)
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": (p.stderr or p.stdout).strip()[-2000:], "command": " ".join(cmd)}
    return {"ok": True}


def learned_runs(args, pool, cache):
    policy = pretrained_policy(args)
    if policy is None:
        return {"error": "pre-training failed"}
    data = {}
    for model in args.rl_models:
        base = greedy_base(args, model, cache)
        if base is None:
            continue
        data[model] = {}
        for label, init in (("learned, scratch", []), ("learned, fine-tuned", ["--init", policy])):
            def one(seed, init=init, label=label):
                stem = os.path.basename(model).replace(".json", "")
                out = os.path.join(args.out, f"rl-{stem}-{'ft' if init else 'scratch'}-{seed}.json")
                res = rl(args, ["train", "--workload", model, "--samples", str(args.samples), "--seed", str(seed),
                                "--out", out, "--quiet"] + init)
                if "error" in res:
                    return res
                with open(out) as f:
                    return json.load(f)
            results = list(pool.map(one, range(1, args.rl_seeds + 1)))
            data[model][label] = results
    return data


def pretrained_policy(args):
    """The pre-trained policy (corpus and pre-training run once per --out); its path, or None."""
    corpus = os.path.join(args.out, "corpus")
    policy = os.path.join(args.out, "policy.pt")
    if os.path.exists(policy):
        return policy
    r = rl(args, ["corpus", "--out", corpus, "--graphs", str(args.corpus_graphs)])
    r = r if "error" in r else rl(args, ["pretrain", "--corpus", corpus, "--out", policy,
                                         "--samples-per-graph", str(args.pretrain_samples)])
    if "error" in r:
        print(f"pre-training failed: {r['error']}", file=sys.stderr)
        return None
    return policy


def budget_runs(args):
    """Every search under the same wall-clock budget, scored by the simulator, one run at a time
    (a run has a core to itself; the other may be busy, so figures move with the machine's load)."""
    policy = pretrained_policy(args)
    data = {}
    for model in args.budget_models:
        greedy = partition(args, model, "greedy", 1, 10, "simulate")  # fills 1.0, 0.9, ... until one fits
        runs = {"greedy": greedy}
        for method in ("random", "sa"):
            runs[method] = [partition(args, model, method, seed, 0, "simulate", args.budget_seconds)
                            for seed in range(1, args.budget_seeds + 1)]
        if policy:
            results = []
            for seed in range(1, args.budget_seeds + 1):
                stem = os.path.basename(model).replace(".json", "")
                out = os.path.join(args.out, f"budget-rl-{stem}-{seed}.json")
                r = rl(args, ["train", "--workload", model, "--samples", "1000000", "--seed", str(seed),
                              "--score-by", "simulate", "--budget-seconds", str(args.budget_seconds), "--out", out,
                              "--quiet", "--init", policy])
                if "error" not in r:
                    with open(out) as f:
                        r = json.load(f)
                results.append(r)
            runs["learned, fine-tuned"] = results
        data[model] = runs
    return data


def budget_table(data, seconds, weights_share=0.0):
    rows = ["| model | search | samples in the budget | out of memory | best simulated throughput (micro-batches/s) "
            "| over greedy |", "|---|---|---|---|---|---|"]
    for model, runs in data.items():
        g = runs["greedy"]
        if "error" in g:
            rows.append(f"| {model} | greedy | failed: {g['error'][-200:]} | | | |")
            continue
        base = g["convergence"][-1]["best_per_second"]
        g_oom = sum(1 for c in g["convergence"] if not c["fits"])
        rows.append(f"| {model} | greedy | {len(g['convergence'])} | {g_oom} | {base:,.1f} | 1.00x |")
        for method, results in runs.items():
            if method == "greedy":
                continue
            ok = [r for r in results if "error" not in r]
            if not ok:
                rows.append(f"| {model} | {method} | failed: {results[0]['error'][-200:]} | | | |")
                continue
            n_m, n_s = mean_std([len(r["convergence"]) for r in ok])
            b_m, b_s = mean_std([r["convergence"][-1]["best_per_second"] for r in ok])
            oom = sum(sum(1 for c in r["convergence"] if not c["fits"]) for r in ok)
            total = sum(len(r["convergence"]) for r in ok)
            over = f"{b_m / base:.3f}x" if base > 0 else "— (greedy fits nothing)"
            rows.append(f"| {model} | {method} | {n_m:.1f} ± {n_s:.1f} | {oom}/{total} | {b_m:,.1f} ± {b_s:,.1f} "
                        f"({len(ok)} seeds) | {over} |")
    share = f", weights share {weights_share:g}" if weights_share else ""
    return (f"Searches under a wall-clock budget of {seconds:g} s each on mcm-ring-36{share}, every sample scored by "
            f"the simulator, one run at a time; mean ± std over the seeds:\n\n" + "\n".join(rows) + "\n\n")


def pearson(xs, ys):
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")


def fidelity(args):
    r = partition(args, "bert-large", "random", 11, args.fidelity_samples, "simulate")
    if "error" in r:
        return f"fidelity run failed: {r['error']}\n", r
    fit = [s for s in r["convergence"] if s["fits"]]
    xs = [s["predicted_per_second"] for s in fit]
    ys = [s["throughput_per_second"] for s in fit]
    rr = pearson(xs, ys) if len(fit) > 2 else float("nan")
    n = len(r["convergence"])
    text = (f"BERT-large, {n} random solver-valid placements on mcm-ring-36: Pearson R between the cost model's "
            f"and the simulator's throughput {rr:.2f} over the {len(fit)} that fit; "
            f"{n - len(fit)} of {n} ({100.0 * (n - len(fit)) / max(n, 1):.1f}%) do not fit a chip's memory when "
            f"compiled (the dynamic check).\n")
    return text, {"pearson_r": rr, "samples": n, "fit": len(fit), "run": r}


def plot(everything, out, cache):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    models = set(everything.get("search", {})) | set(everything.get("learned", {}))
    colors = {"random": "tab:blue", "sa": "tab:red", "learned, scratch": "tab:gray", "learned, fine-tuned": "tab:green"}
    for model in sorted(models):
        g = cache.get(model, {})
        if "error" in g or "convergence" not in g:
            continue
        base = g["convergence"][-1]["best_per_second"]
        runs = {k: v for k, v in everything.get("search", {}).get(model, {}).items() if k in colors}
        runs.update(everything.get("learned", {}).get(model, {}))
        fig, ax = plt.subplots(figsize=(6, 4))
        for method, results in runs.items():
            for i, r in enumerate(results):
                if "error" in r:
                    continue
                c = r["convergence"]
                ax.plot([x["sample"] for x in c], [x["best_per_second"] / base for x in c], color=colors[method],
                        alpha=0.6, label=method if i == 0 else None)
        ax.set_xlabel("samples")
        ax.set_ylabel("best throughput / greedy (cost model)")
        ax.set_title(f"{model} on 36 chiplets")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"convergence-{os.path.basename(model).replace('.json', '')}.png"), dpi=120)
        plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "cli", "tessera"))
    ap.add_argument("--out", default=os.path.join(ROOT, "results", "partition"))
    ap.add_argument("--models", default="bert-large,vit-base,resnet-18,nerf")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--samples", type=int, default=40)
    ap.add_argument("--fidelity-samples", type=int, default=40)
    ap.add_argument("--only", default="search,learned,fidelity")
    ap.add_argument("--rl-models", default="bert-large")
    ap.add_argument("--rl-seeds", type=int, default=3)
    ap.add_argument("--corpus-graphs", type=int, default=18)
    ap.add_argument("--pretrain-samples", type=int, default=32)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--weights-share", type=float, default=0.0,
                    help="the static memory check's share for every search (0: tessera partition's default)")
    ap.add_argument("--budget-models", default="bert-large")
    ap.add_argument("--budget-seconds", type=float, default=120.0)
    ap.add_argument("--budget-seeds", type=int, default=3)
    args = ap.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    args.rl_models = [m for m in args.rl_models.split(",") if m]
    args.budget_models = [m for m in args.budget_models.split(",") if m]
    only = set(args.only.split(","))
    os.makedirs(args.out, exist_ok=True)
    report, everything, cache = "", {}, {}
    head = ("| model | search | " + " | ".join(f"{int(t * 100)}% of best" for t in FRACTIONS) +
            " | best at the end / greedy | out of memory |\n|---|---|" + "---|" * (len(FRACTIONS) + 2))
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        if "search" in only:
            everything["search"] = search_runs(args, pool, cache)
        if "learned" in only:
            everything["learned"] = learned_runs(args, pool, cache)
        rows = table(everything, cache)
        if rows:
            report += (f"Samples to reach a share of the best throughput any search found (cost model), {args.seeds} "
                       f"seeds (learned: {args.rl_seeds}) x {args.samples} samples, mcm-ring-36; a cell is mean ± "
                       f"std over the seeds that reach it (how many):\n\n" + head + "\n" + "\n".join(rows) + "\n\n")
        plot(everything, args.out, cache)
        if "fidelity" in only:
            text, data = fidelity(args)
            report += text
            everything["fidelity"] = data
    if "budget" in only:
        everything["budget"] = budget_runs(args)
        report += budget_table(everything["budget"], args.budget_seconds, args.weights_share)
    with open(os.path.join(args.out, "results.json"), "w") as f:
        json.dump(everything, f, indent=1)
    with open(os.path.join(args.out, "tables.md"), "w") as f:
        f.write(report)
    print(report)


if __name__ == "__main__":
    main()
