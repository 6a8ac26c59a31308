#!/usr/bin/env bash
# Runs the reference systems of ../shared/anchors (SecretFlow PSI, HEU, python-phe) on the
# sizes of `cargo bench -p obliv-bench` and appends their JSON lines to the file the report
# reads (default: $CARGO_TARGET_DIR or <workspace>/target, file obliv-anchors.jsonl). Not
# needed for `cargo bench`. The first run installs a virtualenv (long; see anchors/README.md).
#
#   benches/anchors.sh                 # default sizes (those of the benches)
#   OBLIV_BENCH_SCALE=full benches/anchors.sh   # adds 2^20 and 1e7 per side
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
anchors=${OBLIV_ANCHORS_DIR:-$root/../shared/anchors}
target=${CARGO_TARGET_DIR:-$root/target}
out=${OBLIV_ANCHORS_OUT:-$target/obliv-anchors.jsonl}
mkdir -p "$(dirname "$out")"

py=$("$anchors/setup.sh")
# The sizes of the default benches: ECDH 2^14 per side, KKRT and RR22 2^16, unbalanced server
# 2^16 and client 2^10.
ecdh_sizes="2^14"
oprf_sizes="2^16"
if [[ ${OBLIV_BENCH_SCALE:-} == full ]]; then
  ecdh_sizes="2^14,2^20,1e7"
  oprf_sizes="2^16,2^20,1e7"
fi

echo "# SecretFlow PSI (LAN, loopback) -> $out" >&2
"$py" "$anchors/secretflow_psi.py" \
  --protocols ecdh:FOURQ,ecdh:25519,ecdh3pc:FOURQ,ecdh3pc:25519 --sizes "$ecdh_sizes" >>"$out"
"$py" "$anchors/secretflow_psi.py" --protocols kkrt,rr22,rr22_lowcomm --sizes "$oprf_sizes" >>"$out"
echo "# SecretFlow unbalanced PSI" >&2
"$py" "$anchors/secretflow_psi.py" --protocols ubpsi --sizes 2^16 --ub-client-n 1024 >>"$out"
echo "# SecretFlow PSI at 100 Mbps / 10 ms (needs network namespaces and tc; skipped if refused)" >&2
"$py" "$anchors/secretflow_psi.py" --protocols ecdh:FOURQ,ecdh:25519 \
  --sizes 2^14 --shape 10ms:100mbit >>"$out" || echo "# shaped link not available here" >&2
"$py" "$anchors/secretflow_psi.py" --protocols kkrt,rr22,rr22_lowcomm \
  --sizes 2^16 --shape 10ms:100mbit >>"$out" || echo "# shaped link not available here" >&2
echo "# HEU and python-phe (§2 pool of every core, §4 operations)" >&2
"$py" "$anchors/he_anchors.py" --bits 2048 3072 --pool "$(nproc)" >>"$out"
echo "wrote $out; now: cargo run -p obliv-bench --release --bin report" >&2
