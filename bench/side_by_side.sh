#!/usr/bin/env bash
# kube-scheduler v1.36 and aiosched side by side on one real kube-apiserver + etcd (v1.36), with
# the default profile and the null profile (PrioritySort + DefaultBinder only), on one machine
# that reaches no package registry: everything it needs is carried in folders.
#
# Usage: bench/side_by_side.sh [--dry-run] [--help]
#
# Environment:
#   REFEREE_BIN     folder with the v1.36 binaries etcd, kube-apiserver and kube-scheduler
#                   (what ../shared/referee/v1.36/build.sh puts in $REFEREE_DIR/bin), each as
#                   it is or xz-compressed (NAME.xz, unpacked into $OUT/bin), and optionally
#                   kubectl (without it, a stand-in answers up.sh's readiness check)
#   AIOSCHED_WHEELS folder with the aiosched wheel and every dependency's wheel
#                   (pip wheel --wheel-dir DIR . on a machine with the registry, or
#                   bench/device_carry.sh for a machine that has some of them installed)
#   VENV_SYSTEM_SITE_PACKAGES  1: the virtualenv also sees $PYTHON's installed packages, so
#                   the wheels need only hold what that Python lacks (default 0)
#   REFEREE_SCRIPTS folder with up.sh, down.sh and sched.sh (default: ../shared/referee/v1.36
#                   beside this repository)
#   WORKLOAD        the workload (default SchedulingBasic/5000Nodes_10000Pods)
#   OUT             where configs, logs, JSON results and the table go (default ./side-by-side)
#   PYTHON          the Python that makes the virtualenv (default python3, 3.11 or newer)
#   RUNS            "scheduler:profile" pairs to run, in order (default: all four)
#   TIMEOUT         seconds allowed per run, setup included (default 1200)
#   AIOSCHED_RUN    the command that starts the scheduler under test, before `run` and its
#                   flags (default: the virtualenv's aiosched). To compare a build with another
#                   checkout on the same API server, e.g.
#                   AIOSCHED_RUN="env PYTHONPATH=/path/to/other-checkout $OUT/venv/bin/aiosched"
#                   (the bench itself stays the virtualenv's)
#
# Each run gets a fresh control plane (down.sh, then up.sh: etcd starts empty), the bench creates
# the nodes, init pods and measured pods through the API, and both schedulers get the same
# KubeSchedulerConfiguration (qps/burst 5000, no leader election; the null profile adds a
# profile with every plugin disabled but PrioritySort and DefaultBinder). CPU and peak RSS are
# read from /proc for the scheduler's process tree. At the end a table compares them (also in
# $OUT/table.txt); the JSON of each run is in $OUT/<scheduler>-<profile>.json.
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

DRY_RUN=0
for arg in "$@"; do
  case "$arg" in
    --help|-h) usage; exit 0 ;;
    --dry-run) DRY_RUN=1 ;;
    *) echo "side_by_side.sh: unknown argument $arg (see --help)" >&2; exit 2 ;;
  esac
done

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
REFEREE_SCRIPTS="${REFEREE_SCRIPTS:-$REPO/../shared/referee/v1.36}"
WORKLOAD="${WORKLOAD:-SchedulingBasic/5000Nodes_10000Pods}"
OUT="${OUT:-$PWD/side-by-side}"
PYTHON="${PYTHON:-python3}"
RUNS="${RUNS:-kube-scheduler:default aiosched:default kube-scheduler:null aiosched:null}"
TIMEOUT="${TIMEOUT:-1200}"

missing=()
[ -n "${REFEREE_BIN:-}" ] || missing+=("REFEREE_BIN (folder with etcd, kube-apiserver, kube-scheduler)")
[ -n "${AIOSCHED_WHEELS:-}" ] || missing+=("AIOSCHED_WHEELS (folder with the aiosched wheel and its dependencies')")
if [ ${#missing[@]} -gt 0 ]; then
  printf 'side_by_side.sh: set %s\n' "${missing[@]}" >&2
  exit 2
fi
for bin in etcd kube-apiserver kube-scheduler; do
  [ -x "$REFEREE_BIN/$bin" ] || [ -f "$REFEREE_BIN/$bin.xz" ] || {
    echo "side_by_side.sh: no executable $REFEREE_BIN/$bin (nor $bin.xz)" >&2; exit 2; }
done
for script in up.sh down.sh sched.sh; do
  [ -f "$REFEREE_SCRIPTS/$script" ] || { echo "side_by_side.sh: no $REFEREE_SCRIPTS/$script (set REFEREE_SCRIPTS)" >&2; exit 2; }
done
compgen -G "$AIOSCHED_WHEELS/aiosched-*.whl" >/dev/null || {
  echo "side_by_side.sh: no aiosched-*.whl in $AIOSCHED_WHEELS" >&2; exit 2; }
for run in $RUNS; do
  case "$run" in
    kube-scheduler:default|kube-scheduler:null|aiosched:default|aiosched:null) ;;
    *) echo "side_by_side.sh: RUNS: unknown run $run (scheduler:profile, profile default or null)" >&2; exit 2 ;;
  esac
