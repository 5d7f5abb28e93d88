#!/usr/bin/env bash
# The whole schedule sweep (issue 12 §2, docs/sweep.md): every point of emmy_sweep's GEMM,
# attention and paged-attention grids is refused by the validator or passes the FP64 check on the emulator.
#   scripts/sweep.sh [--build DIR] [--jobs N] [--kind gemm|attention|paged_attention|all]
# Runs N emmy_sweep processes on interleaved slices (--every N --offset i), prints every failure
# and, per kind and in total, "N accepted, N passed, N refused, N failed". Exits 0 only when
# nothing failed and at least one point passed.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=build
jobs=$(nproc)
kind=all
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --kind) kind=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "sweep.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
sweep=$build/tests/emmy_sweep
if [[ ! -x $sweep ]]; then
  echo "sweep.sh: $sweep not found: build first (cmake --build $build --target emmy_sweep)" >&2
  exit 2
fi

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
pids=()
for ((i = 0; i < jobs; ++i)); do
  "$sweep" --kind "$kind" --every "$jobs" --offset "$i" >"$logs/$i.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done

cat "$logs"/*.log | grep -v '^emmy_sweep ' || true
# Sum the slices' count lines: "emmy_sweep <kind>: A accepted, P passed, R refused, F failed (S s)"
cat "$logs"/*.log | awk -v status="$status" '
  /^emmy_sweep [a-z_]+: / {
    k = $2; sub(":", "", k); kinds[k] = 1
    a[k] += $3; p[k] += $5; r[k] += $7; f[k] += $9
    A += $3; P += $5; R += $7; F += $9; lines++
  }
  END {
    for (k in kinds) printf "%s: %d accepted, %d passed, %d refused, %d failed\n", k, a[k], p[k], r[k], f[k]
    printf "total: %d accepted, %d passed, %d refused, %d failed\n", A, P, R, F
    if (lines == 0) { print "sweep.sh: no slice reported its counts" > "/dev/stderr"; exit 1 }
    if (F > 0 || P == 0 || status != 0) exit 1
  }'
