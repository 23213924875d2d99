#!/usr/bin/env bash
# A real one-node SLURM on this machine, for tests/cluster/test_slurm.py (and .ci/run).
#
#   bash tests/cluster/slurm_up.sh        # install (Debian packages), configure, start, wait until idle
#
# Idempotent: when `sinfo` already answers with a usable node and both partitions it returns at once. Needs root
# (apt-get, daemons). The test cluster has the production profile's partitions (profiles/slurm: `cpu`, the default,
# and `gpu`) on its one node, which has one fake GPU (gres `gpu:fake:1`, File=/dev/null: SLURM schedules and binds it,
# CUDA sees nothing). A job_submit.lua filter rejects what a real cluster would: a GPU request on `cpu`, a job
# without a GPU on `gpu`. Memory is enforced (jobacct_gather/linux + OverMemoryKill: a job over its --mem is killed
# within a second), so a retry with more memory can be tested. Settings and pitfalls (below; docs/cluster.md,
# "Testing the profile on one machine"):
#   - no accounting database: the test profile uses `slurm-status-command: squeue`, so MinJobAge
#     (how long squeue still lists a finished job) must outlast several status checks: 300 s;
#   - the config must be at /etc/slurm/slurm.conf (the jobstep plugin drops SLURM_CONF): symlinked;
#   - state, logs and pid files live under $MODPREFS_SLURM_DIR (default /tmp/modprefs-slurm);
#   - a requeued job waits 121 s before it may start again (SLURM's own delay); tests release it with
#     `scontrol update JobId=N StartTime=now`.
set -euo pipefail

STATE_DIR="${MODPREFS_SLURM_DIR:-/tmp/modprefs-slurm}"
WAIT_S="${MODPREFS_SLURM_WAIT_S:-60}"

node_state() { timeout 10 sinfo -h -o %t 2>/dev/null | head -n1 | tr -d '*~#!%$@^-' || true; }

usable() { case "$(node_state)" in idle|mix|alloc|comp) return 0 ;; *) return 1 ;; esac; }

# this script's cluster: both partitions and the fake GPU (an older one-partition config is replaced)
configured() { [ "$(timeout 10 sinfo -h -o '%P %G' 2>/dev/null | sort | tr '\n' ' ')" = "cpu* gpu:fake:1 gpu gpu:fake:1 " ]; }

if command -v sinfo >/dev/null 2>&1 && usable && configured; then
  echo "slurm_up: SLURM already up (node $(node_state))"
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  echo "slurm_up: needs root to install and start SLURM" >&2
  exit 1
fi

# 1. Packages (Debian bookworm: slurm-wlm 22.05).
if ! command -v slurmctld >/dev/null 2>&1 || ! command -v slurmd >/dev/null 2>&1 \
   || ! command -v sbatch >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
fi

# 2. Munge (authentication between the daemons and the client commands).
if [ ! -s /etc/munge/munge.key ]; then
  mkdir -p /etc/munge
  dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
fi
chown munge:munge /etc/munge/munge.key
chmod 400 /etc/munge/munge.key
mkdir -p /run/munge /var/lib/munge /var/log/munge
chown munge:munge /run/munge /var/lib/munge /var/log/munge
if ! munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1; then
  rm -f /run/munge/munged.pid /run/munge/munge.socket.2*
  runuser -u munge -- /usr/sbin/munged
  for _ in $(seq 50); do munge -n </dev/null 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
fi

