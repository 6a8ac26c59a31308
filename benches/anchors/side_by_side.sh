#!/bin/bash
# The PSI side-by-side table of docs/benchmarks.md: obliv (release build of the CLI, `obliv psi
# demo`) then SecretFlow on the same sizes, one after the other, on this machine. Each
# measurement is printed and appended as one JSON line
#   {"system", "protocol", "curve", "n", "link", "wall_s", "bytes", "date", "correct", "note",
#    "cpu", "cpu_class", "features"[, "backend"]}
# to $OBLIV_SIDE_BY_SIDE (default docs/data/side_by_side.jsonl, committed), which
# `cargo run -p obliv-bench --release --bin report` renders per CPU class (for each class
# obliv's latest run against the reference system's fastest, the others in a list below).
#
# The CPU fields: "cpu" is the model name of /proc/cpuinfo (`uname -m` where it has none);
# "cpu_class" the SIMD class obliv's dispatch runs on: avx512ifma, else avx512f, else avx2,
# else x86-64 (aarch64 on that architecture), after taking away the features listed in
# $OBLIV_CPU_DISABLE (comma-separated, as obliv honours it at run time; avx512f or avx2 there
# also takes away every avx512* feature); "features" the flags among aes avx2 bmi2 adx avx512f
# avx512ifma vaes vpclmulqdq that remain, space-separated. The obliv records also get
# "backend": the rest of the `backends:` line `obliv psi demo` prints. OBLIV_CPU_DISABLE only
# changes obliv's paths: SecretFlow still runs on the whole CPU (its records carry the same
# class, so that the report compares them with obliv's runs of that session).
#
# Needs the anchors venv of shared/anchors/setup.sh (python in $OBLIV_ANCHORS_PY, default
# ~/.cache/obliv-anchors/bin/python) and shared/anchors/secretflow_psi.py (path in
# $OBLIV_SF_PSI). Without the venv only the obliv runs are recorded.
# obliv runs OBLIV_SIDE_REPS times per row (default 3) and records the median wall time, the
# runs listed in the note (a sub-second run's first-touch page faults vary by tens of percent
# on a shared virtual machine); SecretFlow runs once per row.
# Switches: OBLIV_SIDE_SKIP_SLOW=1 skips SecretFlow's SM2 and secp256k1 runs (over a minute
# each); OBLIV_SIDE_SKIP_1E6_ECDH=1 skips the ECDH-2PC rows at 1e6 per side (FourQ and
# Curve25519 for both systems: many minutes on a CPU without AVX-512 IFMA);
# OBLIV_SIDE_1E7=1 adds the 1e7 RR22 and KKRT rows. OBLIV_SIDE_ROWS=REGEX runs only the rows
# whose "PROTOCOL/CURVE/N/LINK" matches the bash regular expression (e.g. '/10000000/' with
# OBLIV_SIDE_1E7=1 for the 1e7 rows alone; '^kkrt/' for KKRT).
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
REPS=${OBLIV_SIDE_REPS:-3}
DATE=$(date -u +%Y-%m-%dT%H:%MZ)
mkdir -p "$(dirname "$OUT")"

# The CPU this session runs on, as obliv's dispatch sees it (see the header).
CPU=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -1)
[ -n "$CPU" ] || CPU=$(uname -m)
FLAGS=" $(sed -n 's/^flags[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -1) "
IFS=', ' read -r -a DISABLED <<<"${OBLIV_CPU_DISABLE:-}"
for d in ${DISABLED[@]+"${DISABLED[@]}"}; do
    [ -n "$d" ] || continue
    FLAGS=${FLAGS// $d / }
    # Without AVX-512F or AVX2 no AVX-512 path runs.
    if [ "$d" = avx512f ] || [ "$d" = avx2 ]; then
        FLAGS=$(tr ' ' '\n' <<<"$FLAGS" | grep -v '^avx512' | tr '\n' ' ')
        FLAGS=" $FLAGS "
    fi
done
has() { [[ "$FLAGS" == *" $1 "* ]]; }
FEATURES=""
for f in aes avx2 bmi2 adx avx512f avx512ifma vaes vpclmulqdq; do
    has "$f" && FEATURES="${FEATURES:+$FEATURES }$f"
done
case "$(uname -m)" in
    aarch64 | arm64) CPU_CLASS=aarch64 ;;
    *)
        if has avx512ifma; then CPU_CLASS=avx512ifma
        elif has avx512f; then CPU_CLASS=avx512f
        elif has avx2; then CPU_CLASS=avx2
        else CPU_CLASS=x86-64
        fi ;;
esac
echo "# CPU: $CPU; class $CPU_CLASS; features: $FEATURES${OBLIV_CPU_DISABLE:+ (OBLIV_CPU_DISABLE=$OBLIV_CPU_DISABLE)}" >&2

