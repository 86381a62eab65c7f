#!/usr/bin/python3
"""A learned placement policy for `tessera partition` (issue 16; the MCM paper's RL, made small).

A graph network (PyTorch, Debian's python3-torch: a maintained library with automatic
differentiation, so the gradients are not hand-written) reads a model's operator graph and gives
every operator the probability of a cut before it: in the workload's operator order a proposal
moves on to the next chip at each cut. It goes to `tessera partition --serve`, which repairs it
with the solver's FIX mode and scores the repaired placement (the cost model's pipeline by
default, or the simulator); REINFORCE with a moving baseline raises the log-probability of
proposals that scored above it, and the best placements found so far are replayed
(self-imitation). Out-of-memory and unsatisfiable proposals score 0.

  scripts/partition_rl.py corpus  --out DIR [--graphs 18] [--seed 1]
      writes generated workloads for pre-training: stacks of MLP and attention blocks of random
      widths, and every third a small chain of dense layers
  scripts/partition_rl.py pretrain --corpus DIR --out policy.pt [--samples-per-graph 32]
  scripts/partition_rl.py train --workload bert-large [--init policy.pt] [--samples 60]
      [--budget-seconds S] [--seed 1] [--out run.json]
      from scratch, or fine-tuning a pre-trained policy; writes the convergence (best
      throughput after each sample)

Common options: --tessera (build/cli/tessera), --config (configs/mcm-ring-36.json),
--score-by model|simulate (model), --batch 4 (proposals per policy update), --lr 0.05, --steps 4
(gradient steps per batch), --imitation 1 (weight of the replayed placements), --entropy 0.001,
--weights-share S (the static memory check's share, passed to tessera partition).
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


FEATURES = 14  # per node, from features()


def features(graph):
    """Per node: log bytes, log flops, position in order, cumulative share of flops and bytes,
    in- and out-degree, its bytes and the bytes up to it over a chip's capacity (where filling
    chips by memory would put it, as a share of the ring), its output over a chip's capacity, and
    four of the graph's own: the ring's share its bytes need, log node count, log total flops, its
    largest output over a chip's capacity. The outputs say what a cut sends and what a chip holds
    beside its weights (activations grow with the sequence, weights do not). The workload's
    operators are in a topological order already. Without the graph's size a policy cannot tell a model that
    must spread over many chips from one that is fastest on one (NeRF), so a pre-trained policy
    spread everything."""
    n = len(graph["names"])
    by = [float(b) for b in graph["node_bytes"]]
    fl = [float(f) for f in graph["flops"]]
    sum_f, sum_b = sum(fl), sum(by)
    tot_f, tot_b = max(sum_f, 1.0), max(sum_b, 1.0)
    cap = float(graph.get("capacity_bytes") or 0) or tot_b  # no memory check: the model is one chip's worth
    chips = float(graph["chips"])
    indeg, outdeg = [0] * n, [0] * n
    for u, v in graph["edges"]:
        outdeg[u] += 1
        indeg[v] += 1
    out = [float(b) for b in graph.get("out_bytes") or [0] * n]
    whole = [min(sum_b / cap / chips, 2.0), math.log2(n) / 10, math.log2(1 + sum_f) / 50, min(max(out) / cap, 2.0)]
    rows, cf, cb = [], 0.0, 0.0
    for i in range(n):
        cf += fl[i]
        cb += by[i]
        rows.append([math.log2(1 + by[i]) / 30, math.log2(1 + fl[i]) / 40, i / max(n - 1, 1), cf / tot_f, cb / tot_b,
                     indeg[i] / 4, outdeg[i] / 4, min(by[i] / cap, 2.0), min(cb / cap / chips, 2.0),
                     min(out[i] / cap, 2.0)] + whole)
    x = torch.tensor(rows, dtype=torch.float32)
    assert x.shape[1] == FEATURES, "features(): FEATURES is the width of a row"
    a_in = torch.zeros(n, n)
    for u, v in graph["edges"]:
        a_in[v, u] = 1.0
    a_out = a_in.t().clone()
    a_in = a_in / a_in.sum(1, keepdim=True).clamp(min=1)
    a_out = a_out / a_out.sum(1, keepdim=True).clamp(min=1)
    return x, a_in, a_out


class Policy(torch.nn.Module):
    """Three rounds of message passing (own state, mean of producers, mean of consumers), then
    per node the logit of a cut before it: in the workload's operator order a placement moves
    on to the next chip at every cut (chip of node i = cuts up to i, at most the last chip).
    Placements on the ring use chips 0..k with data flowing to higher chips, so they are mostly
    such sequences; the solver repairs the rest (a branch that must share its join's chip, a
    chip over its memory). The first version gave every node a distribution over all chips,
    drawn independently: a placement on one or two chips (what a small model wants) then came
    up about never, and nothing learnt on one graph said anything about another's chips."""

    def __init__(self, feats=FEATURES, hidden=HIDDEN, rounds=3):
        super().__init__()
        self.embed = torch.nn.Linear(feats, hidden)
        self.own = torch.nn.ModuleList(torch.nn.Linear(hidden, hidden) for _ in range(rounds))
        self.prod = torch.nn.ModuleList(torch.nn.Linear(hidden, hidden, bias=False) for _ in range(rounds))
        self.cons = torch.nn.ModuleList(torch.nn.Linear(hidden, hidden, bias=False) for _ in range(rounds))
        self.out = torch.nn.Linear(hidden + feats, 1)

    def forward(self, x, a_in, a_out):
        h = torch.tanh(self.embed(x))
        for own, prod, cons in zip(self.own, self.prod, self.cons):
            h = torch.tanh(own(h) + prod(a_in @ h) + cons(a_out @ h))
        return self.out(torch.cat([h, x], 1)).squeeze(1)


