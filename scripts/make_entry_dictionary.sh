#!/usr/bin/env bash
# Write the raw-content zstd dictionary that compressed cache entries use, from the device headers
# of this tree: each header's name (as a recipe stores it), then its content. A dictionary is a
# format-level constant: cache/dictionary/zstd_v1.dict was written by this script once
# (2026-11-29) and never changes, or entries written with it stop decoding. New device headers
# make a new dictionary version: run this into cache/dictionary/zstd_v2.dict, add the
# compression value that names it (cache/entry.cpp) and keep the old one.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/make_entry_dictionary.sh OUTPUT}
: >"$out"
for header in kernels/device/kiln/{prelude,vec,elementwise,complex,complex_order,cast,block_reduce,reduction}.cuh \
              kernels/device/cupy/{carray,complex,float16}.cuh kernels/device/cupy/math_constants.h; do
    printf '%s' "${header#kernels/device/}" >>"$out"
    cat "$header" >>"$out"
done
