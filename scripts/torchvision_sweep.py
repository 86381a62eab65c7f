#!/usr/bin/python3
"""Exports every torchvision 0.14 classifier to ONNX and runs it through tessera with both planners.

Usage: /usr/bin/python3 scripts/torchvision_sweep.py OUT_DIR [--models a,b,...] [--config CFG]
       [--tessera BIN] [--timeout-s S] [--memory-gb G] [--opset 17] [--keep-onnx] [--table]

For each model (default: all of torchvision.models.list_models, the classifiers), one at a time:
export with random weights (fixed seed, 224x224 input, 299 for Inception-v3; weights=None, nothing
is downloaded), `tessera inspect`, then `tessera run --planner t10` and `--planner vgm`. Each step
is its own process with a CPU-time limit and TESSERA_MEMORY_LIMIT_GB; CPU seconds and peak
resident memory are taken from the child's rusage. Every finished model appends one line to
OUT_DIR/results.jsonl, so a killed sweep resumes where it stopped (finished models are skipped).
The ONNX file is deleted after the model unless --keep-onnx (the large ones are gigabytes).

--table prints the Markdown table of OUT_DIR/results.jsonl (the README's) and exits.
"""
import argparse
import json
import os
import resource
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def export_one(name, path, opset):
    """Runs in a child process: export one classifier (the parent survives an exporter crash)."""
    import warnings
    import torch
    import torchvision
    warnings.filterwarnings("ignore")
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    size = 299 if name == "inception_v3" else 224
    x = torch.randn(1, 3, size, size)
    torch.onnx.export(model, (x,), path, opset_version=opset, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)


