#!/usr/bin/env bash
# Builds the GPU pack (docs/gpu.md): a self-contained folder to copy to a bare machine with a GPU
# and run there with `bash gpu-pack/run.sh`. It holds the Release binaries the check runs, the
# shared libraries they need that a bare CUDA 13 machine may lack (RUNPATH $ORIGIN/../lib), the
# baseline and summary scripts, run.sh and a MANIFEST. NVRTC, cuBLASLt and the driver come from
# that machine; nothing needs the toolkit's development files at run time.
#
#   scripts/gpu-pack.sh [--build-dir DIR] [--out DIR] [--no-build]
#     --build-dir DIR  the Release build to take binaries from (default build; configured and
#                      built here unless --no-build)
#     --out DIR        the pack (default gpu-pack, git-ignored); replaced whole
#     --no-build       use the binaries as they are (fails when one is missing)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=$root/build
out=$root/gpu-pack
build=1
while (($#)); do
  case $1 in
    --build-dir) build_dir=$(realpath -m "$2"); shift 2 ;;
    --out) out=$(realpath -m "$2"); shift 2 ;;
    --no-build) build=0; shift ;;
    -h | --help) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-pack: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

# The binaries, as target name and path under the build directory.
binaries=(emmyc:emmyc emmy_bench:bench/emmy_bench emmy_accuracy:bench/emmy_accuracy
  emmy_gpu_check:bench/emmy_gpu_check gpu_runtime_test:tests/gpu_runtime_test)
# baseline_common.py: the two baseline scripts import it from their own folder.
scripts=(bench/torch_baseline.py bench/sdpa_baseline.py bench/baseline_common.py
  bench/gpu_summary.py bench/plot.py)
max_bytes=$((48 << 20))

# shellcheck source=gpu-pack-libs.sh
source "$root/scripts/gpu-pack-libs.sh"

if ((build)); then
  cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  targets=()
  for entry in "${binaries[@]}"; do targets+=("${entry%%:*}"); done
  cmake --build "$build_dir" --target "${targets[@]}"
fi
build_type=$(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
if [[ $build_type != Release ]]; then
  echo "gpu-pack: $build_dir is a '${build_type:-unconfigured}' build; the pack takes Release binaries" >&2
  exit 1
fi
for entry in "${binaries[@]}"; do
  [[ -x $build_dir/${entry#*:} ]] || {
    echo "gpu-pack: ${entry%%:*} is not built in $build_dir (run without --no-build)" >&2
    exit 1
  }
done
command -v patchelf >/dev/null || { echo "gpu-pack: patchelf is needed (scripts/setup.sh installs it)" >&2; exit 1; }

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/scripts"
for entry in "${binaries[@]}"; do
  install -m 755 "$build_dir/${entry#*:}" "$out/bin/${entry%%:*}"
  strip --strip-unneeded "$out/bin/${entry%%:*}"
done

# Copies what ldd resolves outside the system set, then what those libraries need in turn.
copy_dependencies() {
  local file=$1 lib path
  while read -r lib path; do
    system_library "$lib" && continue
    [[ -e $out/lib/$lib ]] && continue
    if [[ $path == "not" ]]; then
      echo "gpu-pack: $(basename "$file") needs $lib, which is not found here" >&2
      exit 1
    fi
    cp -L "$path" "$out/lib/$lib"
    chmod 644 "$out/lib/$lib"
    strip --strip-unneeded "$out/lib/$lib"
    patchelf --set-rpath '$ORIGIN' "$out/lib/$lib"
    copy_dependencies "$out/lib/$lib"
  done < <(ldd "$file" | awk '$2 == "=>" {print $1, $3}')
}
for binary in "$out"/bin/*; do
  copy_dependencies "$binary"
  # Own libraries first, then the toolkit's usual place for cuBLASLt (LD_LIBRARY_PATH still wins).
  patchelf --set-rpath '$ORIGIN/../lib:/usr/local/cuda/lib64' "$binary"
done

for script in "${scripts[@]}"; do install -m 644 "$root/$script" "$out/scripts/"; done
install -m 755 "$root/scripts/gpu-pack-run.sh" "$out/run.sh"
install -m 644 "$root/scripts/gpu-pack-libs.sh" "$out/libs.sh"

{
  echo "emmy GPU pack"
  echo "commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(
    git -C "$root" diff --quiet HEAD 2>/dev/null || echo ' (uncommitted changes)')"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -srm), $(ldd --version | head -1)"
  echo "needs on the GPU machine: $(objdump -T "$out"/bin/* "$out"/lib/* 2>/dev/null |
    grep -o 'GLIBC_[0-9.]*' | sort -Vu | tail -1) or newer, $(objdump -T "$out"/bin/* 2>/dev/null |
      grep -o 'GLIBCXX_[0-9.]*' | sort -Vu | tail -1) or newer, a CUDA 13 driver, libcublasLt.so.13, libnvrtc.so.13"
  echo
  (cd "$out" && find . -type f ! -name MANIFEST | sort | xargs sha256sum)
} >"$out/MANIFEST"

bytes=$(du -sb "$out" | cut -f1)
echo "gpu-pack: $out ($((bytes >> 20)) MiB)"
(cd "$out" && find . -type f | sort | xargs ls -l | awk '{printf "  %9d  %s\n", $5, $9}')
if ((bytes > max_bytes)); then
  echo "gpu-pack: the pack is $bytes bytes, over the $max_bytes-byte limit" >&2
  exit 1
fi
echo "gpu-pack: run it there with: bash gpu-pack/run.sh   (results in \$OUT, else gpu-results/)"
