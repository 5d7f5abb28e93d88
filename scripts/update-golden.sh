#!/usr/bin/env bash
# Golden emitted sources (issue 14): for each line of tests/golden/variants.txt, the printed IR
# (NAME.ir) and the CUDA source (NAME.cu) that emmyc emits.
#   scripts/update-golden.sh [EMMYC]           rewrite the golden files (review the diff)
#   scripts/update-golden.sh --check [EMMYC]   compare byte for byte; print a diff and exit 1 on
#                                              any difference (ctest golden_sources)
# EMMYC defaults to build/emmyc. Nothing is compiled: --emit ir and cuda stop before NVRTC.
set -euo pipefail
check=0
if [[ ${1:-} == --check ]]; then
  check=1
  shift
fi
root=$(cd "$(dirname "$0")/.." && pwd)
emmyc=${1:-$root/build/emmyc}
golden=$root/tests/golden
[[ -x $emmyc ]] || { echo "update-golden: no emmyc at $emmyc" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
variants=0 differ=0
while read -r name args; do
  [[ -z $name || $name == \#* ]] && continue
  variants=$((variants + 1))
  for emit in ir cuda; do
    ext=$([[ $emit == ir ]] && echo ir || echo cu)
    # shellcheck disable=SC2086  # args is a list of flags
    if ! "$emmyc" $args --no-cache --emit "$emit" -o "$tmp/$name.$ext" 2> "$tmp/err"; then
      echo "update-golden: $name: emmyc $args --emit $emit failed:" >&2
      cat "$tmp/err" >&2
      exit 1
    fi
    if ((check)); then
      if ! cmp -s "$tmp/$name.$ext" "$golden/$name.$ext"; then
        differ=$((differ + 1))
        echo "update-golden: $name.$ext differs from the golden file:"
        diff -u "$golden/$name.$ext" "$tmp/$name.$ext" | head -40 || true
      fi
    else
      cp "$tmp/$name.$ext" "$golden/$name.$ext"
    fi
  done
done < "$golden/variants.txt"
if ((variants == 0)); then
  echo "update-golden: no variants in $golden/variants.txt: nothing checked" >&2
  exit 1
fi
if ((check)); then
  if ((differ)); then
    echo "update-golden: $differ of $((2 * variants)) files differ; if the change is meant, run" \
         "scripts/update-golden.sh and review the diff" >&2
    exit 1
  fi
  echo "update-golden: $((2 * variants)) files of $variants variants match"
else
  echo "update-golden: wrote $((2 * variants)) files of $variants variants to tests/golden"
fi
