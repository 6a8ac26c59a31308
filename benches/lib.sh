# Shared by the shell benches (benches/anchors, benches/links, benches/scale); sourced, not run.
# After `source benches/lib.sh` from the repository root:
#   $B          the release `obliv` binary (built here)
#   $CPU        this machine's CPU model; $FEATURES its SIMD features that obliv dispatches on
#   int X       X (e.g. 1e6) as an integer
#   now         the wall clock in seconds
#   parties     a fresh "127.0.0.1:P,127.0.0.1:P+1" for the two ranks
#   psi_pair D [ARGS...]
#               runs `obliv psi --rank r` for r = 0, 1 on D/psi_{r+1}.csv (key column `id`),
#               writing D/r{r}/out.csv, D/report{r}.json and D/log{r}.txt, each process under
#               `/usr/bin/time -v -o D/time{r}.txt` (read it with benches/time_v.py), with
#               ARGS added to both command lines; sets PAIR_T0/PAIR_T1 (start of both, end of
#               the slower); returns 1 (after printing the logs' tails) if either failed.
cargo build --release -q -p obliv-cli --bin obliv || exit 1
B=$(realpath "${CARGO_TARGET_DIR:-target}/release/obliv")
CPU=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')
FEATURES=$(grep -m1 -o -w 'aes\|avx2\|bmi2\|adx\|avx512f\|avx512ifma\|vaes\|vpclmulqdq' /proc/cpuinfo \
  | sort -u | tr '\n' ' ' | sed 's/ $//')
export B CPU FEATURES
int() { python3 -c "print(int(float('$1')))"; }
now() { date +%s.%N; }
parties() {
  local port=$((20000 + RANDOM % 20000))
  echo "127.0.0.1:$port,127.0.0.1:$((port + 1))"
}
psi_pair() {
  local d=$1
  shift
  local p r rc0 rc1 pid0 pid1
  p=$(parties)
  mkdir -p "$d/r0" "$d/r1"
  rm -f "$d"/r0/out.csv "$d"/r1/out.csv "$d"/report0.json "$d"/report1.json
  PAIR_T0=$(now)
  for r in 0 1; do
    /usr/bin/time -v -o "$d/time$r.txt" "$B" psi --rank "$r" --parties "$p" \
      --input "$d/psi_$((r + 1)).csv" --keys id --output "$d/r$r/out.csv" \
      --report "$d/report$r.json" "$@" >/dev/null 2>"$d/log$r.txt" &
    eval "pid$r=$!"
  done
  wait "$pid0"
  rc0=$?
  wait "$pid1"
  rc1=$?
  PAIR_T1=$(now)
  if [[ $rc0 != 0 || $rc1 != 0 ]]; then
    echo "obliv psi $* failed (rank 0: $rc0, rank 1: $rc1):" >&2
    tail -n 5 "$d/log0.txt" "$d/log1.txt" >&2
    return 1
  fi
}
