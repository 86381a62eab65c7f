#!/usr/bin/python3
"""A learned placement policy for `tessera partition` (issue 16; the MCM paper's RL, made small).

A graph network (PyTorch, Debian's python3-torch: a maintained library with automatic
differentiation, so the gradients are not hand-written) reads a model's operator graph and gives
every operator a distribution over the chips. A proposal drawn from it goes to
`tessera partition --serve`, which repairs it with the solver's FIX mode and scores the repaired
placement (the cost model's pipeline by default, or the simulator); REINFORCE with a moving
baseline raises the log-probability of placements that scored above it. Out-of-memory and
unsatisfiable proposals score 0.

  scripts/partition_rl.py corpus  --out DIR [--graphs 12] [--seed 1]
      writes generated workloads (stacks of MLP and attention blocks of random widths) for
      pre-training
  scripts/partition_rl.py pretrain --corpus DIR --out policy.pt [--samples-per-graph 32]
  scripts/partition_rl.py train --workload bert-large [--init policy.pt] [--samples 60]
      [--budget-seconds S] [--seed 1] [--out run.json]
      from scratch, or fine-tuning a pre-trained policy; writes the convergence (best
      throughput after each sample)

Common options: --tessera (build/cli/tessera), --config (configs/mcm-ring-36.json),
--score-by model|simulate (model), --batch 4 (proposals per policy update), --weights-share S
(the static memory check's share, passed to tessera partition).
"""
import argparse
import json
import math
import os
import random
import subprocess
import sys
import time

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HIDDEN = 32


class Server:
    """A `tessera partition --serve` process for one workload."""

    def __init__(self, args, workload):
        cmd = [args.tessera, "partition", "--config", args.config, "--workload", workload, "--serve",
               "--score-by", args.score_by] + (["--weights-share", str(args.weights_share)] if args.weights_share else [])
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if not line:
            raise SystemExit(f"{' '.join(cmd)}: no graph (did it fail?)")
        self.graph = json.loads(line)["graph"]

    def score(self, proposal, seed):
        self.p.stdin.write(json.dumps({"proposal": proposal, "seed": seed}) + "\n")
        self.p.stdin.flush()
        answer = json.loads(self.p.stdout.readline())
        if "error" in answer:
            raise SystemExit(answer["error"])
        return answer

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def features(graph):
    """Per node: log bytes, log flops, position in order, cumulative share of flops and bytes,
    in- and out-degree. The workload's operators are in a topological order already."""
    n = len(graph["names"])
    by = [float(b) for b in graph["node_bytes"]]
    fl = [float(f) for f in graph["flops"]]
    tot_f, tot_b = max(sum(fl), 1.0), max(sum(by), 1.0)
    indeg, outdeg = [0] * n, [0] * n
    for u, v in graph["edges"]:
        outdeg[u] += 1
        indeg[v] += 1
    rows, cf, cb = [], 0.0, 0.0
    for i in range(n):
        cf += fl[i]
        cb += by[i]
        rows.append([math.log2(1 + by[i]) / 30, math.log2(1 + fl[i]) / 40, i / max(n - 1, 1), cf / tot_f, cb / tot_b,
                     indeg[i] / 4, outdeg[i] / 4])
    x = torch.tensor(rows, dtype=torch.float32)
    a_in = torch.zeros(n, n)
    for u, v in graph["edges"]:
        a_in[v, u] = 1.0
    a_out = a_in.t().clone()
    a_in = a_in / a_in.sum(1, keepdim=True).clamp(min=1)
    a_out = a_out / a_out.sum(1, keepdim=True).clamp(min=1)
    return x, a_in, a_out


