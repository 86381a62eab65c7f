#!/usr/bin/env python3
"""Do two tessera binaries give the same results? For work on the simulator's speed, which must
not move a single cycle: runs one set of cases with each binary and compares the results files,
leaving out what measures the host (CPU seconds, memory).

  scripts/same_results.py OLD_BINARY NEW_BINARY [--keep DIR]

The cases (15): synthetic traffic at both levels of detail (four rates, uniform and hot spot),
the collectives at both levels (ring all-reduce on the ACE engine, direct all-to-all), a ring on
36 chiplets with packets that do not divide the messages (short last packets are timed per
grant; a channel's memo of its last packet size changes) and with 64 MiB packets (times past 32
bits in 1/1024 cycle), and compiled models
(ResNet-18 on a mesh chip, NeRF on an exchange chip and across two IPUs, and NeRF on a mesh
priced by the replay oracle, which resets one engine between plans).

Exit status 0 when every file is the same, 1 when one differs (it is named), 2 on a usage or run
error.
"""
import argparse
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
C = ROOT / "configs"

CASES = {
    "traffic-0.05": ["traffic", "--config", C / "mesh-8x8.json", "--model", "packet", "--rate", "0.05", "--unit", "flits", "--measure", "20000"],
    "traffic-0.2": ["traffic", "--config", C / "mesh-8x8.json", "--model", "packet", "--rate", "0.2", "--unit", "flits", "--measure", "20000"],
    "traffic-0.45": ["traffic", "--config", C / "mesh-8x8.json", "--model", "packet", "--rate", "0.45", "--unit", "flits", "--measure", "20000"],
    "traffic-hotspot": ["traffic", "--config", C / "mesh-8x8.json", "--model", "packet", "--pattern", "hotspot", "--rate", "0.3", "--unit", "flits", "--measure", "20000"],
    "traffic-flit": ["traffic", "--config", C / "mesh-8x8.json", "--model", "flit", "--rate", "0.3", "--unit", "flits", "--measure", "20000"],
    "allreduce-ace": ["collective", "--config", C / "ace-torus-64.json", "--op", "allreduce", "--bytes", "1048576", "--engine", "ace"],
    "allreduce-ace-flit": ["collective", "--config", C / "ace-torus-64.json", "--op", "allreduce", "--bytes", "1048576", "--engine", "ace", "--model", "flit"],
    "alltoall-direct": ["collective", "--config", C / "ace-torus-64.json", "--op", "alltoall", "--algorithm", "direct", "--bytes", "1048576", "--engine", "ideal"],
    "alltoall-direct-flit": ["collective", "--config", C / "ace-torus-16.json", "--op", "alltoall", "--algorithm", "direct", "--bytes", "1048576", "--model", "flit"],
    "ring-36-short-packets": ["collective", "--config", C / "mcm-ring-36.json", "--op", "allreduce", "--bytes", "1179648", "--chunk-bytes", "0", "--engine", "cores", "--packet-bytes", "100"],
    # 64 MiB packets: times past 32 bits in 1/1024 cycle
    "ring-36-huge-packets": ["collective", "--config", C / "mcm-ring-36.json", "--op", "allreduce", "--bytes", "2415919104", "--chunk-bytes", "0", "--packet-bytes", "67108864"],
    "resnet18-mesh": ["run", "--config", C / "mesh-10x12.json", "--workload", "resnet-18"],
    "nerf-ipu": ["run", "--config", C / "ipu-mk2.json", "--workload", "nerf"],
    "nerf-vipu2": ["run", "--config", C / "vipu-2.json", "--workload", "nerf"],
    # plans priced by replaying their transfers on a network engine that is reset between them
    "nerf-mesh-oracle": ["run", "--config", C / "mesh-8x8.json", "--workload", "nerf", "--price-by", "simulate"],
}

HOST_WORDS = ("cpu", "seconds", "rss", "memory", "host")


def without_host(x):
    """The document with every field that measures the host left out."""
    if isinstance(x, dict):
        return {k: without_host(v) for k, v in x.items() if not any(w in k.lower() for w in HOST_WORDS)}
    if isinstance(x, list):
        return [without_host(v) for v in x]
    return x


def run(binary, name, args, out_dir):
    out = out_dir / f"{name}.json"
    cmd = [str(binary)] + [str(a) for a in args] + ["--out", str(out)]
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"same_results: {binary} failed on {name} (exit {r.returncode}): {r.stderr.strip()}")
    return without_host(json.loads(out.read_text()))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("old", type=pathlib.Path, help="the binary before the change")
    p.add_argument("new", type=pathlib.Path, help="the binary after it")
    p.add_argument("--keep", type=pathlib.Path, help="keep the results files here (old/, new/)")
    a = p.parse_args()
    for b in (a.old, a.new):
        if not b.is_file():
            p.error(f"{b}: no such binary")
    base = a.keep or pathlib.Path(tempfile.mkdtemp(prefix="same_results."))
    differ = []
    for name, args in CASES.items():
        results = []
        for side, binary in (("old", a.old), ("new", a.new)):
            d = base / side
            d.mkdir(parents=True, exist_ok=True)
            results.append(run(binary, name, args, d))
        same = results[0] == results[1]
        print(f"{name:24} {'same' if same else 'DIFFERENT'}")
        if not same:
            differ.append(name)
    if differ:
        print(f"same_results: {len(differ)} of {len(CASES)} differ: {', '.join(differ)} (files in {base})")
        return 1
    print(f"same_results: all {len(CASES)} the same")
    return 0


if __name__ == "__main__":
    sys.exit(main())