done

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
# up.sh/down.sh/sched.sh find the binaries in $REFEREE_DIR/bin and keep their state in
# $REFEREE_DIR/run: a folder of our own, the carried binaries linked in (or unpacked there).
REFEREE_DIR="$OUT/referee"
BIN="$OUT/bin"
VENV="$OUT/venv"
unxz() {  # unxz FILE.xz DEST, with Python's lzma where there is no xz
  if command -v xz >/dev/null; then xz -dc "$1" > "$2"; return; fi
  "$PYTHON" -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"
}
mkdir -p "$REFEREE_DIR" "$BIN"
ln -sfn "$BIN" "$REFEREE_DIR/bin"
REFEREE_BIN="$(cd "$REFEREE_BIN" && pwd)"
for bin in etcd kube-apiserver kube-scheduler kubectl; do
  if [ -x "$REFEREE_BIN/$bin" ]; then
    ln -sfn "$REFEREE_BIN/$bin" "$BIN/$bin"
  elif [ -f "$REFEREE_BIN/$bin.xz" ] && [ ! -x "$BIN/$bin" ] && [ "$DRY_RUN" = 0 ]; then
    unxz "$REFEREE_BIN/$bin.xz" "$BIN/$bin.part" && chmod +x "$BIN/$bin.part" && mv "$BIN/$bin.part" "$BIN/$bin"
  fi
done
if [ ! -x "$BIN/kubectl" ]; then
  # up.sh only asks `kubectl --kubeconfig KC get --raw /readyz`: answer that from the
  # kubeconfig it wrote (server, CA, token), with the virtualenv's Python and PyYAML.
  cat > "$BIN/kubectl" <<STANDIN
#!$VENV/bin/python
import base64, ssl, sys, tempfile, urllib.request, yaml
args = sys.argv[1:]
if len(args) != 5 or args[0] != "--kubeconfig" or args[2:4] != ["get", "--raw"]:
    sys.exit("kubectl stand-in (bench/side_by_side.sh): only --kubeconfig KC get --raw PATH")
config = yaml.safe_load(open(args[1]))
cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
with tempfile.NamedTemporaryFile("wb", suffix=".crt") as ca:
    ca.write(base64.b64decode(cluster["certificate-authority-data"]))
    ca.flush()
    request = urllib.request.Request(
        cluster["server"] + args[4], headers={"Authorization": "Bearer " + user["token"]})
    try:
        with urllib.request.urlopen(request, context=ssl.create_default_context(cafile=ca.name), timeout=5) as reply:
            sys.stdout.write(reply.read().decode())
    except OSError as exc:
        sys.exit(str(exc))
STANDIN
  chmod +x "$BIN/kubectl"
fi
cp "$REFEREE_SCRIPTS/up.sh" "$REFEREE_SCRIPTS/down.sh" "$REFEREE_SCRIPTS/sched.sh" "$REFEREE_DIR/"
export REFEREE_DIR
export PATH="$BIN:$PATH"  # up.sh waits for readiness with kubectl
KUBECONFIG_FILE="$REFEREE_DIR/admin.kubeconfig"

# The configurations: what `aiosched bench` writes for a run (bench/scheduler_setup.py), and
# the same with the null profile. They name the kubeconfig: kube-scheduler ignores
# --kubeconfig when --config is given.
BASE_CONFIG="apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: \"$KUBECONFIG_FILE\"
  qps: 5000
  burst: 5000
"
printf '%s' "$BASE_CONFIG" > "$OUT/default-config.yaml"
printf '%s%s' "$BASE_CONFIG" 'profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: PrioritySort
      - name: DefaultBinder
      disabled:
      - name: "*"
' > "$OUT/null-config.yaml"

