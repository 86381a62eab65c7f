#!/usr/bin/env bash
# tessera sweep --backend slurm on a real one-node Slurm cluster started here: munged, slurmctld
# and slurmd from Debian's packages, on 127.0.0.1, state in a temporary directory, no systemd.
# When Slurm cannot start, the test says why and exits 77 (ctest: skipped), never a fake pass.
set -u
tessera="$1"; src="$2"
skip() { echo "SKIPPED: $1"; exit 77; }
PATH="$PATH:/usr/sbin:/sbin"
for b in munged slurmctld slurmd sbatch sinfo; do
  command -v "$b" >/dev/null || skip "$b is not installed (Debian: munge slurmctld slurmd slurm-client)"
done
[ "$(id -u)" -eq 0 ] || skip "starting slurmd needs root"

tmp=$(mktemp -d /tmp/tessera-slurm-XXXXXX)
cleanup() {
  for f in slurmd slurmctld munged; do [ -f "$tmp/$f.pid" ] && kill "$(cat "$tmp/$f.pid")" 2>/dev/null; done
  sleep 0.5
  rm -rf "$tmp"
}
trap cleanup EXIT
fail=0
check() { if ! eval "$2"; then echo "FAILED: $1"; fail=1; else echo "ok: $1"; fi; }

# munge: its own key and socket, so nothing of the machine's is touched
mkdir -p "$tmp/state" "$tmp/spool"
dd if=/dev/urandom of="$tmp/munge.key" bs=1024 count=1 2>/dev/null && chmod 400 "$tmp/munge.key"
munged --force --key-file="$tmp/munge.key" --socket="$tmp/munge.socket" --pid-file="$tmp/munged.pid" \
  --log-file="$tmp/munged.log" --seed-file="$tmp/munge.seed" || skip "munged does not start: $(tail -1 "$tmp/munged.log" 2>/dev/null)"

# ports from this process's id, so two runs on one machine do not collide
port=$((20000 + ($$ % 20000)))
cat >"$tmp/slurm.conf" <<EOF
ClusterName=tessera-test
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=localhost NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$tmp/slurm.conf"
slurmctld -f "$SLURM_CONF" || skip "slurmctld does not start: $(tail -1 "$tmp/slurmctld.log" 2>/dev/null)"
slurmd -f "$SLURM_CONF" -N localhost || skip "slurmd does not start: $(tail -1 "$tmp/slurmd.log" 2>/dev/null)"
up=0
for _ in $(seq 1 60); do
  state=$(sinfo -h -o %T 2>/dev/null | head -1)
  [ "$state" = idle ] && { up=1; break; }
  sleep 0.5
done
[ $up -eq 1 ] || skip "the node did not come up (state '${state:-none}'): $(tail -1 "$tmp/slurmd.log" 2>/dev/null)"
echo "ok: one-node Slurm cluster up (slurmctld on 127.0.0.1:$port)"

# Six points of NeRF on the mesh, as three array tasks of two points; then the same sweep run
# locally must give byte-identical results.
cat >"$tmp/spec.yaml" <<EOF
config: $src/configs/mesh-8x8.json
workloads: [nerf]
planners: [t10, vgm]
axes:
  - pointer: /chip/mesh/link_bytes_per_cycle
    values: [8, 16, 32]
args: [--quiet]
EOF
"$tessera" sweep "$tmp/spec.yaml" --out "$tmp/slurm-out" --backend slurm --chunk-points 2 >"$tmp/out" 2>&1
check "slurm sweep: 6 points ok through a job array of 3 tasks" \
  "[ $? -eq 0 ] && grep -q '6 points: 6 ok, 0 failed' $tmp/out && grep -q 'job array of 3 tasks' $tmp/out"
check "slurm sweep: every array task wrote its part (gathered, then removed)" \
  "[ \$(ls $tmp/slurm-out/slurm/*.out | wc -l) -eq 3 ] && [ ! -d $tmp/slurm-out/parts ]"
"$tessera" sweep "$tmp/spec.yaml" --out "$tmp/local-out" --quiet >/dev/null 2>&1
check "slurm sweep = local sweep (results.jsonl, results.csv)" \
  "cmp -s $tmp/slurm-out/results.jsonl $tmp/local-out/results.jsonl && cmp -s $tmp/slurm-out/results.csv $tmp/local-out/results.csv"
# A point that never ran (its row gone): --resume submits only that one.
head -n 5 "$tmp/slurm-out/results.jsonl" >"$tmp/five" && mv "$tmp/five" "$tmp/slurm-out/results.jsonl"
"$tessera" sweep "$tmp/spec.yaml" --out "$tmp/slurm-out" --backend slurm --resume >"$tmp/out" 2>&1
check "slurm sweep: resubmits only what never ran" \
  "[ $? -eq 0 ] && grep -q '5 of 6 points finished earlier; 1 to run' $tmp/out && grep -q 'submitting 1 points' $tmp/out"
check "slurm sweep: after the resubmission the files are whole again" \
  "cmp -s $tmp/slurm-out/results.jsonl $tmp/local-out/results.jsonl"
[ $fail -ne 0 ] && { echo "--- slurmctld log"; tail -20 "$tmp/slurmctld.log"; echo "--- slurmd log"; tail -20 "$tmp/slurmd.log"; cat "$tmp/out"; }
exit $fail
