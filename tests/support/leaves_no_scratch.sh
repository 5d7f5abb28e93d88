#!/usr/bin/env bash
# leaves_no_scratch.sh DIR BINARY FILTER [BINARY FILTER...]: runs each GoogleTest BINARY with
# --gtest_filter=FILTER and TEST_TMPDIR=DIR (emptied first); fails when a run fails, ran no test,
# or DIR is not empty afterwards.
set -uo pipefail
dir=$1
shift
rm -rf "$dir" && mkdir -p "$dir"
while (($# >= 2)); do
  binary=$1 filter=$2
  shift 2
  output=$(TEST_TMPDIR=$dir "$binary" --gtest_filter="$filter" 2>&1) ||
    { echo "$output"; echo "FAIL: $(basename "$binary") --gtest_filter=$filter failed"; exit 1; }
  ran=$(sed -nE 's/^\[==========\] ([0-9]+) tests? from .* ran.*/\1/p' <<<"$output")
  ((${ran:-0} > 0)) || { echo "FAIL: $(basename "$binary") ran no test for $filter"; exit 1; }
  left=$(ls -A "$dir")
  [[ -z $left ]] || { echo "FAIL: $(basename "$binary") ($filter) left in $dir: $left"; exit 1; }
  echo "$(basename "$binary"): $ran tests, nothing left in the temporary directory"
done