AIOSCHED="$VENV/bin/aiosched"
run_or_echo() {
  if [ "$DRY_RUN" = 0 ]; then "$@"; return; fi
  printf '+ %q' "$1"; shift
  [ $# -eq 0 ] || printf ' %q' "$@"
  printf '\n'
}

if [ "$DRY_RUN" = 0 ]; then
  echo "side_by_side.sh: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); results in $OUT" >&2
fi
if [ ! -x "$AIOSCHED" ]; then
  if [ "${VENV_SYSTEM_SITE_PACKAGES:-0}" = 1 ]; then
    run_or_echo "$PYTHON" -m venv --system-site-packages "$VENV"
  else
    run_or_echo "$PYTHON" -m venv "$VENV"
  fi
  # Where the Python's own packages are older than aiosched asks, their wheels are not carried
  # (bench/device_carry.sh): install what is, and let those be (a benchmark imports no gRPC).
  run_or_echo "$VENV/bin/pip" install --quiet --no-index --find-links "$AIOSCHED_WHEELS" aiosched \
    || { [ "${VENV_SYSTEM_SITE_PACKAGES:-0}" = 1 ] \
      && echo "side_by_side.sh: installing the carried wheels without their dependency checks" >&2 \
      && run_or_echo "$VENV/bin/pip" install --quiet --no-index --no-deps "$AIOSCHED_WHEELS"/*.whl; }
fi

stop_control_plane() { bash "$REFEREE_DIR/down.sh" >/dev/null 2>&1 || true; }
if [ "$DRY_RUN" = 0 ]; then trap stop_control_plane EXIT; fi

for run in $RUNS; do
  scheduler="${run%%:*}"
  profile="${run##*:}"
  config="$OUT/$profile-config.yaml"
  result="$OUT/$scheduler-$profile.json"
  if [ "$scheduler" = kube-scheduler ]; then
    command="bash $REFEREE_DIR/sched.sh {kubeconfig} --config $config"
  else
    command="${AIOSCHED_RUN:-$AIOSCHED} run --kubeconfig {kubeconfig} --config $config --http-address 127.0.0.1:{port} --insecure-http"
  fi
  run_or_echo stop_control_plane
  run_or_echo env EXTRA_APISERVER_ARGS=--disable-admission-plugins=ServiceAccount,TaintNodesByCondition \
    bash "$REFEREE_DIR/up.sh"
  run_or_echo "$AIOSCHED" bench "$WORKLOAD" --kubeconfig "$KUBECONFIG_FILE" \
    --scheduler-command "$command" --label "$scheduler" --timeout "$TIMEOUT" \
    --workdir "$OUT/work-$scheduler-$profile" --json "$result" \
    || echo "side_by_side.sh: $run failed (logs in $OUT/work-$scheduler-$profile)" >&2
done
run_or_echo stop_control_plane

TABLE_SCRIPT='
import json, sys
rows = [("scheduler", "profile", "pods/s", "lat p50 s", "CPU s", "crit CPU s", "peak RSS MiB", "status")]
for path in sys.argv[1:]:
    name = path.rsplit("/", 1)[-1][: -len(".json")]
    scheduler, profile = name.rsplit("-", 1)
    try:
        (doc,) = json.load(open(path))
    except (OSError, ValueError) as exc:
        rows.append((scheduler, profile, "-", "-", "-", "-", "-", f"no result: {exc}"))
        continue
    num = lambda v, f: "-" if v is None else format(v, f)
    rate, lat = doc.get("pods_per_second") or {}, doc.get("latency_seconds") or {}
    rss = doc.get("peak_rss_bytes")
    rows.append((scheduler, "PrioritySort + DefaultBinder" if profile == "null" else profile,
                 num(rate.get("average"), ".0f"), num(lat.get("p50"), ".2f"),
                 num(doc.get("scheduler_cpu_seconds"), ".1f"),
                 num(doc.get("critical_path_cpu_seconds"), ".1f"),
                 num(None if rss is None else rss / 2**20, ".0f"),
                 "ok" if doc.get("error") is None else doc["error"]))
widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
for r in rows:
    print("  ".join(c.ljust(w) if i in (0, 1, 7) else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip())
'
results=()
for run in $RUNS; do results+=("$OUT/${run%%:*}-${run##*:}.json"); done
if [ "$DRY_RUN" = 1 ]; then
  run_or_echo "$VENV/bin/python" -c "<table>" "${results[@]}"
else
  echo "$WORKLOAD on kube-apiserver v1.36 + etcd, $(nproc) CPUs:" | tee "$OUT/table.txt"
  "$VENV/bin/python" -c "$TABLE_SCRIPT" "${results[@]}" | tee -a "$OUT/table.txt"
fi
