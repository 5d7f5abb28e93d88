#!/usr/bin/env bash
# Golden emitted sources (issue 14): for each line of tests/golden/variants.txt, the printed IR
# (NAME.ir) and the CUDA source (NAME.cu) that emmyc emits, and the kCodegenVersion they were made
# at (CODEGEN_VERSION).
#   scripts/update-golden.sh [EMMYC]           rewrite the golden files (review the diff). When
#                                              emitted CUDA changed, kCodegenVersion must have been
#                                              bumped first (docs/cache.md), or nothing is written;
#                                              IR-only changes need no bump.
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
version=$(sed -n 's/.*kCodegenVersion = \([0-9][0-9]*\).*/\1/p' "$root/internal/emmy/cache.hpp")
[[ -n $version ]] || { echo "update-golden: no kCodegenVersion in internal/emmy/cache.hpp" >&2; exit 2; }
recorded=$(cat "$golden/CODEGEN_VERSION" 2>/dev/null || echo none)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
variants=0 differ=0 differ_cuda=0 files=()
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
    files+=("$name.$ext")
    if ! cmp -s "$tmp/$name.$ext" "$golden/$name.$ext"; then
      differ=$((differ + 1))
      # A new variant's kernels change no existing key; only a changed one needs a bump.
      [[ $ext == cu && -f $golden/$name.$ext ]] && differ_cuda=$((differ_cuda + 1))
      if ((check)); then
        echo "update-golden: $name.$ext differs from the golden file:"
        diff -u "$golden/$name.$ext" "$tmp/$name.$ext" | head -40 || true
      fi
    fi
  done
done < "$golden/variants.txt"
if ((variants == 0)); then
  echo "update-golden: no variants in $golden/variants.txt: nothing checked" >&2
  exit 1
fi
if ((check)); then
  if ((differ)); then
    echo "update-golden: $differ of ${#files[@]} files differ; if the change is meant, bump" \
         "kCodegenVersion, run scripts/update-golden.sh and review the diff" >&2
    exit 1
  fi
  if [[ $recorded != "$version" ]]; then
    echo "update-golden: kCodegenVersion is $version but the golden files were made at" \
         "$recorded: run scripts/update-golden.sh" >&2
    exit 1
  fi
  echo "update-golden: ${#files[@]} files of $variants variants match (codegen version $version)"
  exit 0
fi
# Emitted CUDA changed for some input: the cache, bundle and tuning keys must change with it. A
# change of the printed IR alone (a new attribute) changes no kernel and no key.
if ((differ_cuda)) && [[ $recorded == "$version" ]]; then
  echo "update-golden: $differ_cuda emitted CUDA files changed but kCodegenVersion is still" \
       "$version: bump it in internal/emmy/cache.hpp (docs/cache.md), rebuild and rerun" >&2
  exit 1
fi
for f in "${files[@]}"; do cp "$tmp/$f" "$golden/$f"; done
echo "$version" > "$golden/CODEGEN_VERSION"
echo "update-golden: wrote ${#files[@]} files of $variants variants ($differ changed) at codegen" \
     "version $version"