class Policy(torch.nn.Module):
    """Three rounds of message passing (own state, mean of producers, mean of consumers), then
    per node a logit per chip."""

    def __init__(self, chips, feats=7, hidden=HIDDEN, rounds=3):
        super().__init__()
        self.embed = torch.nn.Linear(feats, hidden)
        self.own = torch.nn.ModuleList(torch.nn.Linear(hidden, hidden) for _ in range(rounds))
        self.prod = torch.nn.ModuleList(torch.nn.Linear(hidden, hidden, bias=False) for _ in range(rounds))
        self.cons = torch.nn.ModuleList(torch.nn.Linear(hidden, hidden, bias=False) for _ in range(rounds))
        self.out = torch.nn.Linear(hidden + feats, chips)

    def forward(self, x, a_in, a_out):
        h = torch.tanh(self.embed(x))
        for own, prod, cons in zip(self.own, self.prod, self.cons):
            h = torch.tanh(own(h) + prod(a_in @ h) + cons(a_out @ h))
        return self.out(torch.cat([h, x], 1))


def reinforce(policy, opt, server, samples, batch, rng, log=None, budget_seconds=0.0):
    """Samples proposals in batches and updates the policy after each; returns the convergence.
    With `budget_seconds`, no sample starts once that much wall-clock time has passed."""
    x, a_in, a_out = features(server.graph)
    curve, best, baseline, scale = [], 0.0, None, None
    start = time.monotonic()
    out_of_time = lambda: budget_seconds > 0 and time.monotonic() - start >= budget_seconds
    while len(curve) < samples and not out_of_time():
        logits = policy(x, a_in, a_out)
        dist = torch.distributions.Categorical(logits=logits)
        terms, rewards = [], []
        for _ in range(min(batch, samples - len(curve))):
            if out_of_time():
                break
            proposal = dist.sample()
            ans = server.score(proposal.tolist(), rng.randrange(1 << 30))
            r = ans["throughput"] if ans.get("status") == "solved" and ans.get("fits", False) else 0.0
            best = max(best, r)
            curve.append({"sample": len(curve) + 1, "throughput_per_second": r, "best_per_second": best,
                          "status": ans.get("status"), "fits": ans.get("fits", False)})
            # The repaired placement is what was scored: its log-probability is what is raised.
            placed = torch.tensor(ans["placement"]) if "placement" in ans else proposal
            terms.append(dist.log_prob(placed).sum())
            rewards.append(r)
        if not rewards:
            break
        if scale is None:
            scale = max(max(rewards), 1e-9)
        rs = [r / scale for r in rewards]
        mean = sum(rs) / len(rs)
        baseline = mean if baseline is None else 0.8 * baseline + 0.2 * mean
        loss = -sum((r - baseline) * t for r, t in zip(rs, terms)) / len(rs) - 0.01 * dist.entropy().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if log:
            log(f"{server.graph['workload']}: {len(curve)} samples, best {best:.2f}/s, batch mean {mean * scale:.2f}/s")
    return curve


# ---- generated corpus ----------------------------------------------------------------------

def block_mlp(t, ops, x, d, ff, tag):
    g = tag.replace(".", "_")
    t += [{"name": f"{g}_w1", "shape": [d, ff], "role": "weight"}, {"name": f"{g}_w2", "shape": [ff, d], "role": "weight"}]
    ops += [{"name": f"{tag}.up", "expr": f"{g}_U[s,n] += {x}[s,k] * {g}_w1[k,n]"},
            {"name": f"{tag}.act", "expr": f"{g}_A[s,n] = relu({g}_U[s,n])"},
            {"name": f"{tag}.down", "expr": f"{g}_D[s,n] += {g}_A[s,k] * {g}_w2[k,n]"},
            {"name": f"{tag}.res", "expr": f"{g}_R[s,n] = {x}[s,n] + {g}_D[s,n]"}]
    return f"{g}_R"


def block_attn(t, ops, x, d, heads, tag):
    dh = d // heads
    g = tag.replace(".", "_")
    for w in ("q", "k", "v"):
        t.append({"name": f"{g}_w{w}", "shape": [d, heads, dh], "role": "weight"})
        ops.append({"name": f"{tag}.{w}", "expr": f"{g}_{w.upper()}[s,h,e] += {x}[s,k] * {g}_w{w}[k,h,e]"})
    t.append({"name": f"{g}_wo", "shape": [heads, dh, d], "role": "weight"})
    ops += [{"name": f"{tag}.scores", "expr": f"{g}_S[h,i,j] += {g}_Q[i,h,e] * {g}_K[j,h,e]"},
            {"name": f"{tag}.probs", "expr": f"{g}_P[h,i,j] = softmax({g}_S[h,i,j])"},
            {"name": f"{tag}.context", "expr": f"{g}_C[i,h,e] += {g}_P[h,i,j] * {g}_V[j,h,e]"},
            {"name": f"{tag}.out", "expr": f"{g}_O[s,n] += {g}_C[s,h,e] * {g}_wo[h,e,n]"},
            {"name": f"{tag}.res", "expr": f"{g}_R[s,n] = {x}[s,n] + {g}_O[s,n]"}]
    return f"{g}_R"


