#!/usr/bin/env bash
# Pack what bench/side_by_side.sh needs on a machine that reaches no package registry but has a
# Python of its own with packages installed, into one folder small enough to carry along with
# the repository (the machines lent to this project take 64 MiB in all, repository included).
#
# Usage: bench/device_carry.sh [--help]
#
# Environment:
#   REFEREE_BIN     folder with the v1.36 binaries etcd, kube-apiserver and kube-scheduler
#                   (what ../shared/referee/v1.36/build.sh puts in $REFEREE_DIR/bin)
#   REFEREE_SCRIPTS folder with up.sh, down.sh and sched.sh (default: ../shared/referee/v1.36
#                   beside this repository)
#   DEST            the folder to fill (default .device-carry in the repository, which git
#                   ignores): bin/NAME.xz, wheels/, referee/
#   TARGET_PYTHON   the target's Python version, for the compiled wheels (default 3.12)
#   TARGET_HAS      distributions the target has installed, left out (default: those of the
#                   lent machines' image as read in 2026-11, grpcio included: a benchmark
#                   does not trace, and side_by_side.sh then installs without dependency
#                   checks; protobuf stays in, as the OTLP exporters want a recent one)
#   PYTHON          the Python with pip on this machine (default python3)
#
# Then, on the target, from the repository root (the folder named in `carry`):
#   REFEREE_BIN=.device-carry/bin REFEREE_SCRIPTS=.device-carry/referee \
#   AIOSCHED_WHEELS=.device-carry/wheels VENV_SYSTEM_SITE_PACKAGES=1 PYTHON=python3 \
#   OUT=/tmp/side-by-side bench/side_by_side.sh
set -euo pipefail

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
for arg in "$@"; do
  case "$arg" in
    --help|-h) usage; exit 0 ;;
    *) echo "device_carry.sh: unknown argument $arg (see --help)" >&2; exit 2 ;;
  esac
done

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
REFEREE_SCRIPTS="${REFEREE_SCRIPTS:-$REPO/../shared/referee/v1.36}"
DEST="${DEST:-$REPO/.device-carry}"
TARGET_PYTHON="${TARGET_PYTHON:-3.12}"
PYTHON="${PYTHON:-python3}"
# Installed on the lent machines' image (/work/.library/device/KINDS.md, 2026-11), among
# aiosched's dependencies; wheel names are normalised (lower case, "_" for "-" and ".").
TARGET_HAS="${TARGET_HAS:-aiohappyeyeballs aiohttp aiosignal anyio attrs certifi charset_normalizer
frozenlist grpcio idna multidict numpy prometheus_client propcache python_dateutil pyyaml requests
six typing_extensions urllib3 uvloop yarl}"
LIMIT=$((64 << 20))

[ -n "${REFEREE_BIN:-}" ] || { echo "device_carry.sh: set REFEREE_BIN (folder with etcd, kube-apiserver, kube-scheduler)" >&2; exit 2; }
for bin in etcd kube-apiserver kube-scheduler; do
  [ -x "$REFEREE_BIN/$bin" ] || { echo "device_carry.sh: no executable $REFEREE_BIN/$bin" >&2; exit 2; }
done
for script in up.sh down.sh sched.sh; do
  [ -f "$REFEREE_SCRIPTS/$script" ] || { echo "device_carry.sh: no $REFEREE_SCRIPTS/$script (set REFEREE_SCRIPTS)" >&2; exit 2; }
done

mkdir -p "$DEST/bin" "$DEST/wheels" "$DEST/referee"
DOWNLOADS="$(mktemp -d)"
trap 'rm -rf "$DOWNLOADS"' EXIT

echo "device_carry.sh: the aiosched wheel" >&2
rm -f "$DEST"/wheels/*.whl
"$PYTHON" -m pip wheel --quiet --no-deps --wheel-dir "$DEST/wheels" "$REPO"
echo "device_carry.sh: its dependencies for Python $TARGET_PYTHON on x86-64 Linux" >&2
"$PYTHON" -m pip download --quiet --only-binary=:all: --implementation cp \
  --python-version "$TARGET_PYTHON" --platform manylinux_2_34_x86_64 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --dest "$DOWNLOADS" "$DEST"/wheels/aiosched-*.whl
for wheel in "$DOWNLOADS"/*.whl; do
  name="$(basename "$wheel" | cut -d- -f1 | tr 'A-Z.-' 'a-z__')"
  case " $(echo $TARGET_HAS) " in
    *" $name "*) ;;
    *) [ "$name" = aiosched ] || mv "$wheel" "$DEST/wheels/" ;;
  esac
done

for bin in etcd kube-apiserver kube-scheduler; do
  packed="$DEST/bin/$bin.xz"
  if [ ! -s "$packed" ] || [ "$REFEREE_BIN/$bin" -nt "$packed" ]; then
    echo "device_carry.sh: compressing $bin" >&2
    xz -9 -T0 -c "$REFEREE_BIN/$bin" > "$packed.part" && mv "$packed.part" "$packed"
  fi
done
cp "$REFEREE_SCRIPTS/up.sh" "$REFEREE_SCRIPTS/down.sh" "$REFEREE_SCRIPTS/sched.sh" "$DEST/referee/"

carried=$(du -sb "$DEST" | cut -f1)
tracked=$(cd "$REPO" && git ls-files -z | du -cb --files0-from=- | tail -1 | cut -f1)
total=$((carried + tracked))
awk -v dest="$DEST" -v c="$carried" -v t="$total" -v l=$((LIMIT >> 20)) 'BEGIN {
  printf "device_carry.sh: %s holds %.1f MiB; with the repository %.1f MiB of %d MiB\n",
    dest, c / 1048576, t / 1048576, l }' 
if [ "$total" -gt "$LIMIT" ]; then
  echo "device_carry.sh: too large to carry: add what the target has to TARGET_HAS" >&2
  exit 1
fi
