#!/bin/bash
# The PSI side-by-side table of docs/benchmarks.md: obliv (release build) then SecretFlow on the
# same sizes, one after the other, on this machine. Needs the anchors venv of
# shared/anchors/setup.sh (python in $OBLIV_ANCHORS_PY, default ~/.cache/obliv-anchors/bin/python)
# and shared/anchors/secretflow_psi.py (path in $OBLIV_SF_PSI).
# Usage: bash benches/anchors/side_by_side.sh   (run on a quiet machine; ratios are what count)
set -u
cd "$(dirname "$0")/../.."
cargo build --release -q -p obliv-cli --bin obliv
B=${CARGO_TARGET_DIR:-target}/release/obliv
PY=${OBLIV_ANCHORS_PY:-$HOME/.cache/obliv-anchors/bin/python}
SF=${OBLIV_SF_PSI:-../shared/anchors/secretflow_psi.py}
ours() { echo "obliv $*"; "$B" psi demo "$@" 2>&1 | tail -1; }
sf() {
    echo "SecretFlow $1 $2"
    "$PY" "$SF" --protocols "$1" --sizes "$2" 2>&1 |
        grep -o '"wall_s": [0-9.]*\|"bytes_sent": [0-9]*\|"correct": [a-z]*' | paste - - -
}
uptime
ours --protocol kkrt --size 1000000; sf kkrt 1e6
ours --protocol rr22 --size 1000000; sf rr22 1e6
ours --protocol rr22-lowcomm --size 1000000; sf rr22_lowcomm 1e6
ours --protocol rr22-malicious --size 1000000
ours --protocol ecdh --curve fourq --size 65536; sf ecdh:FOURQ 65536
ours --protocol ecdh --curve 25519 --size 65536; sf ecdh:25519 65536
ours --protocol ecdh-3pc --curve fourq --size 65536; sf ecdh3pc:FOURQ 65536
ours --protocol ecdh-3pc --curve 25519 --size 65536; sf ecdh3pc:25519 65536
ours --protocol ecdh --curve secp256k1 --size 65536
ours --protocol ecdh --curve sm2 --size 65536
ours --protocol ecdh --curve fourq --size 1000000; sf ecdh:25519 1e6
ours --protocol ecdh --curve 25519 --size 1000000
uptime
