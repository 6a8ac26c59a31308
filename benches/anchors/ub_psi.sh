#!/bin/bash
# Unbalanced PSI end to end through the CLI against SecretFlow's `ub_psi_execute`, side by side
# on this machine. For every server size S and client size C (half of the client's keys are in
# the server's set, as in shared/anchors/secretflow_psi.py): `obliv ub-psi offline` with both
# roles as two processes over loopback, then `obliv ub-psi online`, each phase timed from the
# start of both processes to the end of the slower one (process start, key and CSV reading,
# connection and output included); then SecretFlow on the same sizes, whose phases are timed
# around `ub_psi_execute` (its CSV reading included, its process start not). Prints one JSON
# line per system and size:
#   {"system", "protocol", "n_server", "n_client", "offline_s", "online_s", "online_bytes",
#    "correct", "cpu", "features"}
# and, on obliv's lines, "server_rss_mib" and "client_rss_mib": each process's peak resident
# memory in the offline and the online phase (GNU time).
# Needs the anchors venv (shared/anchors/setup.sh; python in $OBLIV_ANCHORS_PY) for the
# SecretFlow lines; without it only obliv runs.
# Usage: bash benches/anchors/ub_psi.sh [SERVER_SIZES [CLIENT_SIZES]]
#   e.g. bash benches/anchors/ub_psi.sh "1e6 1e7" "1e3 1e4 1e5"   (the defaults)
set -u
cd "$(dirname "$0")/../.."
source benches/lib.sh
PY=${OBLIV_ANCHORS_PY:-$HOME/.cache/obliv-anchors/bin/python}
SF=${OBLIV_SF_PSI:-../shared/anchors/secretflow_psi.py}
SERVERS=${1:-1e6 1e7}
CLIENTS=${2:-1e3 1e4 1e5}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# Runs `obliv ub-psi PHASE` as server (rank 0) and client (rank 1); prints the seconds and
# leaves the client's report in $WORK/client.json.
pair() {
  local phase=$1 parties t0 t1 rs rc
  parties=$(parties)
  t0=$(now)
  # The client waits up to an hour for the server to come up and read its whole CSV.
  /usr/bin/time -f %M -o "$WORK/$phase.server.rss" \
    "$B" ub-psi "$phase" --role server --rank 0 --parties "$parties" --input "$WORK/server.csv" \
    --key-file "$WORK/server.key" >"$WORK/server.json" 2>"$WORK/server.err" &
  local ps=$!
  local extra=()
  [[ $phase == online ]] && extra=(--input "$WORK/client.csv" --output "$WORK/out.csv")
  /usr/bin/time -f %M -o "$WORK/$phase.client.rss" \
    "$B" ub-psi "$phase" --role client --rank 1 --parties "$parties" --cache "$WORK/cache.bin" \
    --connect-timeout 3600 \
    "${extra[@]}" >"$WORK/client.json" 2>"$WORK/client.err"
  rc=$?
  wait "$ps"
  rs=$?
  t1=$(now)
  if [[ $rs != 0 || $rc != 0 ]]; then
    echo "ub-psi $phase failed (server $rs, client $rc):" >&2
    cat "$WORK/server.err" "$WORK/client.err" >&2
    return 1
  fi
  python3 -c "print(round($t1 - $t0, 3))"
}
for s in $SERVERS; do
  for c in $CLIENTS; do
    ns=$(int "$s") nc=$(int "$c")
    rm -f "$WORK"/server.key "$WORK"/server.key.set "$WORK"/cache.bin "$WORK"/out.csv
    python3 - "$ns" "$nc" "$WORK" <<'PY'
import random, sys
ns, nc, d = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rng = random.Random(f"obliv-ub/{ns}/{nc}")
common = nc // 2
pool = rng.sample(range(1 << 62), ns + nc - common)
server, client = pool[:ns], pool[:common] + pool[ns:]
rng.shuffle(client)
with open(f"{d}/server.csv", "w") as f:
    f.write("id\n" + "\n".join(map(str, server)) + "\n")
with open(f"{d}/client.csv", "w") as f:
    f.write("id\n" + "\n".join(map(str, client)) + "\n")
PY
    off=$(pair offline) || exit 1
    on=$(pair online) || exit 1
    bytes=$(python3 -c "import json; r=json.load(open('$WORK/client.json')); print(r['bytes_sent'] + r['bytes_received'])")
    found=$(($(wc -l <"$WORK/out.csv") - 1))
    correct=false
    [[ $found == $((nc / 2)) ]] && correct=true
    # Peak resident memory of each process in MiB (GNU time's %M is in KiB).
    rss() { echo $(($(tail -1 "$WORK/$1.$2.rss") / 1024)); }
    mem="\"server_rss_mib\":[$(rss offline server),$(rss online server)],\"client_rss_mib\":[$(rss offline client),$(rss online client)]"
    echo "{\"system\":\"obliv\",\"protocol\":\"ub-psi fourq\",\"n_server\":$ns,\"n_client\":$nc,\"offline_s\":$off,\"online_s\":$on,\"online_bytes\":$bytes,\"correct\":$correct,$mem,\"cpu\":\"$CPU\",\"features\":\"$FEATURES\"}"
    if [[ -x $PY && -f $SF ]]; then
      "$PY" "$SF" --protocols ubpsi --sizes "$ns" --ub-client-n "$nc" 2>/dev/null \
        | python3 -c "
import json, sys
for line in sys.stdin:
    try: r = json.loads(line)
    except ValueError: continue
    if 'offline_s' not in r: continue
    print(json.dumps({'system': 'secretflow', 'protocol': 'ub_psi_execute fourq', 'n_server': $ns,
        'n_client': $nc, 'offline_s': r['offline_s'], 'online_s': r['online_s'],
        'online_bytes': r.get('on_bytes_sent'), 'correct': r.get('correct'),
        'cpu': '$CPU', 'features': '$FEATURES'}))"
    fi
  done
done
