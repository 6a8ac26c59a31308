#!/bin/bash
# Two-party PSI on a slow link against its bound. For every protocol P, size N (rows per side,
# half of them common), link BANDWIDTH/LATENCY and worker count W: `obliv gen-data`, then two
# `obliv psi --protocol P --workers W` processes over loopback TCP through the CLI's simulated
# link (`--sim-bandwidth`, `--sim-latency`; see obliv-net's `SimLink` for the model), each
# under `/usr/bin/time`. Prints one JSON line per run:
#   {"protocol", "n", "link", "workers", "bucket_load", "buckets", "wall_s", "cpu_s": [r0, r1],
#    "sent": [r0, r1], "rounds": [r0, r1], "critical_rounds": [r0, r1], "t_link_s", "bound_s",
#    "wall_over_bound", "correct", "cpu", "features"}
# with, for the larger direction's B bytes, bandwidth W_l, round-trip time R = 2·latency and
# r = max(critical_rounds) (the round trips on the critical path as the report counts them:
# the handshake's and the set-up's, plus the most one worker waits for, since workers run side
# by side),
#   t_link_s        = 8·B / W_l + r·R
#   bound_s         = max(t_link_s, the slower party's CPU time)
#   wall_over_bound = wall_s / bound_s   (the target is at most 1.3)
# Both parties share this machine's cores, so on a 2-core machine the CPU time of the slower
# party understates what a run of two machines would get.
#
# Usage: bash benches/links/slow_link.sh [PROTOCOLS [SIZES [LINKS [WORKERS]]]]
#   defaults: "rr22 rr22-lowcomm rr22-malicious kkrt" "1e6 1e7" "100mbit/10ms 1gbit/20ms" "1 2"
# OBLIV_BUCKET_LOAD sets --bucket-load (default: the CLI's); OBLIV_SCRATCH the directory of
# the generated files (default: a temporary directory).
set -u
cd "$(dirname "$0")/../.."
source benches/lib.sh
PROTOCOLS=${1:-rr22 rr22-lowcomm rr22-malicious kkrt}
SIZES=${2:-1e6 1e7}
LINKS=${3:-100mbit/10ms 1gbit/20ms}
WORKERS=${4:-1 2}
LOAD=${OBLIV_BUCKET_LOAD:-}
if [[ -n ${OBLIV_SCRATCH:-} ]]; then
  WORK=$OBLIV_SCRATCH
  mkdir -p "$WORK" || exit 1
else
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
fi
for s in $SIZES; do
  n=$(int "$s")
  D="$WORK/n$n"
  [[ -f $D/psi_2.csv ]] || "$B" gen-data --size "$n" --out-dir "$D" >/dev/null || exit 1
  for p in $PROTOCOLS; do
    for link in $LINKS; do
      bw=${link%/*} lat=${link#*/}
      for w in $WORKERS; do
        extra=(--protocol "$p" --workers "$w" --sim-bandwidth "$bw" --sim-latency "$lat")
        [[ -n $LOAD ]] && extra+=(--bucket-load "$LOAD")
        psi_pair "$D" "${extra[@]}" || continue
        python3 - "$D" "$p" "$n" "$link" "$w" "${LOAD:-default}" "$PAIR_T0" "$PAIR_T1" \
          "$CPU" "$FEATURES" <<'PY'
import json, re, sys
sys.path.insert(0, "benches")
from time_v import time_v
d, p, n, link, w, load, t0, t1, cpu, features = sys.argv[1:]
n, w = int(n), int(w)
def unit(x, units):
    m = re.fullmatch(r"([\d.]+)([a-z]+)", x)
    return float(m.group(1)) * units[m.group(2)]
bw = unit(link.split("/")[0], {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9})
lat = unit(link.split("/")[1], {"us": 1e-6, "ms": 1e-3, "s": 1.0})
rep = [json.load(open(f"{d}/report{r}.json")) for r in (0, 1)]
cpu_s = [round(time_v(f"{d}/time{r}.txt")[0], 2) for r in (0, 1)]
sent = [r["bytes_sent"] for r in rep]
critical = [r["critical_rounds"] for r in rep]
t_link = 8 * max(sent) / bw + max(critical) * 2 * lat
wall = float(t1) - float(t0)
bound = max(t_link, max(cpu_s))
print(json.dumps({
    "protocol": p, "n": n, "link": link, "workers": w, "bucket_load": load,
    "buckets": rep[0]["buckets"], "wall_s": round(wall, 2), "cpu_s": cpu_s, "sent": sent,
    "rounds": [r["rounds"] for r in rep], "critical_rounds": critical,
    "t_link_s": round(t_link, 2), "bound_s": round(bound, 2),
    "wall_over_bound": round(wall / bound, 3), "correct": rep[0]["rows_out"] == n // 2,
    "cpu": cpu, "features": features,
}))
PY
      done
    done
  done
done
