# shellcheck shell=bash
# tests/slurm/lib.sh: a private single-node Slurm for the tests (source it, do not run it).
#
#   source tests/slurm/lib.sh
#   slurm_start            # munged + slurmctld + slurmd on loopback, SLURM_CONF exported
#   ... sbatch / squeue / scontrol ...
#   slurm_stop             # also runs from the EXIT trap that slurm_start installs
#
# Everything lives in one private directory ($AS_SLURM_DIR, a mktemp -d): the munge key,
# socket, pid and log files, slurm.conf, the controller state and the slurmd spool. The
# daemons listen on 127.0.0.1 only, on ports checked to be free. slurm_stop cancels the jobs of
# this test, then stops exactly the daemons this file started (their pids were recorded at
# start; a pid is signalled only if it still runs the same program), and removes the directory
# unless AS_SLURM_KEEP=1. Needs root (munged runs as user munge, slurmd as root) and the Debian
# packages slurm-wlm and munge (tests/deps.sh --test installs them). If Slurm cannot be started
# slurm_start prints why and exits 1: the test fails, it never passes silently.
#
# Knobs: AS_SLURM_KILLWAIT (default 10 s, the TERM -> KILL grace at a time limit or scancel),
# AS_SLURM_CRED_EXPIRE (default 5 s: credential life, which is also how long a requeued job
# waits before it can start again; Slurm's default is 120 s).

slurm_die() {
  echo "slurm test: $*" >&2
  exit 1
}

slurm_log() { echo "slurm test: $*" >&2; }

# A TCP port of 127.0.0.1 that nobody listens on, from $1 upwards.
slurm_free_port() {
  local p=$1 used
  used=$(ss -Htln 2>/dev/null | awk '{print $4}' | sed 's/.*://' | sort -u)
  while grep -qx "$p" <<<"$used" || grep -qx "$((p + 1))" <<<"$used"; do p=$((p + 2)); done
  echo "$p"
}

# Pid from a pid file once it exists and the process runs (wait up to $2 s).
slurm_wait_pidfile() {
  local f=$1 t=${2:-10} i pid
  for ((i = 0; i < t * 10; i++)); do
    if [ -s "$f" ]; then
      pid=$(tr -dc 0-9 <"$f")
      if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        echo "$pid"
        return 0
      fi
    fi
    sleep 0.1
  done
  return 1
}

AS_SLURM_PIDS=()  # "name:pid:exe" of the daemons started here
AS_SLURM_STARTED=0

slurm_record() { # name pid
  local exe
  exe=$(readlink "/proc/$2/exe" 2>/dev/null || true)
  AS_SLURM_PIDS+=("$1:$2:$exe")
}

slurm_start() {
  [ "$(id -u)" -eq 0 ] || slurm_die "needs root (munged runs as user munge, slurmd as root)"
  local b
  for b in munged slurmctld slurmd sbatch srun scontrol squeue scancel; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] ||
      slurm_die "'$b' not found: install slurm-wlm and munge (bash tests/deps.sh --test)"
  done
  id munge >/dev/null 2>&1 || slurm_die "no user 'munge' (install the munge package)"
  export PATH="$PATH:/usr/sbin"

  AS_SLURM_DIR=$(mktemp -d /tmp/as-slurm.XXXXXX) || slurm_die "mktemp failed"
  chmod 755 "$AS_SLURM_DIR"
  trap 'slurm_stop' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  AS_SLURM_STARTED=1
  local d=$AS_SLURM_DIR
  mkdir -p "$d/munge" "$d/state" "$d/spool" "$d/log"

  # munge: a private key, socket, pid and seed file; the daemon runs as user munge.
  dd if=/dev/urandom of="$d/munge/munge.key" bs=1024 count=1 status=none
  chown -R munge:munge "$d/munge"
  chmod 755 "$d/munge" # the socket directory must be searchable by everyone
  chmod 600 "$d/munge/munge.key"
  local sock="$d/munge/munge.socket"
  runuser -u munge -- munged --socket="$sock" --key-file="$d/munge/munge.key" \
    --pid-file="$d/munge/munged.pid" --log-file="$d/munge/munged.log" \
    --seed-file="$d/munge/munged.seed" >"$d/log/munged.out" 2>&1 ||
    slurm_die "munged did not start: $(cat "$d/log/munged.out" "$d/munge/munged.log" 2>/dev/null)"
  local pid
  pid=$(slurm_wait_pidfile "$d/munge/munged.pid" 10) || slurm_die "munged wrote no pid file"
  slurm_record munged "$pid"

  # slurm.conf: one node (this host, as `slurmd -C` describes it) on 127.0.0.1.
  local host node port
  host=$(hostname -s)
  node=$(slurmd -C 2>/dev/null | head -n 1)
  [[ $node == NodeName=* ]] || slurm_die "'slurmd -C' printed no node line: $node"
  node=$(sed "s/^NodeName=[^ ]*/NodeName=$host/" <<<"$node")
  port=$(slurm_free_port "${AS_SLURM_PORT:-16817}")
  AS_SLURM_CPUS=$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$node")
  cat >"$d/slurm.conf" <<EOF
