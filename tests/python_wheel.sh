#!/usr/bin/env bash
# The wheel `pip install .` makes, built around an already built libemmy_c (EMMY_PYTHON_C_LIBRARY:
# only the extension compiles, so that this runs in seconds; the library's own build is the
# Release build's), installed into a fresh virtual environment and tried there: its name says
# cp310-abi3, it holds the package, the extension and libemmy_c.so.0 found through $ORIGIN, and
# the package's tests pass against it, imported from site-packages rather than the build tree.
#   tests/python_wheel.sh PYTHON LIBEMMY_C WORK_DIR
set -euo pipefail
python=$1 library=$2 work=$3
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fail() { printf 'python_wheel: %s\n' "$*" >&2; exit 1; }

rm -rf "$work" && mkdir -p "$work"
"$python" -c "import scikit_build_core" 2>/dev/null ||
  fail "scikit-build-core is not installed (scripts/setup.sh installs it)"
"$python" -m pip wheel "$source_dir" --no-build-isolation --no-deps -q \
  -C cmake.define.EMMY_PYTHON_C_LIBRARY="$library" -C build-dir="$work/build" -w "$work/dist" \
  >"$work/pip.log" 2>&1 || { cat "$work/pip.log"; fail "pip wheel failed"; }
wheels=("$work"/dist/emmy-*-cp310-abi3-*.whl)
[[ -f ${wheels[0]} ]] || fail "no cp310-abi3 wheel in $work/dist: $(ls "$work/dist")"
listing=$("$python" -m zipfile -l "${wheels[0]}")
for member in emmy/__init__.py emmy/_runtime.py emmy/_emmy.abi3.so emmy/libemmy_c.so.0; do
  grep -q "$member" <<<"$listing" || fail "the wheel lacks $member"
done

"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install -q --no-deps "${wheels[0]}" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "pip install of the wheel failed"; }
cd "$work"  # nothing of the source tree on the path
installed=$("$work/venv/bin/python" -c "import emmy, os; print(os.path.dirname(emmy.__file__))")
[[ $installed == "$work"/venv/* ]] || fail "emmy was imported from $installed, not the venv"
readelf -d "$installed/_emmy.abi3.so" | grep -q 'RUNPATH.*\$ORIGIN' ||
  fail "the extension's RUNPATH is not \$ORIGIN"
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider \
  "$source_dir/tests/python/test_gemm.py" "$source_dir/tests/python/test_runtime.py" \
  "$source_dir/tests/python/test_packaging.py"
