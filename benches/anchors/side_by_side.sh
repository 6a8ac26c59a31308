#!/bin/bash
# The PSI side-by-side table of docs/benchmarks.md: obliv (release build of the CLI, `obliv psi
# demo`) then SecretFlow on the same sizes, one after the other, on this machine. Each
# measurement is printed and appended as one JSON line
#   {"system", "protocol", "curve", "n", "link", "wall_s", "bytes", "date", "correct", "note"}
# to $OBLIV_SIDE_BY_SIDE (default docs/data/side_by_side.jsonl, committed), which
# `cargo run -p obliv-bench --release --bin report` renders (fastest run of each side, the
# others in brackets).
#
# Needs the anchors venv of shared/anchors/setup.sh (python in $OBLIV_ANCHORS_PY, default
# ~/.cache/obliv-anchors/bin/python) and shared/anchors/secretflow_psi.py (path in
# $OBLIV_SF_PSI). Without the venv only the obliv runs are recorded.
# Usage: bash benches/anchors/side_by_side.sh [NOTE]   (run on a quiet machine; NOTE, e.g.
# "machine loaded", goes into every record)
set -u
cd "$(dirname "$0")/../.."
cargo build --release -q -p obliv-cli --bin obliv || exit 1
B=${CARGO_TARGET_DIR:-target}/release/obliv
PY=${OBLIV_ANCHORS_PY:-$HOME/.cache/obliv-anchors/bin/python}
SF=${OBLIV_SF_PSI:-../shared/anchors/secretflow_psi.py}
OUT=${OBLIV_SIDE_BY_SIDE:-docs/data/side_by_side.jsonl}
NOTE=${1:-}
DATE=$(date -u +%Y-%m-%dT%H:%MZ)
LOAD=$(cut -d' ' -f1 /proc/loadavg)
mkdir -p "$(dirname "$OUT")"

# record SYSTEM PROTOCOL CURVE N LINK WALL_S BYTES CORRECT
record() {
    local note="load average $LOAD at the start${NOTE:+; $NOTE}"
    printf '{"system": "%s", "protocol": "%s", "curve": "%s", "n": %s, "link": "%s", "wall_s": %s, "bytes": %s, "date": "%s", "correct": %s, "note": "%s"}\n' \
        "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$DATE" "$8" "$note" | tee -a "$OUT"
}

# ours PROTOCOL CURVE N [LINK]: one `obliv psi demo` run. Its last line reads
# "intersection: X items (expected Y), wall time W s, total traffic T MB".
ours() {
    local proto=$1 curve=$2 n=$3 link=${4:-lan} args=() cli
    cli=${proto/_fast/}
    cli=${cli//_/-}
    cli=${cli/ecdh-2pc/ecdh}
    args=(--protocol "$cli" --size "$n")
    [ -n "$curve" ] && args+=(--curve "$curve")
    [ "$link" = wan100m10ms ] && args+=(--sim-bandwidth 100mbit --sim-latency 10ms)
    local last
    last=$("$B" psi demo "${args[@]}" 2>&1 | tail -1)
    echo "# obliv ${args[*]}: $last" >&2
    local got exp wall mb
    got=$(sed -n 's/^intersection: \([0-9]*\) items.*/\1/p' <<<"$last")
    exp=$(sed -n 's/.*(expected \([0-9]*\)).*/\1/p' <<<"$last")
    wall=$(sed -n 's/.*wall time \([0-9.]*\) s.*/\1/p' <<<"$last")
    mb=$(sed -n 's/.*total traffic \([0-9.]*\) MB.*/\1/p' <<<"$last")
    if [ -z "$wall" ]; then
        echo "# obliv run failed: $last" >&2
        return
    fi
    local ok=false
    [ -n "$got" ] && [ "$got" = "$exp" ] && ok=true
    record obliv "$proto" "$curve" "$n" "$link" "$wall" "$(awk -v m="$mb" 'BEGIN{printf "%.0f", m*1e6}')" "$ok"
}

# sf TOKEN PROTOCOL CURVE N: one SecretFlow run (secretflow_psi.py prints one JSON line).
sf() {
    if [ ! -x "$PY" ]; then
        echo "# no anchors venv at $PY: SecretFlow skipped" >&2
        return
    fi
    local line
    line=$("$PY" "$SF" --protocols "$1" --sizes "$4" 2>/dev/null | tail -1)
    echo "# SecretFlow $1 $4: $line" >&2
    "$PY" -c '
import json, sys
v = json.loads(sys.argv[1])
if v.get("wall_s") is None:
    sys.exit("# SecretFlow run failed")
print(v["wall_s"], v.get("bytes_sent") or "null", "true" if v.get("correct") else "false")
' "$line" | {
        read -r wall bytes ok || return
        record secretflow "$2" "$3" "$4" lan "$wall" "$bytes" "$ok"
    }
}

uptime >&2
ours kkrt "" 1000000; sf kkrt kkrt "" 1000000
ours rr22_fast "" 1000000; sf rr22 rr22_fast "" 1000000
ours rr22_lowcomm "" 1000000; sf rr22_lowcomm rr22_lowcomm "" 1000000
ours rr22_malicious "" 1000000
ours ecdh_2pc fourq 65536; sf ecdh:FOURQ ecdh_2pc fourq 65536
ours ecdh_2pc 25519 65536; sf ecdh:25519 ecdh_2pc 25519 65536
ours ecdh_3pc fourq 65536; sf ecdh3pc:FOURQ ecdh_3pc fourq 65536
ours ecdh_3pc 25519 65536; sf ecdh3pc:25519 ecdh_3pc 25519 65536
ours ecdh_2pc secp256k1 65536
ours ecdh_2pc sm2 65536
# SecretFlow's SM2 and secp256k1 take over a minute each at 2^16; OBLIV_SIDE_SKIP_SLOW=1 skips them.
if [ -z "${OBLIV_SIDE_SKIP_SLOW:-}" ]; then
    sf ecdh:SECP256K1 ecdh_2pc secp256k1 65536
    sf ecdh:SM2 ecdh_2pc sm2 65536
fi
ours ecdh_2pc fourq 65536 wan100m10ms
ours ecdh_2pc fourq 1000000; sf ecdh:25519 ecdh_2pc 25519 1000000
ours ecdh_2pc 25519 1000000
# The 1e7 rows of the RR22 issue (SecretFlow: about 45 s for RR22 fast): OBLIV_SIDE_1E7=1.
if [ -n "${OBLIV_SIDE_1E7:-}" ]; then
    ours rr22_fast "" 10000000; sf rr22 rr22_fast "" 10000000
    ours rr22_lowcomm "" 10000000; sf rr22_lowcomm rr22_lowcomm "" 10000000
    ours rr22_malicious "" 10000000
    ours kkrt "" 10000000
fi
uptime >&2
echo "# appended to $OUT; now: cargo run -p obliv-bench --release --bin report" >&2
