#!/usr/bin/env bash
# Download benchmark (issue 4, part 7): a ~1 GiB packed synth model behind Debian's nginx on
# loopback, fetched by plain curl and by edgellm's verified chunked downloader, side by side.
#   bench/download_bench.sh [--rounds N] [--rate RATE] [--json]
# Three runs of build/bin/edgellm-dlbench:
#   disk     into build/dlbench, unthrottled loopback (disk and CPU are the limits)
#   tmpfs    into /dev/shm, unthrottled (no disk: what verification costs in CPU)
#   link     into build/dlbench over a loopback link shaped to RATE (default 800mbit =
#            100 MB/s, all connections together) with tc htb on the nginx port: a network-bound
#            download, as on a phone. Needs root (CAP_NET_ADMIN); skipped with a note if not.
# Results and their reading: docs/benchmarks.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
rounds=3 rate=800mbit json=()
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --json) json=(--json); shift ;;
    -h|--help) sed -n 2,12p "$0"; exit 0 ;;
    *) echo "download_bench.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
for t in build/bin/edgellm build/bin/edgellm-dlbench; do
  [ -x "$t" ] || { echo "download_bench.sh: $t is missing: run scripts/setup.sh" >&2; exit 1; }
done

model=models/qwen2.5-1.5b-Q4_K_M.gguf
if [ ! -f "$model" ]; then
  echo "==> making $model (edgellm synth; once)" >&2
  mkdir -p models
  build/bin/edgellm synth --preset qwen2.5-1.5b --type Q4_K_M -o "$model" >&2
fi
read -r url www < <(bash scripts/nginx.sh start)
shaped=0
cleanup() {
  [ "$shaped" = 1 ] && tc qdisc del dev lo root 2>/dev/null || true
  bash scripts/nginx.sh stop
  rm -rf /dev/shm/edgellm-dlbench build/dlbench
}
trap cleanup EXIT
pack="$www/bench"
if [ ! -f "$pack/manifest.json" ] || [ "$model" -nt "$pack/manifest.json" ]; then
  echo "==> edgellm pack $model -> $pack" >&2
  rm -rf "$pack"
  build/bin/edgellm pack "$model" --id dlbench --version 1 -o "$pack" >&2
fi

run() {  # name dest
  echo "==> $1: edgellm-dlbench --dest $2 --rounds $rounds" >&2
  build/bin/edgellm-dlbench --dir "$pack" --url "$url/bench" --dest "$2" --rounds "$rounds" \
    "${json[@]}"
}
run disk build/dlbench
if [ -d /dev/shm ]; then run tmpfs /dev/shm/edgellm-dlbench; fi

port="${url##*:}"
if [ "$(tc qdisc show dev lo 2>/dev/null | awk '{print $2; exit}')" != noqueue ]; then
  echo "==> link: skipped (lo already has a qdisc, or tc is missing)" >&2
elif tc qdisc add dev lo root handle 1: htb default 10 2>/dev/null; then
  shaped=1
  tc class add dev lo parent 1: classid 1:10 htb rate 100gbit 2>/dev/null
  tc class add dev lo parent 1: classid 1:20 htb rate "$rate" ceil "$rate" 2>/dev/null
  tc filter add dev lo protocol ip parent 1: prio 1 u32 match ip sport "$port" 0xffff flowid 1:20
  echo "==> link shaped to $rate on port $port" >&2
  run "link ($rate)" build/dlbench
else
  echo "==> link: skipped (tc cannot shape lo here: needs root / CAP_NET_ADMIN)" >&2
fi