# 3. A one-node slurm.conf.
mkdir -p "$STATE_DIR/ctld" "$STATE_DIR/d" "$STATE_DIR/log"
HOST="$(hostname -s)"
CPUS="$(nproc)"
AVAIL_MB=$(( $(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) / 1024 ))
REAL_MB=$(( AVAIL_MB - 2048 ))
[ "$REAL_MB" -lt 1024 ] && REAL_MB=1024
cat >"$STATE_DIR/slurm.conf" <<EOF
# Written by tests/cluster/slurm_up.sh: a one-node test cluster without accounting.
ClusterName=modprefs
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=500
MinJobAge=300
ReturnToService=2
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=task=1
JobAcctGatherParams=OverMemoryKill
JobCompType=jobcomp/none
GresTypes=gpu
JobSubmitPlugins=lua
StateSaveLocation=$STATE_DIR/ctld
SlurmdSpoolDir=$STATE_DIR/d
SlurmctldPidFile=$STATE_DIR/slurmctld.pid
SlurmdPidFile=$STATE_DIR/slurmd.pid
SlurmctldLogFile=$STATE_DIR/log/slurmctld.log
SlurmdLogFile=$STATE_DIR/log/slurmd.log
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$REAL_MB Gres=gpu:fake:1 State=UNKNOWN
PartitionName=cpu Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$HOST MaxTime=INFINITE State=UP
EOF
cat >"$STATE_DIR/gres.conf" <<EOF
# One fake GPU: scheduled and bound like a real one (CUDA_VISIBLE_DEVICES is set), no device behind it.
AutoDetect=off
NodeName=$HOST Name=gpu Type=fake File=/dev/null
EOF
cat >"$STATE_DIR/job_submit.lua" <<'EOF'
-- What a real cluster refuses: GPUs exist only on the `gpu` partition, which takes only GPU jobs.
function slurm_job_submit(job_desc, part_list, submit_uid)
  local part = job_desc.partition or "cpu"
  local tres = (job_desc.tres_per_job or "") .. "," .. (job_desc.tres_per_node or "") .. ","
    .. (job_desc.tres_per_task or "") .. "," .. (job_desc.tres_per_socket or "")
  local wants_gpu = string.find(tres, "gpu") ~= nil
  if wants_gpu and part ~= "gpu" then
    slurm.log_user("test cluster: a GPU request on partition '" .. part .. "' (GPUs are only on 'gpu')")
    return slurm.ERROR
  end
  if (not wants_gpu) and part == "gpu" then
    slurm.log_user("test cluster: a job without a GPU request on partition 'gpu'")
    return slurm.ERROR
  end
  return slurm.SUCCESS
end
function slurm_job_modify(job_desc, job_rec, part_list, modify_uid)
  return slurm.SUCCESS
end
EOF
mkdir -p /etc/slurm
for f in slurm.conf gres.conf job_submit.lua; do
  if [ "$(readlink -f /etc/slurm/$f 2>/dev/null)" != "$STATE_DIR/$f" ]; then
    ln -sfn "$STATE_DIR/$f" /etc/slurm/$f
  fi
done

# 4. Daemons (they daemonize). Stale ones from an earlier config are stopped by their pid files.
for daemon in slurmd slurmctld; do
  pidfile="$STATE_DIR/$daemon.pid"
  if [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    kill "$(cat "$pidfile")" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$(cat "$pidfile")" 2>/dev/null || break; sleep 0.1; done
  fi
done
/usr/sbin/slurmctld -c -f /etc/slurm/slurm.conf   # -c: clean start, no jobs from an earlier state
/usr/sbin/slurmd -f /etc/slurm/slurm.conf

# 5. Wait until the node takes jobs.
deadline=$(( SECONDS + WAIT_S ))
until usable; do
  if [ "$(node_state)" = "down" ] || [ "$(node_state)" = "drain" ]; then
    scontrol update NodeName="$HOST" State=RESUME >/dev/null 2>&1 || true
  fi
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "slurm_up: node not idle after ${WAIT_S}s (state '$(node_state)'); logs in $STATE_DIR/log" >&2
    tail -n 20 "$STATE_DIR/log/slurmctld.log" "$STATE_DIR/log/slurmd.log" >&2 || true
    exit 1
  fi
  sleep 0.5
done
echo "slurm_up: SLURM up: node $HOST ($CPUS CPUs, ${REAL_MB} MB, gpu:fake:1), partitions cpu (default) and gpu," \
  "state $(node_state)"
