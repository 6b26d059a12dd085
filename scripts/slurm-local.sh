#!/usr/bin/env bash
# Start a real single-node Slurm cluster on this machine (Debian's slurm-wlm 22.05),
# for tests and examples of the Slurm backend. Idempotent; needs root.
#   scripts/slurm-local.sh          install if needed, start, wait until the node is idle
#   scripts/slurm-local.sh stop     stop the daemons this script started
# After it: sbatch/squeue/scancel/scontrol work; partition "debug" is the default.
# There is no accounting database: sacct does not work; read finished jobs with
# `scontrol show job ID` (kept MinJobAge=300 s) or from files the job writes.
set -euo pipefail
state=/run/slurm-local
mkdir -p "$state"

if [ "${1:-}" = stop ]; then
  for d in slurmd slurmctld munged; do
    if [ -f "$state/$d.pid" ]; then kill "$(cat "$state/$d.pid")" 2>/dev/null || true; rm -f "$state/$d.pid"; fi
  done
  exit 0
fi

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  echo "slurm-local: installing slurm-wlm and munge (apt; a minute or two)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq slurm-wlm munge >/dev/null
fi

host=$(hostname -s)
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge /var/log/munge /var/lib/munge
if [ ! -s /etc/munge/munge.key ]; then
  mungekey --create 2>/dev/null || dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown munge:munge /etc/munge/munge.key /run/munge /var/log/munge /var/lib/munge
chmod 400 /etc/munge/munge.key

if ! munge -n >/dev/null 2>&1; then
  su -s /bin/sh munge -c /usr/sbin/munged
  pgrep -u munge -n munged > "$state/munged.pid"
fi

cpus=$(nproc)
mem=$(( $(awk '/MemTotal/{print $2}' /proc/meminfo) / 1024 - 1024 ))
cat > /etc/slurm/slurm.conf <<CONF
ClusterName=local
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
MinJobAge=300
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF

scontrol ping 2>/dev/null | grep -q UP || slurmctld
sleep 1
pgrep -x slurmd >/dev/null || slurmd

for _ in $(seq 1 30); do
  if sinfo -h -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
    echo "slurm-local: node $host up ($(sinfo -h -o '%T'))"; exit 0
  fi
  sleep 1
done
echo "slurm-local: the node did not come up; see /var/log/slurm/" >&2
exit 1
