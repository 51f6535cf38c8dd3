#!/usr/bin/env bash
# test_deb.sh CMAKE CPACK BUILD_DIR SOURCE_DIR WORK_DIR CUDA_ROOT CXX
# Make the kiln-dev Debian package from BUILD_DIR with CPack, unpack it into a scratch root with
# `dpkg -x` (no installation, no root needed), check its contents and metadata, then configure,
# build and run examples/client against the unpacked tree, and run its `kiln --version`.
set -euo pipefail
cmake=$1 cpack=$2 build=$3 source=$4 work=$5 cuda_root=$6 cxx=$7

command -v dpkg-deb >/dev/null || { echo "dpkg-deb is not installed: cannot test the package"; exit 1; }
rm -rf "$work"
mkdir -p "$work"
export KILN_CACHE_DIR="$work/cache"

"$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$work/package" >"$work/cpack.log" 2>&1 ||
    { cat "$work/cpack.log"; exit 1; }
deb=$(ls "$work"/package/kiln-dev_*.deb)
dpkg-deb --field "$deb" Package Version Depends | tee "$work/fields"
grep -qx "Package: kiln-dev" "$work/fields"
grep -q "^Depends: .*libspdlog-dev" "$work/fields"
grep -q "^Depends: .*libsodium23" "$work/fields"
grep -q "^Depends: .*libssl3" "$work/fields"
grep -q "^Depends: .*libzstd-dev" "$work/fields"
root="$work/root"
dpkg-deb -x "$deb" "$root"
for f in usr/include/kiln/kiln.hpp usr/lib/libkiln_runtime.a usr/lib/cmake/kiln/kilnConfig.cmake \
         usr/lib/pkgconfig/kiln.pc usr/bin/kiln usr/share/doc/kiln/LICENSE; do
    [[ -e "$root/$f" ]] || { echo "missing from the package: $f"; exit 1; }
done
if dpkg-deb -c "$deb" | grep -q "kiln/detail/half.hpp"; then
    echo "the package holds a test-only header"; exit 1
fi

# A machine without the packages it depends on (the GPU machine, whose libsodium travels in
# .deps/) cannot run what it holds: dpkg would refuse to install it there. Skipped, saying which.
missing=$(ldd "$root/usr/bin/kiln" | awk '/not found/ {print $1}' | tr '\n' ' ')
if [[ -n $missing ]]; then
    echo "skipped: this machine lacks libraries the package depends on: $missing"
    exit 77
fi
"$root/usr/bin/kiln" --version | tee "$work/version"
grep -q "^kiln [0-9]" "$work/version"

"$cmake" -S "$source/examples/client" -B "$work/client" -DCMAKE_BUILD_TYPE=Release \
    -DCUDAToolkit_ROOT="$cuda_root" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$root/usr" \
    >"$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
grep -q "$root/usr/lib/cmake/kiln" "$work/client/CMakeCache.txt" ||
    { echo "the client did not find Kiln in the unpacked package"; exit 1; }
"$cmake" --build "$work/client" -j2 >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
out=$("$work/client/client")
echo "$out"
grep -q "compiled for sm_90: key [0-9a-f]\{32\}" <<<"$out"
rm -rf "$work"
echo "deb package test passed"
