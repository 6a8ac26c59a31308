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
cargo build --release -q -p obliv-cli --bin obliv || exit 1
B=$(realpath "${CARGO_TARGET_DIR:-target}/release/obliv")
SIZES=${1:-1e7 1e8 3e8}
DIR=${2:-/var/tmp/obliv-scale}
CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
FEATURES=$(grep -m1 -o -w 'aes\|avx2\|bmi2\|adx\|avx512f\|avx512ifma\|vaes\|vpclmulqdq' /proc/cpuinfo \
  | sort -u | tr '\n' ' ' | sed 's/ $//')
int() { python3 -c "print(int(float('$1')))"; }
now() { date +%s.%N; }
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
  port=$((20000 + RANDOM % 20000))
  parties="127.0.0.1:$port,127.0.0.1:$((port + 1))"
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
  t0=$(now)
  for r in 0 1; do
    # shellcheck disable=SC2086
    /usr/bin/time -v -o "$W/time$r.txt" "$B" psi --protocol rr22 --rank "$r" --parties "$parties" \
      --input "$W/psi_$((r + 1)).csv" --keys id --output "$W/r$r/out.csv" \
      --report "$W/report$r.json" ${OBLIV_PSI_ARGS:-} >/dev/null 2>"$W/log$r.txt" &
    eval "p$r=$!"
  done
  wait "$p0"
  rc0=$?
  wait "$p1"
  rc1=$?
  t1=$(now)
  kill "$sampler" 2>/dev/null
  wait "$sampler" 2>/dev/null
  if [[ $rc0 != 0 || $rc1 != 0 ]]; then
    echo "obliv psi failed at $n (rank 0: $rc0, rank 1: $rc1):" >&2
    tail -5 "$W/log0.txt" "$W/log1.txt" >&2
    exit 1
  fi
  python3 - "$W" "$n" "$t0" "$t1" "$csv" "$CPU" "$FEATURES" <<'PY'
import json, re, sys
w, n, t0, t1, csv, cpu, features = sys.argv[1:]
n = int(n)
def time_v(r):
    t = open(f"{w}/time{r}.txt").read()
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", t).group(1))
    sys_ = float(re.search(r"System time \(seconds\): ([\d.]+)", t).group(1))
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1))
    return round(user + sys_, 1), round(rss / 1024, 1)
def input_s(r):
    m = re.findall(r"reading input: done, .* in ([\d.]+) s", open(f"{w}/log{r}.txt").read())
    return float(m[-1]) if m else None
reports = [json.load(open(f"{w}/report{r}.json")) for r in (0, 1)]
tv = [time_v(r) for r in (0, 1)]
try:
    spill = int(open(f"{w}/spill.txt").read())
except OSError:
    spill = 0
rows_out = reports[0]["rows_out"]
print(json.dumps({
    "n": n, "wall_s": round(float(t1) - float(t0), 1),
    "input_s": max((x for x in map(input_s, (0, 1)) if x is not None), default=None),
    "cpu_s": [c for c, _ in tv], "peak_rss_mib": [m for _, m in tv],
    "bytes": reports[0]["bytes_sent"] + reports[0]["bytes_received"],
    "spill_peak_bytes": spill, "csv_bytes": int(csv),
    "rows_out": rows_out, "correct": rows_out == n // 2, "cpu": cpu, "features": features,
}))
PY
  rm -rf "$W"
done
