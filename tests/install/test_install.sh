#!/usr/bin/env bash
# `cmake --install` of a built tree into a fresh prefix, then the README's C example built out of
# tree against it three ways — find_package(kiln) shared and static, pkg-config — and run on an engine that
# the installed kiln compiled. Without a GPU the example must get as far as loading the engine (it
# then stops at kiln_context_create); with one it must run.
#   tests/install/test_install.sh BUILD_DIR SOURCE_DIR
#   tests/install/test_install.sh --prefix=P SOURCE_DIR   (an installed tree, e.g. carried to a GPU host)
set -eu
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if [[ $1 == --prefix=* ]]; then
  prefix=$(cd "${1#--prefix=}" && pwd)
else
  prefix=$tmp/prefix
  cmake --install "$1" --prefix "$prefix" > "$tmp/install.log"
fi
for f in bin/kiln bin/kiln-opt include/kiln/kiln.h lib/libkiln_runtime.a lib/libkiln_runtime.so \
         lib/libkiln_runtime.so.0 lib/cmake/kiln/kilnConfig.cmake lib/cmake/kiln/kilnConfigVersion.cmake \
         lib/pkgconfig/kiln.pc; do
  [ -e "$prefix/$f" ] || { echo "FAIL: $f not installed"; exit 1; }
done
soname=$(objdump -p "$prefix/lib/libkiln_runtime.so" | awk '/SONAME/ {print $2}')
[ "$soname" = libkiln_runtime.so.0 ] || { echo "FAIL: soname '$soname'"; exit 1; }
echo "installed: $(cd "$prefix" && find . -type f | sort | tr '\n' ' ')"

"$prefix/bin/kiln" compile "$src/models/tiny/mlp.onnxtxt" -o "$tmp/mlp.kiln" > /dev/null

# Run the example: 0 with a GPU; without one it must have loaded the engine first.
check_run() {  # NAME BINARY
  local out rc=0
  out=$("$2" "$tmp/mlp.kiln" 2>&1) || rc=$?
  if [ $rc -eq 0 ] && grep -q "^y: " <<< "$out"; then
    echo "$1: ran ($out)"
  elif grep -q "kiln_context_create(engine, &ctx) failed" <<< "$out"; then
    echo "$1: loaded the engine; no GPU to run it ($(tail -1 <<< "$out"))"
  else
    echo "FAIL: $1: $out"
    exit 1
  fi
}

cuda=${CUDAToolkit_ROOT:-/usr/local/cuda}
# find_package(kiln) with the shared library (linked from the prefix) and with the static archive.
for target in runtime runtime_static; do
  dir=$tmp/consumer-$target
  cmake -S "$src/tests/install/consumer" -B "$dir" -DCMAKE_PREFIX_PATH="$prefix" -DKILN_TARGET=kiln::$target \
    -DCUDAToolkit_ROOT="$cuda" -DEXAMPLE_SOURCE="$src/tests/runtime/example.c" > "$dir.log"
  cmake --build "$dir" > "$dir-build.log"
  if [ $target = runtime ]; then
    ldd "$dir/example" | grep -q "libkiln_runtime.so.0 => $prefix/lib/" || { echo "FAIL: not linked to the installed .so"; exit 1; }
  elif ldd "$dir/example" | grep -q libkiln_runtime; then
    echo "FAIL: the static build links the .so"; exit 1
  fi
  check_run "find_package, kiln::$target" "$dir/example"
done

cc "$src/tests/runtime/example.c" $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs kiln) \
  -I"$cuda/include" -L"$cuda/lib64" -lcudart -Wl,-rpath,"$prefix/lib" -o "$tmp/example-pc"
check_run pkg-config "$tmp/example-pc"
echo "install test passed"