def chips_of(cuts, chips):
    """Chip per node from cut decisions (the first node's is ignored: it starts chip 0)."""
    out, chip = [], 0
    for i, c in enumerate(cuts):
        if i > 0 and c:
            chip = min(chip + 1, chips - 1)
        out.append(chip)
    return out


def cuts_of(placement):
    """Cut decisions that give a placement's chips in order, where the placement rises by at most
    one chip at a time (a branch placed below the chip before it is left to the solver)."""
    cuts, top = [0.0], placement[0] if placement else 0
    for chip in placement[1:]:
        cuts.append(1.0 if chip > top else 0.0)
        top = max(top, chip)
    return cuts


ELITE = 4  # the best placements found so far, replayed in every update
LOGIT_BOUND = 4.0


def reinforce(policy, opt, server, samples, batch, rng, log=None, budget_seconds=0.0, entropy=0.001, steps=4,
              imitation=1.0):
    """Samples proposals in batches and updates the policy after each; returns the convergence.
    With `budget_seconds`, no sample starts once that much wall-clock time has passed.

    REINFORCE with a moving baseline, plus self-imitation (Oh et al., 2018): the cuts of the
    best ELITE placements found so far are replayed in every update, each weighted by how far
    its reward is above the baseline, so what the search has found is not forgotten between
    lucky draws. Rewards are divided by the best so far; `steps` gradient steps per batch."""
    x, a_in, a_out = features(server.graph)
    chips = server.graph["chips"]
    # Per node a logit of this graph's own added to the network's: the network is the prior
    # that transfers between graphs, the table lets the policy settle on any one placement of
    # this graph (the network cannot tell apart operators whose features are alike). Not
    # saved: it belongs to one graph.
    table = torch.zeros(x.shape[0], requires_grad=True)
    table_opt = torch.optim.Adam([table], lr=opt.param_groups[0]["lr"])
    # Logits bounded to +-LOGIT_BOUND: every decision keeps a chance of going the other way (about
    # one node in fifty), so a policy that has settled still tries the placements next to its
    # own, as annealing's moves do. Unbounded, pre-training drove the network to certainty and
    # fine-tuning never left the placement it started from.
    cut_dist = lambda: torch.distributions.Bernoulli(
        logits=LOGIT_BOUND * torch.tanh((policy(x, a_in, a_out) + table) / LOGIT_BOUND))
    # One repair seed for the run: a proposal is then always repaired, and scored, the same way,
    # so the policy can settle on the best it found (with a seed per proposal a DAG's proposals
    # had noisy rewards and the policy sampled well below its best to the end).
    repair_seed = rng.randrange(1 << 30)
    curve, best, baseline = [], 0.0, None
    elite = []  # (reward, cuts), best first, distinct
    start = time.monotonic()
    out_of_time = lambda: budget_seconds > 0 and time.monotonic() - start >= budget_seconds
    while len(curve) < samples and not out_of_time():
        with torch.no_grad():
            dist = cut_dist()
        drawn, rewards = [], []
        for _ in range(min(batch, samples - len(curve))):
            if out_of_time():
                break
            cuts = dist.sample()
            ans = server.score(chips_of(cuts.tolist(), chips), repair_seed)
            r = ans["throughput"] if ans.get("status") == "solved" and ans.get("fits", False) else 0.0
            best = max(best, r)
            curve.append({"sample": len(curve) + 1, "throughput_per_second": r, "best_per_second": best,
                          "status": ans.get("status"), "fits": ans.get("fits", False)})
            # The gradient is the proposal's (the repair is part of what a proposal leads to);
            # the elite keeps the cuts of the repaired placement, which is what was scored.
            drawn.append(cuts)
            rewards.append(r)
            kept = cuts_of(ans["placement"]) if "placement" in ans else cuts.tolist()
            if r > 0 and all(kept != q for _, q in elite):
                elite = sorted(elite + [(r, kept)], key=lambda e: -e[0])[:ELITE]
        if not rewards:
            break
        if best <= 0:  # nothing fits yet: nothing to learn from
            continue
        rs = [r / best for r in rewards]
        mean = sum(rs) / len(rs)
        baseline = mean if baseline is None else 0.8 * baseline + 0.2 * mean
        for _ in range(steps):
            d = cut_dist()
            logp = lambda c: d.log_prob(torch.as_tensor(c))[1:].sum()  # the first node never cuts
            loss = -sum((r - baseline) * logp(c) for r, c in zip(rs, drawn)) / len(rs)
            for r, c in elite:
                w = r / best - baseline
                if w > 0:
                    loss = loss - imitation * w * logp(c) / len(elite)
            loss = loss - entropy * d.entropy().mean()
            opt.zero_grad()
            table_opt.zero_grad()
            loss.backward()
            opt.step()
            table_opt.step()
        if log:
            log(f"{server.graph['workload']}: {len(curve)} samples, best {best:.2f}/s, batch mean {mean * best:.2f}/s")
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