def run_child(argv, timeout_s, memory_gb, log_path):
    """Runs argv with a CPU limit; returns (exit status, CPU s, peak MB, last log line)."""
    env = dict(os.environ, TESSERA_MEMORY_LIMIT_GB=str(memory_gb))

    def limits():
        resource.setrlimit(resource.RLIMIT_CPU, (timeout_s, timeout_s + 5))

    with open(log_path, "w") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, preexec_fn=limits)
        _, status, usage = os.wait4(proc.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    cpu_s = usage.ru_utime + usage.ru_stime
    with open(log_path, errors="replace") as log:
        lines = [ln.strip() for ln in log if ln.strip()]
    last = lines[-1] if lines else ""
    if code == -9 or code == -24:  # SIGKILL / SIGXCPU from RLIMIT_CPU
        last = f"stopped at the {timeout_s} CPU-s limit"
    return code, cpu_s, usage.ru_maxrss / 1024.0, last


def list_classifiers():
    import torchvision.models
    return torchvision.models.list_models(module=torchvision.models)


def sweep_model(name, a, done_file):
    onnx_dir = os.path.join(a.out_dir, "onnx", name)  # the export and its external-data files
    os.makedirs(onnx_dir, exist_ok=True)
    onnx_path = os.path.join(onnx_dir, f"{name}-op{a.opset}.onnx")
    row = {"model": name, "opset": a.opset, "config": os.path.basename(a.config)}
    code, cpu, peak, last = run_child([sys.executable, __file__, "--export-one", name, onnx_path,
                                       "--opset", str(a.opset)], a.timeout_s, a.memory_gb,
                                      os.path.join(a.out_dir, f"{name}.export.log"))
    row["export"] = {"exit": code, "cpu_s": round(cpu, 1), "peak_mb": round(peak)}
    if code != 0:
        row["export"]["error"] = last
    else:
        inspect_json = os.path.join(a.out_dir, f"{name}.inspect.json")
        code, cpu, peak, last = run_child([a.tessera, "inspect", onnx_path, "--out", inspect_json], a.timeout_s,
                                          a.memory_gb, os.path.join(a.out_dir, f"{name}.inspect.log"))
        row["inspect"] = {"exit": code, "cpu_s": round(cpu, 2), "peak_mb": round(peak)}
        if os.path.exists(inspect_json):
            rep = json.load(open(inspect_json))
            row["inspect"]["supported"] = rep.get("supported", False)
            row["inspect"]["nodes"] = rep.get("onnx", {}).get("nodes")
            wl = rep.get("workload", {})
            row["inspect"].update({k: wl.get(k) for k in ("operators", "parameters", "flops", "weight_bytes")})
        if code != 0:
            row["inspect"]["error"] = last
        else:
            for planner in ("t10", "vgm"):
                out = os.path.join(a.out_dir, f"{name}-{planner}.json")
                code, cpu, peak, last = run_child(
                    [a.tessera, "run", "--config", a.config, "--workload", onnx_path, "--planner", planner,
                     "--quiet", "--out", out], a.timeout_s, a.memory_gb,
                    os.path.join(a.out_dir, f"{name}-{planner}.log"))
                res = {"exit": code, "cpu_s": round(cpu, 1), "peak_mb": round(peak)}
                if code == 0 and os.path.exists(out):
                    r = json.load(open(out))
                    res.update(total_cycles=r["total_cycles"], ms=r["total_seconds"] * 1e3)
                else:
                    res["error"] = last
                row[planner] = res
    if not a.keep_onnx:
        shutil.rmtree(onnx_dir)
    done_file.write(json.dumps(row) + "\n")
    done_file.flush()
    print(json.dumps(row), flush=True)


def fmt_run(r):
    if not r:
        return "—"
    if "ms" in r:
        return f"{r['ms']:.3f}"
    return "error" if r.get("exit") not in (-9, -24) else "limit"


def table(out_dir):
    rows = [json.loads(ln) for ln in open(os.path.join(out_dir, "results.jsonl"))]
    print("| model | nodes | operators | parameters | T10 ms | VGM ms | speedup | T10 / VGM CPU-s, peak GB | note |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ins, t, v = r.get("inspect", {}), r.get("t10"), r.get("vgm")
        note = ""
        for part in ("export", "inspect", "t10", "vgm"):
            if part in r and r[part].get("error"):
                note = f"{part}: {r[part]['error']}"[:160].replace("|", "/")
                break
        speed = f"{v['ms'] / t['ms']:.2f}x" if t and v and "ms" in t and "ms" in v else "—"
        cpu = "—"
        if t and v:
            cpu = f"{t['cpu_s']:.0f} / {v['cpu_s']:.0f} s, {max(t['peak_mb'], v['peak_mb']) / 1024:.2f}"
        params = f"{ins['parameters'] / 1e6:.1f} M" if ins.get("parameters") else "—"
        print(f"| {r['model']} | {ins.get('nodes', '—')} | {ins.get('operators', '—')} | {params} | "
              f"{fmt_run(t)} | {fmt_run(v)} | {speed} | {cpu} | {note} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir", nargs="?")
    ap.add_argument("--models", default="")
    ap.add_argument("--config", default=os.path.join(HERE, "..", "configs", "ipu-mk2.json"))
    ap.add_argument("--tessera", default=os.path.join(HERE, "..", "build", "cli", "tessera"))
    ap.add_argument("--timeout-s", type=int, default=300, help="CPU seconds per step")
    ap.add_argument("--memory-gb", type=float, default=8)
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--keep-onnx", action="store_true")
    ap.add_argument("--table", action="store_true")
    ap.add_argument("--export-one", nargs=2, metavar=("MODEL", "PATH"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.export_one:
        return export_one(a.export_one[0], a.export_one[1], a.opset)
    if not a.out_dir:
        ap.error("OUT_DIR is required")
    if a.table:
        return table(a.out_dir)
    os.makedirs(a.out_dir, exist_ok=True)
    results = os.path.join(a.out_dir, "results.jsonl")
    done = set()
    if os.path.exists(results):
        done = {json.loads(ln)["model"] for ln in open(results) if ln.strip()}
    models = a.models.split(",") if a.models else list_classifiers()
    with open(results, "a") as done_file:
        for name in models:
            if name not in done:
                sweep_model(name, a, done_file)


if __name__ == "__main__":
    sys.exit(main())
