#!/usr/bin/env bash
# The GPU-less CI job of a fleet: compile every kernel an application uses, for every GPU
# architecture the fleet has, and publish the cubins so that the GPU jobs compile nothing.
#
#   warm_fleet.sh --arch sm_80,sm_90 [--manifest FILE]... [--from-cache DIR]... [--archive OUT] [-j N]
#
# Kernels come from manifests (raw sources and ElementwiseKernel / ReductionKernel specs with
# their dtypes and shapes, see `kiln warm` in docs/cli.md) and from cache directories an
# application run left behind (each entry carries its recipe, so it recompiles for any
# architecture with no GPU and no application). They are published:
#   - to Redis when KILN_REMOTE_CACHE is set (`kiln warm` waits for its writes before it exits);
#     GPU jobs set the same KILN_REMOTE_CACHE (read-only is enough: KILN_REMOTE_CACHE_MODE=read-only);
#   - to an archive with --archive OUT; GPU jobs run `kiln import OUT` before their work.
# The job compiles into a private, fresh cache directory (KILN_CACHE_DIR is set for it) unless
# KILN_CACHE_DIR is already set. Exits non-zero if any kernel fails to compile.
set -euo pipefail

kiln=${KILN_TOOL:-kiln}
arches=""
jobs=""
archive=""
manifests=()
caches=()
usage() {
    sed -n '4,5p' "$0" >&2
    exit 2
}
while [[ $# -gt 0 ]]; do
    case "$1" in
    --arch) arches=${2:?--arch needs a value}; shift 2 ;;
    --manifest) manifests+=("${2:?--manifest needs a file}"); shift 2 ;;
    --from-cache) caches+=("${2:?--from-cache needs a directory}"); shift 2 ;;
    --archive) archive=${2:?--archive needs a file}; shift 2 ;;
    -j) jobs=${2:?-j needs a number}; shift 2 ;;
    -h | --help) usage ;;
    *) echo "warm_fleet.sh: unknown argument '$1'" >&2; usage ;;
    esac
done
[[ -n "$arches" ]] || { echo "warm_fleet.sh: --arch is required (e.g. sm_80,sm_90)" >&2; usage; }
[[ ${#manifests[@]} -gt 0 || ${#caches[@]} -gt 0 ]] ||
    { echo "warm_fleet.sh: give at least one --manifest or --from-cache" >&2; usage; }

if [[ -z "${KILN_CACHE_DIR:-}" ]]; then
    scratch=$(mktemp -d) # private (0700) and unpredictable
    trap 'rm -rf "$scratch"' EXIT
    export KILN_CACHE_DIR="$scratch/cache"
fi
jobs_option=()
[[ -n "$jobs" ]] && jobs_option=(-j "$jobs")

for manifest in "${manifests[@]}"; do
    "$kiln" warm "$manifest" --arch "$arches" "${jobs_option[@]}"
done
for cache in "${caches[@]}"; do
    "$kiln" warm --from-cache "$cache" --arch "$arches" "${jobs_option[@]}"
done
[[ -z "$archive" ]] || "$kiln" export "$archive"
"$kiln" cache stats
