#!/bin/bash
# RR22 fast at scale: two `obliv psi` processes over loopback TCP on CSV files that
# `obliv gen-data` writes (half of each side's rows are common), each process under
# `/usr/bin/time -v`. For every size N, prints one JSON line:
#   {"n", "wall_s", "input_s", "cpu_s": [rank 0, rank 1], "peak_rss_mib": [..],
#    "bytes", "spill_peak_bytes", "csv_bytes", "rows_out", "correct", "cpu", "features"}
# where input_s is the slower party's input pass (reading, hashing, bucketing, spilling) as its
# log reports it, spill_peak_bytes the largest total size of both parties' temporary bucket
# files seen (sampled every second) and csv_bytes the size of both input files.
#
# Disk: each size needs about 25 B per row per input file, 24 B per row per party of spill
# beyond --key-memory, and 25 B per row of output at rank 0, so about 125 B·N in all; the
# script refuses a size that would not fit in DIR.
#
# Usage: bash benches/scale/rr22_fast.sh [SIZES [DIR]]
#   e.g. bash benches/scale/rr22_fast.sh "1e7 1e8 3e8" /var/tmp/obliv-scale   (the defaults)
# Extra `obliv psi` options go in OBLIV_PSI_ARGS (e.g. "--sim-bandwidth 100mbit").
set -u
cd "$(dirname "$0")/../.."
source benches/lib.sh
SIZES=${1:-1e7 1e8 3e8}
DIR=${2:-/var/tmp/obliv-scale}
mkdir -p "$DIR" || exit 1
for s in $SIZES; do
  n=$(int "$s")
  W="$DIR/n$n"
  rm -rf "$W"
  mkdir -p "$W/r0" "$W/r1"
  need=$((125 * n))
  avail=$(($(df --output=avail -B1 "$DIR" | tail -1)))
  if ((need > avail)); then
    echo "size $n needs about $((need >> 30)) GiB in $DIR, $((avail >> 30)) GiB are free" >&2
    exit 1
  fi
  "$B" gen-data --size "$n" --out-dir "$W" >/dev/null || exit 1
  csv=$(($(stat -c %s "$W/psi_1.csv") + $(stat -c %s "$W/psi_2.csv")))
  # Samples the spill directories of both parties once a second; the peak goes to spill.txt.
  (
    peak=0
    while :; do
      cur=$(du -sb "$W"/r0/obliv-buckets-* "$W"/r1/obliv-buckets-* 2>/dev/null | awk '{s += $1} END {printf "%.0f\n", s}')
      ((cur > peak)) && peak=$cur && echo "$peak" >"$W/spill.txt"
      sleep 1
    done
  ) &
  sampler=$!
  # shellcheck disable=SC2086 # extra options, word by word
  psi_pair "$W" --protocol rr22 ${OBLIV_PSI_ARGS:-}
  rc=$?
  kill "$sampler" 2>/dev/null
  wait "$sampler" 2>/dev/null
  ((rc == 0)) || exit 1
  python3 - "$W" "$n" "$PAIR_T0" "$PAIR_T1" "$csv" "$CPU" "$FEATURES" <<'PY'
import json, re, sys
sys.path.insert(0, "benches")
from time_v import time_v
w, n, t0, t1, csv, cpu, features = sys.argv[1:]
n = int(n)
def input_s(r):
    m = re.findall(r"reading input: done, .* in ([\d.]+) s", open(f"{w}/log{r}.txt").read())
    return float(m[-1]) if m else None
reports = [json.load(open(f"{w}/report{r}.json")) for r in (0, 1)]
tv = [time_v(f"{w}/time{r}.txt") for r in (0, 1)]
try:
    spill = int(open(f"{w}/spill.txt").read())
except OSError:
    spill = 0
rows_out = reports[0]["rows_out"]
print(json.dumps({
    "n": n, "wall_s": round(float(t1) - float(t0), 1),
    "input_s": max((x for x in map(input_s, (0, 1)) if x is not None), default=None),
    "cpu_s": [round(c, 1) for c, _ in tv], "peak_rss_mib": [round(m, 1) for _, m in tv],
    "bytes": reports[0]["bytes_sent"] + reports[0]["bytes_received"],
    "spill_peak_bytes": spill, "csv_bytes": int(csv),
    "rows_out": rows_out, "correct": rows_out == n // 2, "cpu": cpu, "features": features,
}))
PY
  rm -rf "$W"
done