# Private single-node Slurm of an attnsweep test (tests/slurm/lib.sh)
ClusterName=astest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock,cred_expire=${AS_SLURM_CRED_EXPIRE:-5}
CommunicationParameters=NoInAddrAny
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
MpiDefault=pmix
EnforcePartLimits=ALL
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
KillWait=${AS_SLURM_KILLWAIT:-10}
MinJobAge=600
ReturnToService=2
JobRequeue=1
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  export SLURM_CONF="$d/slurm.conf"
  # Nothing from a surrounding allocation may leak into the private cluster.
  local v
  for v in $(env | sed -n 's/^\(SLURM_[A-Z_]*\)=.*/\1/p'); do
    [ "$v" = SLURM_CONF ] || unset "$v"
  done

  slurmctld -i -f "$SLURM_CONF" >"$d/log/slurmctld.out" 2>&1 ||
    slurm_die "slurmctld did not start: $(tail -n 20 "$d/log/slurmctld.out" "$d/log/slurmctld.log" 2>/dev/null)"
  pid=$(slurm_wait_pidfile "$d/slurmctld.pid" 15) ||
    slurm_die "slurmctld is not running: $(tail -n 20 "$d/log/slurmctld.log" 2>/dev/null)"
  slurm_record slurmctld "$pid"
  slurmd -f "$SLURM_CONF" >"$d/log/slurmd.out" 2>&1 ||
    slurm_die "slurmd did not start: $(tail -n 20 "$d/log/slurmd.out" "$d/log/slurmd.log" 2>/dev/null)"
  pid=$(slurm_wait_pidfile "$d/slurmd.pid" 15) ||
    slurm_die "slurmd is not running: $(tail -n 20 "$d/log/slurmd.log" 2>/dev/null)"
  slurm_record slurmd "$pid"

  # Wait until the node is idle (the controller has heard from slurmd).
  local i state=
  for ((i = 0; i < 300; i++)); do
    state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.1
  done
  [ "$state" = idle ] || slurm_die "node $host is '$state', not idle, after 30 s: $(tail -n 20 \
"$d/log/slurmctld.log" "$d/log/slurmd.log" 2>/dev/null)"
  export AS_SLURM_NODE=$host
  slurm_log "private Slurm up in $d (node $host, $AS_SLURM_CPUS CPUs, ports $port/$((port + 1)))"
}

# Stops what slurm_start started: cancels this cluster's jobs, then slurmd, slurmctld, munged,
# each by its recorded pid (and only if that pid still runs the same executable).
slurm_stop() {
  local rc=$?
  [ "$AS_SLURM_STARTED" = 1 ] || return $rc
  AS_SLURM_STARTED=0
  trap - EXIT INT TERM
  if [ $rc -ne 0 ] && [ -n "${AS_SLURM_DIR:-}" ]; then
    slurm_log "failed (rc $rc); last lines of the Slurm logs:"
    tail -n 15 "$AS_SLURM_DIR"/log/slurmctld.log "$AS_SLURM_DIR"/log/slurmd.log >&2 2>/dev/null || true
  fi
  if [ -n "${SLURM_CONF:-}" ] && [ -f "$SLURM_CONF" ]; then
    scancel --full -u root >/dev/null 2>&1 || true
    local i
    for ((i = 0; i < 100; i++)); do
      [ -z "$(squeue -h 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  local k entry name pid exe
  for ((k = ${#AS_SLURM_PIDS[@]} - 1; k >= 0; k--)); do
    entry=${AS_SLURM_PIDS[$k]}
    name=${entry%%:*}
    pid=${entry#*:}
    exe=${pid#*:}
    pid=${pid%%:*}
    if [ "$(readlink "/proc/$pid/exe" 2>/dev/null || true)" = "$exe" ]; then
      kill -TERM "$pid" 2>/dev/null || true
      for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      if kill -0 "$pid" 2>/dev/null; then
        slurm_log "$name (pid $pid) still runs after 10 s: KILL"
        kill -KILL "$pid" 2>/dev/null || true
      fi
    fi
  done
  AS_SLURM_PIDS=()
  if [ "${AS_SLURM_KEEP:-0}" = 1 ]; then
    slurm_log "kept $AS_SLURM_DIR"
  elif [ -n "${AS_SLURM_DIR:-}" ]; then
    rm -rf "$AS_SLURM_DIR"
  fi
  return $rc
}

# Field of `scontrol show job -o ID` (e.g. JobState, ExitCode, Restarts); empty if unknown.
slurm_job_field() {
  scontrol show job -o "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -n 1
}

# Waits until job $1 is in a final state (COMPLETED, FAILED, CANCELLED, TIMEOUT, ...), at most
# $2 seconds; prints the state. Returns 1 on timeout.
slurm_wait_job() {
  local id=$1 t=${2:-120} start st
  start=$(date +%s)
  while :; do
    st=$(slurm_job_field "$id" JobState)
    case $st in
    COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED)
      echo "$st"
      return 0
      ;;
    esac
    if [ $(($(date +%s) - start)) -ge "$t" ]; then
      echo "${st:-UNKNOWN}"
      return 1
    fi
    sleep 0.5
  done
}

# Waits until job $1 is RUNNING (at most $2 s).
slurm_wait_running() {
  local id=$1 t=${2:-60} i st
  for ((i = 0; i < t * 5; i++)); do
    st=$(slurm_job_field "$id" JobState)
    [ "$st" = RUNNING ] && return 0
    sleep 0.2
  done
  return 1
}