def corpus(args):
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    for k in range(args.graphs):
        d = rng.choice([512, 768, 1024])
        s = rng.choice([64, 128])
        blocks = rng.randint(6, 24)
        tensors, ops = [{"name": "X", "shape": [s, d], "role": "input"}], []
        x = "X"
        for b in range(blocks):
            if rng.random() < 0.5:
                x = block_attn(tensors, ops, x, d, rng.choice([8, 16]), f"b{b}")
            else:
                x = block_mlp(tensors, ops, x, d, d * rng.choice([2, 4]), f"b{b}")
        w = {"format": "tessera-workload", "version": 1, "name": f"gen{k}", "tensors": tensors, "ops": ops, "outputs": [x]}
        with open(os.path.join(args.out, f"gen{k}.json"), "w") as f:
            json.dump(w, f)
    print(f"{args.graphs} workloads in {args.out}")


def pretrain(args):
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    files = sorted(os.path.join(args.corpus, f) for f in os.listdir(args.corpus) if f.endswith(".json"))
    policy = None
    for rnd in range(args.rounds):
        for f in files:
            server = Server(args, f)
            if policy is None:
                policy = Policy(server.graph["chips"])
                opt = torch.optim.Adam(policy.parameters(), lr=args.lr)
            reinforce(policy, opt, server, args.samples_per_graph, args.batch, rng, log=print)
            server.close()
    torch.save(policy.state_dict(), args.out)
    print(f"policy written to {args.out}")


def train(args):
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    server = Server(args, args.workload)
    policy = Policy(server.graph["chips"])
    if args.init:
        policy.load_state_dict(torch.load(args.init))
    opt = torch.optim.Adam(policy.parameters(), lr=args.lr)
    curve = reinforce(policy, opt, server, args.samples, args.batch, rng, log=None if args.quiet else print,
                      budget_seconds=args.budget_seconds)
    if not curve:
        raise SystemExit(f"{args.workload}: no sample within {args.budget_seconds} s")
    server.close()
    result = {"workload": args.workload, "config": args.config, "init": args.init or "scratch", "seed": args.seed,
              "score_by": args.score_by, "convergence": curve}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f)
    print(f"{args.workload} ({'fine-tuned from ' + args.init if args.init else 'from scratch'}, seed {args.seed}): "
          f"best {curve[-1]['best_per_second']:.2f}/s after {len(curve)} samples")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["corpus", "pretrain", "train"])
    ap.add_argument("--tessera", default=os.path.join(ROOT, "build", "cli", "tessera"))
    ap.add_argument("--config", default=os.path.join(ROOT, "configs", "mcm-ring-36.json"))
    ap.add_argument("--score-by", default="model", choices=["model", "simulate"])
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="")
    ap.add_argument("--graphs", type=int, default=12)
    ap.add_argument("--corpus", default="")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--samples-per-graph", type=int, default=32)
    ap.add_argument("--workload", default="bert-large")
    ap.add_argument("--init", default="")
    ap.add_argument("--samples", type=int, default=60)
    ap.add_argument("--weights-share", type=float, default=0.0,
                    help="passed to tessera partition (0: its default)")
    ap.add_argument("--budget-seconds", type=float, default=0.0,
                    help="train: start no sample after this much wall-clock time (0: --samples alone)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.mode in ("corpus", "pretrain") and not args.out:
        ap.error(f"{args.mode} needs --out")
    if args.mode == "pretrain" and not args.corpus:
        ap.error("pretrain needs --corpus")
    {"corpus": corpus, "pretrain": pretrain, "train": train}[args.mode](args)


if __name__ == "__main__":
    main()
