#!/bin/bash
# Checks the CLI's simulated link against a real one: the same `obliv psi` job once through
# `--sim-bandwidth/--sim-latency` over loopback and once over real TCP between two network
# namespaces joined by a veth pair whose both ends are shaped by `tc netem` (rate and one-way
# delay, a queue long enough for the bandwidth-delay product). Prints one JSON line per link:
#   {"protocol", "n", "link", "workers", "sim_wall_s", "netem_wall_s", "sim_over_netem",
#    "bytes", "correct"}
# Needs root (ip netns, tc) and the iproute2 tools. A kernel without the netem qdisc (some
# sandboxes) can still check the bandwidth half: a link with zero latency ("100mbit/0ms") is
# shaped by a token bucket (`tc tbf`) instead, on each veth end; a link with latency then fails.
# Usage: sudo bash benches/links/netem_check.sh [PROTOCOL [SIZE [LINKS [WORKERS]]]]
#   defaults: rr22 1e6 "100mbit/10ms 1gbit/20ms" 1
set -u
cd "$(dirname "$0")/../.."
source benches/lib.sh
P=${1:-rr22}
N=$(int "${2:-1e6}")
LINKS=${3:-100mbit/10ms 1gbit/20ms}
W=${4:-1}
WORK=$(mktemp -d)
NS0=obliv-ns0-$$ NS1=obliv-ns1-$$
cleanup() {
  ip netns del "$NS0" 2>/dev/null
  ip netns del "$NS1" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
"$B" gen-data --size "$N" --out-dir "$WORK" >/dev/null || exit 1

# run NS0 NS1 PARTIES [ARGS...]: both ranks (in the given namespaces, or none for ""), wall
# seconds on stdout.
run() {
  local ns0=$1 ns1=$2 parties=$3
  shift 3
  local t0 t1 r pids=()
  rm -f "$WORK"/out*.csv "$WORK"/report*.json
  t0=$(now)
  for r in 0 1; do
    local ns
    [[ $r == 0 ]] && ns=$ns0 || ns=$ns1
    local pre=()
    [[ -n $ns ]] && pre=(ip netns exec "$ns")
    "${pre[@]}" "$B" psi --protocol "$P" --rank "$r" --parties "$parties" \
      --input "$WORK/psi_$((r + 1)).csv" --keys id --output "$WORK/out$r.csv" \
      --report "$WORK/report$r.json" --workers "$W" "$@" >/dev/null 2>"$WORK/log$r.txt" &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do
    wait "$pid" || {
      tail -n 3 "$WORK"/log*.txt >&2
      return 1
    }
  done
  t1=$(now)
  python3 -c "print(round($t1 - $t0, 3))"
}

ip netns add "$NS0" && ip netns add "$NS1" || exit 1
ip link add veth0-$$ netns "$NS0" type veth peer name veth1-$$ netns "$NS1" || exit 1
ip -n "$NS0" addr add 10.77.0.1/24 dev veth0-$$
ip -n "$NS1" addr add 10.77.0.2/24 dev veth1-$$
for ns in "$NS0" "$NS1"; do
  ip -n "$ns" link set lo up
done
ip -n "$NS0" link set veth0-$$ up
ip -n "$NS1" link set veth1-$$ up
# Socket buffers large enough for a 1 Gbit/s x 40 ms bandwidth-delay product.
for ns in "$NS0" "$NS1"; do
  ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_rmem="4096 131072 33554432" \
    net.ipv4.tcp_wmem="4096 65536 33554432" 2>/dev/null
done

for link in $LINKS; do
  bw=${link%/*} lat=${link#*/}
  # Queue: the bandwidth-delay product in 1500-byte packets, times four.
  limit=$(python3 -c "
import re
u = {'kbit': 1e3, 'mbit': 1e6, 'gbit': 1e9}
t = {'us': 1e-6, 'ms': 1e-3, 's': 1.0}
b = re.fullmatch(r'([\d.]+)([a-z]+)', '$bw'); l = re.fullmatch(r'([\d.]+)([a-z]+)', '$lat')
bdp = float(b.group(1)) * u[b.group(2)] * 2 * float(l.group(1)) * t[l.group(2)] / 8
print(max(1000, int(4 * bdp / 1500)))")
  # A token bucket for the rate-only check: a burst of 10 ms of traffic at the rate.
  burst=$(python3 -c "
import re
u = {'kbit': 1e3, 'mbit': 1e6, 'gbit': 1e9}
b = re.fullmatch(r'([\d.]+)([a-z]+)', '$bw')
print(max(16384, int(float(b.group(1)) * u[b.group(2)] / 8 / 100)))")
  for end in "$NS0 veth0-$$" "$NS1 veth1-$$"; do
    read -r ns dev <<<"$end"
    if ! tc -n "$ns" qdisc replace dev "$dev" root netem rate "$bw" delay "$lat" \
      limit "$limit" 2>/dev/null; then
      if [[ $(python3 -c "import re; print(float(re.match(r'[\d.]+', '$lat').group()))") != 0.0 ]]; then
        echo "this kernel has no netem qdisc: only links of latency 0 can be checked (tbf)" >&2
        exit 1
      fi
      tc -n "$ns" qdisc replace dev "$dev" root tbf rate "$bw" burst "$burst" latency 200ms || exit 1
    fi
  done
  port=$((20000 + RANDOM % 20000))
  # The namespaces are this machine's own test hosts: plaintext, as on loopback.
  real=$(run "$NS0" "$NS1" "10.77.0.1:$port,10.77.0.2:$((port + 1))" --insecure-plaintext) || exit 1
  found=$(($(wc -l <"$WORK/out0.csv") - 1))
  sim=$(run "" "" "$(parties)" --sim-bandwidth "$bw" --sim-latency "$lat") || exit 1
  bytes=$(python3 -c "import json; r=json.load(open('$WORK/report0.json')); print(r['bytes_sent'] + r['bytes_received'])")
  python3 -c "
import json
print(json.dumps({'protocol': '$P', 'n': $N, 'link': '$link', 'workers': $W, 'sim_wall_s': $sim,
    'netem_wall_s': $real, 'sim_over_netem': round($sim / $real, 3), 'bytes': $bytes,
    'correct': $found == $N // 2}))"
done