def dense_chain(t, ops, rows, width, layers):
    """A chain of dense layers with ReLU (a NeRF-sized MLP): small enough that one chip is
    fastest, where every transformer stack of the corpus is fastest spread out."""
    t.append({"name": "X", "shape": [rows, width], "role": "input"})
    x = "X"
    for i in range(layers):
        t.append({"name": f"w{i}", "shape": [width, width], "role": "weight"})
        ops += [{"name": f"fc{i}.mm", "expr": f"M{i}[r,n] += {x}[r,k] * w{i}[k,n]"},
                {"name": f"fc{i}.relu", "expr": f"H{i}[r,n] = relu(M{i}[r,n])"}]
        x = f"H{i}"
    return x


def corpus(args):
    """Every third graph a small dense chain, the others stacks of 6-48 MLP and attention blocks
    over 64-384 tokens: the policy sees models that should stay on one chip as well as ones that
    must spread, the largest over as many chiplets as BERT-large (with stacks of at most 24
    blocks over 64 or 128 tokens, the first corpus, fine-tuning on BERT-large began by packing
    its chips and took 37 samples to reach 90% of the best, training from scratch 6)."""
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)
    for k in range(args.graphs):
        tensors, ops = [], []
        if k % 3 == 2:
            x = dense_chain(tensors, ops, rng.choice([512, 2048, 8192]), rng.choice([64, 128, 256]),
                            rng.randint(2, 8))
        else:
            d = rng.choice([512, 768, 1024])
            s = rng.choice([64, 128, 256, 384])
            blocks = rng.randint(6, 48)
            tensors.append({"name": "X", "shape": [s, d], "role": "input"})
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
                policy = Policy()
                opt = torch.optim.Adam(policy.parameters(), lr=args.lr)
            reinforce(policy, opt, server, args.samples_per_graph, args.batch, rng, log=print, entropy=args.entropy,
                      steps=args.steps, imitation=args.imitation)
            server.close()
    torch.save(policy.state_dict(), args.out)
    print(f"policy written to {args.out}")


def train(args):
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    server = Server(args, args.workload)
    policy = Policy()
    if args.init:
        try:
            policy.load_state_dict(torch.load(args.init))
        except (RuntimeError, KeyError) as e:  # a policy of the first version (a logit per chip), or not a policy
            raise SystemExit(f"{args.init}: not a policy of this version of partition_rl.py (pre-train again): "
                             f"{str(e).splitlines()[0]}")
    opt = torch.optim.Adam(policy.parameters(), lr=args.lr)
    curve = reinforce(policy, opt, server, args.samples, args.batch, rng, log=None if args.quiet else print,
                      budget_seconds=args.budget_seconds, entropy=args.entropy, steps=args.steps, imitation=args.imitation)
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
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--imitation", type=float, default=1.0, help="weight of the replayed best placements")
    ap.add_argument("--steps", type=int, default=4, help="gradient steps per batch of proposals")
    ap.add_argument("--entropy", type=float, default=0.001, help="weight of the policy's entropy in the loss")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="")
    ap.add_argument("--graphs", type=int, default=18)
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
    for name in ("batch", "steps", "graphs", "samples_per_graph", "rounds"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1")
    if not args.lr > 0 or args.entropy < 0 or args.imitation < 0:
        ap.error("--lr must be positive, --entropy and --imitation not negative")
    if args.mode in ("corpus", "pretrain") and not args.out:
        ap.error(f"{args.mode} needs --out")
    if args.mode == "pretrain" and not args.corpus:
        ap.error("pretrain needs --corpus")
    {"corpus": corpus, "pretrain": pretrain, "train": train}[args.mode](args)


if __name__ == "__main__":
    main()
