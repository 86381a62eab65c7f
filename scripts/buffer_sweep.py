#!/usr/bin/python3
"""Do larger buffers ever make a collective slower? A check of the network's time order.

Runs five collectives of 1 MiB per chip on `ace-torus-16` with the ideal engine (relayed
traffic in both dimensions, relayed traffic on one ring, neighbours only) over a grid of link
buffers (system.buffer_bytes) x AFI port queues (system.afi.port_buffer_bytes), at the level of
detail given, and prints the cycles per point and the largest slowdown one step of either
buffer causes. docs/hardware-model.md, "Flit level of the chip links", has the figures.

  scripts/buffer_sweep.py [--tessera build/cli/tessera] [--model packet|flit] [--cases a2a,dar]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINK_BUFFERS = (32768, 131072, 1048576)
PORT_BUFFERS = (16384, 65536, 1048576)


def torus():
    with open(os.path.join(ROOT, "configs", "ace-torus-16.json")) as f:
        return json.load(f)


def one_ring(dimension):
    """ace-torus-16 with one of its two rings of 4 only."""
    c = torus()
    c["system"]["dimensions"] = [c["system"]["dimensions"][dimension]]
    return c


# name -> (config, op, algorithm)
CASES = {
    "a2a": (torus, "alltoall", "direct"),
    "dar": (torus, "allreduce", "direct"),
    "far": (lambda: one_ring(0), "allreduce", "direct"),
    "sar": (lambda: one_ring(1), "allreduce", "direct"),
    "har": (torus, "allreduce", "hierarchical"),
}


def cycles(tessera, cfg, op, algorithm, model, tmp):
    path, out = os.path.join(tmp, "config.json"), os.path.join(tmp, "result.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    p = subprocess.run([tessera, "collective", "--config", path, "--op", op, "--bytes", "1048576", "--engine", "ideal",
                        "--algorithm", algorithm, "--model", model, "--out", out], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"buffer_sweep: tessera collective failed: {p.stderr.strip()}")
    with open(out) as f:
        return json.load(f)["cycles"]


def steps(grid):
    """(slowdown, what) for every step to the next larger buffer, port queue or link buffer."""
    for i, lb in enumerate(LINK_BUFFERS):
        for j, pb in enumerate(PORT_BUFFERS):
            if j:
                yield grid[i][j] / grid[i][j - 1] - 1, f"port {PORT_BUFFERS[j - 1]} -> {pb} at link {lb}"
            if i:
                yield grid[i][j] / grid[i - 1][j] - 1, f"link {LINK_BUFFERS[i - 1]} -> {lb} at port {pb}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "cli", "tessera"))
    ap.add_argument("--model", default="packet", choices=["packet", "flit"])
    ap.add_argument("--cases", default=",".join(CASES), help="of " + ", ".join(CASES))
    args = ap.parse_args()
    names = [n for n in args.cases.split(",") if n]
    for n in names:
        if n not in CASES:
            sys.exit(f"buffer_sweep: --cases: unknown case '{n}' (expected {', '.join(CASES)})")
    worst, where = 0.0, ""
    print(f"{args.model} level; rows: link buffers {LINK_BUFFERS}; columns: AFI port queues {PORT_BUFFERS}")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            make, op, algorithm = CASES[name]
            grid = []
            for lb in LINK_BUFFERS:
                row = []
                for pb in PORT_BUFFERS:
                    cfg = make()
                    cfg["system"]["buffer_bytes"] = lb
                    cfg["system"]["afi"]["port_buffer_bytes"] = pb
                    row.append(cycles(args.tessera, cfg, op, algorithm, args.model, tmp))
                grid.append(row)
            for slowdown, what in steps(grid):
                if slowdown > worst:
                    worst, where = slowdown, f"{name}, {what}"
            print(f"{name:4s} " + " | ".join(" ".join(f"{v:7d}" for v in row) for row in grid), flush=True)
    print(f"largest slowdown from one larger buffer: {worst * 100:.2f}%" + (f" ({where})" if where else ""))


if __name__ == "__main__":
    main()