# json_str TEXT: TEXT as a JSON string (quotes, backslashes and control characters escaped).
json_str() {
    local s=$1
    s=${s//\\/\\\\}
    s=${s//\"/\\\"}
    s=${s//$'\t'/\\t}
    s=${s//$'\r'/\\r}
    s=${s//$'\n'/\\n}
    s=$(tr -d '\000-\037' <<<"$s")
    printf '"%s"' "$s"
}

# record SYSTEM PROTOCOL CURVE N LINK WALL_S BYTES CORRECT [BACKEND [RUNS]]
# (RUNS, e.g. "median of 3 runs: 0.61 0.63 0.84 s", is appended to the note)
record() {
    local note="$NOTE" backend=""
    [ -n "${10:-}" ] && note="${note:+$note; }${10}"
    [ -n "${9:-}" ] && backend=", \"backend\": $(json_str "$9")"
    printf '{"system": %s, "protocol": %s, "curve": %s, "n": %s, "link": %s, "wall_s": %s, "bytes": %s, "date": %s, "correct": %s, "note": %s, "cpu": %s, "cpu_class": %s, "features": %s%s}\n' \
        "$(json_str "$1")" "$(json_str "$2")" "$(json_str "$3")" "$4" "$(json_str "$5")" "$6" "$7" \
        "$(json_str "$DATE")" "$8" "$(json_str "$note")" "$(json_str "$CPU")" \
        "$(json_str "$CPU_CLASS")" "$(json_str "$FEATURES")" "$backend" | tee -a "$OUT"
}

# ours PROTOCOL CURVE N [LINK]: REPS `obliv psi demo` runs. The last line of each reads
# "intersection: X items (expected Y), wall time W s, total traffic T MB".
# wanted PROTOCOL CURVE N LINK: is this row selected by OBLIV_SIDE_ROWS (all rows without it)?
wanted() {
    [ -z "${OBLIV_SIDE_ROWS:-}" ] && return 0
    [[ "$1/$2/$3/$4" =~ $OBLIV_SIDE_ROWS ]]
}

ours() {
    local proto=$1 curve=$2 n=$3 link=${4:-lan} args=() cli
    wanted "$proto" "$curve" "$n" "$link" || return 0
    cli=${proto/_fast/}
    cli=${cli//_/-}
    cli=${cli/ecdh-2pc/ecdh}
    args=(--protocol "$cli" --size "$n")
    [ -n "$curve" ] && args+=(--curve "$curve")
    [ "$link" = wan100m10ms ] && args+=(--sim-bandwidth 100mbit --sim-latency 10ms)
    local out last backend got exp wall mb walls=() ok=true r
    for ((r = 0; r < REPS; r++)); do
        out=$("$B" psi demo "${args[@]}" 2>&1)
        last=$(tail -1 <<<"$out")
        backend=$(sed -n 's/^backends:[[:space:]]*//p' <<<"$out" | head -1)
        echo "# obliv ${args[*]}: $last${backend:+ (backends: $backend)}" >&2
        got=$(sed -n 's/^intersection: \([0-9]*\) items.*/\1/p' <<<"$last")
        exp=$(sed -n 's/.*(expected \([0-9]*\)).*/\1/p' <<<"$last")
        wall=$(sed -n 's/.*wall time \([0-9.]*\) s.*/\1/p' <<<"$last")
        mb=$(sed -n 's/.*total traffic \([0-9.]*\) MB.*/\1/p' <<<"$last")
        if [ -z "$wall" ]; then
            echo "# obliv run failed: $last" >&2
            return
        fi
        { [ -n "$got" ] && [ "$got" = "$exp" ]; } || ok=false
        walls+=("$wall")
    done
    # The median run (the upper middle one for an even count).
    local sorted median runs=""
    sorted=$(printf '%s\n' "${walls[@]}" | sort -g)
    median=$(sed -n "$(( ${#walls[@]} / 2 + 1 ))p" <<<"$sorted")
    [ "$REPS" -gt 1 ] && runs="median of $REPS runs: $(tr '\n' ' ' <<<"$sorted")s"
    record obliv "$proto" "$curve" "$n" "$link" "$median" "$(awk -v m="$mb" 'BEGIN{printf "%.0f", m*1e6}')" "$ok" "$backend" "$runs"
}

# sf TOKEN PROTOCOL CURVE N: one SecretFlow run (secretflow_psi.py prints one JSON line).
sf() {
    wanted "$2" "$3" "$4" lan || return 0
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
# The ECDH-2PC rows at 1e6 per side, FourQ and Curve25519 for both systems (many minutes
# without AVX-512 IFMA): OBLIV_SIDE_SKIP_1E6_ECDH=1 skips them.
if [ -z "${OBLIV_SIDE_SKIP_1E6_ECDH:-}" ]; then
    ours ecdh_2pc fourq 1000000; sf ecdh:FOURQ ecdh_2pc fourq 1000000
    sf ecdh:25519 ecdh_2pc 25519 1000000
    ours ecdh_2pc 25519 1000000
fi
# The 1e7 rows (SecretFlow: about 45 s for RR22 fast, minutes for KKRT): OBLIV_SIDE_1E7=1.
if [ -n "${OBLIV_SIDE_1E7:-}" ]; then
    ours rr22_fast "" 10000000; sf rr22 rr22_fast "" 10000000
    ours rr22_lowcomm "" 10000000; sf rr22_lowcomm rr22_lowcomm "" 10000000
    ours rr22_malicious "" 10000000
    ours kkrt "" 10000000; sf kkrt kkrt "" 10000000
fi
uptime >&2
echo "# appended to $OUT; now: cargo run -p obliv-bench --release --bin report" >&2
