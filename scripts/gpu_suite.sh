#!/usr/bin/env bash
# Build Kiln and run everything that needs a GPU, in one call on the GPU machine:
#   device run (carry .deps): bash scripts/gpu_suite.sh
# Needs .deps from scripts/fetch_device_deps.sh. Logs and figures go to $OUT (or ./gpu-out).
# Steps, run in the order KILN_GPU_STEPS lists them (default: all but sanitize, in the order
# below): build (configure + build, tests and benches) -> test (the whole CTest suite) -> demo ->
# examples (examples/ built against an install of build-gpu, each run; any exit but 0 fails) ->
# bench (launch cost) -> streams (issue 39 item 2: each call on three kinds of stream) -> graph
# (issue 39 item 4: a 16-call chain replayed) -> signing (verifying signed entries, CPU) -> elementwise, layouts (every
# layout beside a copy and CuPy, CSVs and layout_bandwidth_h200.png), reduction, fuse, tuner (benches; "fuse_softmax",
# not among the defaults, times softmax alone beside a copy and CuPy; "baseline" and
# "layout_baseline", not among the defaults, run bench_reduction, and the hot path and first
# calls, beside an earlier tree's: see step_baseline) -> startup (issue 16's
# start-up figures: the first call from disk in fresh processes, with Kiln's context priming and
# its read-ahead each on and off in alternation, and one traced sample per kind (driver calls, Kiln's time between
# them, page faults), and the driver's first-use set-up in a fresh context (bench_context_priming);
# a raw kernel's cold compile beside plain NVRTC + module load; generated kernels' cold first call
# beside a trivial kernel's compile and beside the same generated source's) -> warm (`kiln warm` -j 1 against -j 16) -> multigpu (several
# GPUs) -> cupy (CuPy side by side) -> ncu (Nsight Compute source correlation) -> matmul (the matmul
# example, its CSV and plot, and bench_matmul beside direct cuBLAS and CuPy's cp.matmul; needs the
# libraries, kiln_tool and bench_matmul built). "sanitize" runs
# the GPU tests under compute-sanitizer. List the most important steps first when device time is
# short: each step's files are packed as it ends.
# KILN_GPU_BUILD_TARGETS (build: only these targets, e.g. "kiln_tool test_doc_snippets_gpu") and
# KILN_GPU_CTEST_ARGS (test: more ctest arguments, e.g. "-L gpu" or "-R DocSnippets") make a
# focused run when device time is short.
# KILN_BENCH_REPETITIONS (bench, default 5) and KILN_COLD_MODES (startup, comma-separated
# bench_cold_compile modes) shorten a run.
# KILN_GPU_PACK=1: the device tool returns at most 8 files, so every log and figure is also packed
# into $OUT/gpu-suite.tgz after each step (a run stopped at its time limit keeps what it did).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-out}
pack=${KILN_GPU_PACK:-0}
if [[ $pack == 1 ]]; then
    archive=$out/gpu-suite.tgz
    out=$(mktemp -d) # the logs; packed into $archive
fi
mkdir -p "$out"
steps=${KILN_GPU_STEPS:-build test demo examples bench streams graph signing elementwise layouts reduction fuse tuner startup warm multigpu cupy ncu matmul}
has() { [[ " $steps " == *" $1 "* ]]; }
status=0
packed() { [[ $pack == 1 ]] && tar czf "$archive" -C "$out" . 2>/dev/null; true; }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
bash scripts/unpack_device_deps.sh

step_build() {
    cmake --preset bench >"$out/configure.log" 2>&1 \
        || { tail -30 "$out/configure.log"; packed; exit 1; }
    # shellcheck disable=SC2086 # a list of target names
    cmake --build build-gpu -j"$(nproc)" ${KILN_GPU_BUILD_TARGETS:+--target $KILN_GPU_BUILD_TARGETS} \
        >"$out/build.log" 2>&1 || {
        grep -E "error" -A5 "$out/build.log" | head -60
        packed
        exit 1
    }
    echo "build: ok"
}
step_test() {
    # shellcheck disable=SC2086 # ctest arguments, split as a shell would
    (cd build-gpu && ctest -j"$(( $(nproc) / 2 ))" --output-on-failure --timeout 300 \
        ${KILN_GPU_CTEST_ARGS:-}) >"$out/ctest.log" 2>&1 || status=1
    grep -E "tests passed|tests failed|Skipped|\*\*\*Failed|Failed  |Not Run" "$out/ctest.log" | tail -25
    (cd build-gpu && ctest -L gpu -N | tail -1)
}
step_sanitize() {
    # The GPU suite under compute-sanitizer memcheck and racecheck (summary last).
    # KILN_SANITIZE_BUDGET (seconds) stops it in time for its logs to be packed.
    timeout "${KILN_SANITIZE_BUDGET:-0}" bash scripts/gpu_sanitize.sh 2>&1 | tail -40 || status=1
}
step_demo() {
    export KILN_CACHE_DIR=$(mktemp -d)
    ./build-gpu/tools/kiln demo 2>&1 | tee "$out/demo.log" || {
        status=1
        # A crash: show where (cuda-gdb also debugs host code).
        cuda-gdb -batch -ex run -ex bt --args ./build-gpu/tools/kiln demo 2>&1 | tail -30
    }
    ./build-gpu/tools/kiln demo 2>&1 | tee -a "$out/demo.log" | grep compile || status=1
}
step_examples() {
    # As a user builds them: build-gpu installed into a prefix, examples/CMakeLists.txt (every
    # folder) configured with find_package against it, with the toolkit, compiler and OpenSSL
    # build-gpu found (OpenSSL may come from .deps/ here). Each program checks its result on the
    # GPU; 77 (no usable GPU) fails too, on this machine.
    local work list name rc hints=()
    work=$(mktemp -d)
    mapfile -t hints < <(grep -E "^(CUDAToolkit_ROOT|CMAKE_CXX_COMPILER|OPENSSL_INCLUDE_DIR|OPENSSL_CRYPTO_LIBRARY|OPENSSL_SSL_LIBRARY):" \
        build-gpu/CMakeCache.txt | sed -E 's/^([^:]*):[^=]*=(.*)$/-D\1=\2/')
    { cmake --install build-gpu --prefix "$work/prefix" &&
      cmake -S examples -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" "${hints[@]}" &&
      cmake --build "$work/build" -j"$(nproc)"; } >"$out/examples_build.log" 2>&1 \
        || { tail -30 "$out/examples_build.log"; status=1; return; }
    for list in examples/*/CMakeLists.txt; do
        name=$(basename "$(dirname "$list")")
        KILN_CACHE_DIR=$work/cache "$work/build/$name/$name" >"$out/example_$name.log" 2>&1
        rc=$?
        echo "example $name: exit $rc: $(tail -1 "$out/example_$name.log")"
        ((rc == 0)) || tail -20 "$out/example_$name.log"
    done | tee "$out/examples.txt" # a subshell: its verdict is read from the file
    if [[ ! -s $out/examples.txt ]] || grep -q ": exit [1-9]" "$out/examples.txt"; then
        status=1
    fi
    rm -rf "$work"
}
step_matmul() {
    # Issue 41: the matmul example (naive and tiled raw kernels against kiln::matmul, its CSV and
    # plot, trace against a host loop) built against an install of build-gpu, then kiln::matmul
    # against cuBLAS called directly (bench_matmul) and CuPy's cp.matmul on the same cases.
    local work hints=()
    work=$(mktemp -d)
    mapfile -t hints < <(grep -E "^(CUDAToolkit_ROOT|CMAKE_CXX_COMPILER|OPENSSL_INCLUDE_DIR|OPENSSL_CRYPTO_LIBRARY|OPENSSL_SSL_LIBRARY):" \
        build-gpu/CMakeCache.txt | sed -E 's/^([^:]*):[^=]*=(.*)$/-D\1=\2/')
    cmake --install build-gpu --prefix "$work/prefix" >"$out/matmul_install.log" 2>&1 \
        || { tail -20 "$out/matmul_install.log"; status=1; return; }
    # shellcheck disable=SC2086 # the example's arguments, split as a shell would
    KILN_CACHE_DIR=$work/cache KILN_EXAMPLE_CMAKE_ARGS="${hints[*]}" \
        bash examples/matmul/run.sh "$work/prefix" "$out/matmul" ${KILN_MATMUL_ARGS:-} || status=1
    ./build-gpu/bench/bench_matmul --json "$out/bench_matmul.json" 2>&1 | tee "$out/bench_matmul.txt" \
        || status=1
    python3 bench/cupy_matmul.py 2>&1 | tee "$out/cupy_matmul.json" || status=1
    rm -rf "$work"
}
step_bench() {
    ./build-gpu/bench/bench_launch --benchmark_repetitions="${KILN_BENCH_REPETITIONS:-5}" --benchmark_report_aggregates_only=true \
        --benchmark_out="$out/bench_launch.json" --benchmark_out_format=json 2>&1 | tee "$out/bench_launch.txt" | grep -E "median|Run on" || status=1
}
step_streams() {
    # Issue 39 item 2: host time per call on the legacy stream, a kiln::Stream and a program's own
    # stream, output given and allocated, against raw launches of the same kernels.
    ./build-gpu/bench/bench_launch --benchmark_filter=BM_OnStream \
        --benchmark_repetitions="${KILN_BENCH_REPETITIONS:-5}" --benchmark_report_aggregates_only=true \
        --benchmark_out="$out/bench_streams.json" --benchmark_out_format=json 2>&1 \
        | tee "$out/bench_streams.txt" | grep -E "median|Run on|ERROR" || status=1
}
step_graph() {
    # Issue 39 item 4: a mixed chain of 16 calls replayed from a graph, called directly, and as
    # raw launches: host time per kernel.
    ./build-gpu/bench/bench_graph --benchmark_repetitions="${KILN_BENCH_REPETITIONS:-5}" \
        --benchmark_report_aggregates_only=true --benchmark_out="$out/bench_graph.json" \
        --benchmark_out_format=json 2>&1 | tee "$out/bench_graph.txt" | grep -E "median|Run on|ERROR" || status=1
}
step_signing() {
    # What verifying a signed entry costs on this host's CPU (issue 36; the same bench as on the
    # development machine, bench/RESULTS.md).
    ./build-gpu/bench/bench_signing --benchmark_repetitions="${KILN_BENCH_REPETITIONS:-5}" --benchmark_report_aggregates_only=true \
        --benchmark_out="$out/bench_signing.json" --benchmark_out_format=json 2>&1 | tee "$out/bench_signing.txt" | grep -E "median|Run on" || status=1
}
step_elementwise() {
    ./build-gpu/bench/bench_elementwise --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
        --benchmark_min_time=0.2 --benchmark_out="$out/bench_elementwise.json" --benchmark_out_format=json \
        >"$out/bench_elementwise.txt" 2>&1 || status=1
    grep -E "median" "$out/bench_elementwise.txt"
    for run in 1 2 3; do
        KILN_CACHE_DIR=$(mktemp -d) ./build-gpu/bench/bench_elementwise --first-call
    done | tee "$out/first_call.txt"
}
step_layouts() {
    # Issue 39 item 1: every layout beside a device-to-device copy in one process (bench_layouts),
    # the same cases with CuPy where it is installed, and the plot of both. Built here if the build
    # step left it out. KILN_LAYOUTS_REPS: timed calls a case (default 15).
    [[ -x build-gpu/bench/bench_layouts ]] || cmake --build build-gpu -j"$(nproc)" \
        --target bench_layouts >"$out/layouts_build.log" 2>&1 \
        || { tail -20 "$out/layouts_build.log"; status=1; return; }
    KILN_CACHE_DIR=$(mktemp -d) ./build-gpu/bench/bench_layouts --reps "${KILN_LAYOUTS_REPS:-15}" \
        "$out/layouts_kiln.csv" 2>&1 | tee "$out/layouts_kiln.txt" || status=1
    local plot_args=("$out/layouts_kiln.csv")
    if python3 -c "import cupy" 2>/dev/null; then
        python3 bench/cupy_layouts.py --reps "${KILN_LAYOUTS_REPS:-15}" "$out/layouts_cupy.csv" \
            2>&1 | tee "$out/layouts_cupy.txt" || status=1
        [[ -s $out/layouts_cupy.csv ]] && plot_args+=("$out/layouts_cupy.csv")
    fi
    python3 bench/plot_layouts.py "${plot_args[@]}" "$out/layout_bandwidth_h200.png" \
        || echo "plot: matplotlib missing? the CSVs are in $out"
}
step_reduction() {
    ./build-gpu/bench/bench_reduction --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
        --benchmark_min_time=0.2 --benchmark_out="$out/bench_reduction.json" --benchmark_out_format=json \
        >"$out/bench_reduction.txt" 2>&1 || status=1
    grep -E "median|ERROR" "$out/bench_reduction.txt"
    for run in 1 2 3 4 5; do
        KILN_CACHE_DIR=$(mktemp -d) ./build-gpu/bench/bench_reduction --first-call
    done | tee "$out/reduction_first_call.txt"
    has cupy && { python3 bench/cupy_reduction.py 2>&1 | tee "$out/cupy_reduction.json" || status=1; }
}
# KILN_BASELINE_TREE: an earlier commit's source tree (`git archive REV | tar -x -C .baseline`,
# carried): its kernels run this tree's bench_reduction, alternating with this tree's, the cases
# KILN_REDUCTION_FILTER names, so both sides' figures come from one run on one device.
step_baseline() {
    local base=${KILN_BASELINE_TREE:?step baseline needs KILN_BASELINE_TREE}
    cp bench/bench_reduction.cpp bench/bench_support.hpp "$base/bench/"
    rm -rf "$base/.deps" && cp -r .deps "$base/"
    (cd "$base" && cmake --preset bench && cmake --build build-gpu -j"$(nproc)" \
        --target bench_reduction) >"$out/baseline_build.log" 2>&1 \
        || { tail -20 "$out/baseline_build.log"; status=1; return; }
    for round in 1 2 3; do
        for side in new baseline; do
            local exe=./build-gpu/bench/bench_reduction
            [[ $side == baseline ]] && exe=$base/build-gpu/bench/bench_reduction
            echo "== $side, round $round"
            "$exe" --benchmark_filter="${KILN_REDUCTION_FILTER:-.}" --benchmark_min_time=0.2 2>&1 \
                | grep -E "^BM_"
        done
    done | tee "$out/bench_reduction_baseline.txt"
}
# KILN_BASELINE_TREE as above: the hot path (bench_launch's BM_Hot_* rows, each a ratio to a raw
# cuLaunchKernel in the same iterations) and the first call from disk (bench_first_call, fresh
# processes), this tree's and the baseline's alternating, so a restructuring is held to the same
# figures in one run on one device.
step_layout_baseline() {
    local base=${KILN_BASELINE_TREE:?step layout_baseline needs KILN_BASELINE_TREE}
    rm -rf "$base/.deps" && cp -r .deps "$base/"
    (cd "$base" && cmake --preset bench && cmake --build build-gpu -j"$(nproc)" \
        --target bench_launch bench_first_call) >"$out/layout_baseline_build.log" 2>&1 \
        || { tail -20 "$out/layout_baseline_build.log"; status=1; return; }
    for round in 1 2 3; do
        for side in new baseline; do
            local dir=./build-gpu/bench
            [[ $side == baseline ]] && dir=$base/build-gpu/bench
            echo "== $side, round $round"
            "$dir/bench_launch" --benchmark_filter=BM_Hot_ --benchmark_repetitions=3 \
                --benchmark_report_aggregates_only=true 2>&1 | grep -E "median" || status=1
            local cache
            cache=$(mktemp -d)
            KILN_CACHE_DIR=$cache "$dir/bench_first_call" --populate >/dev/null 2>&1 &&
                KILN_CACHE_DIR=$cache "$dir/bench_first_call" --samples 15 2>&1 || status=1
        done
    done | tee "$out/layout_baseline.txt"
}
step_fuse() {
    ./build-gpu/bench/bench_fuse --benchmark_repetitions=3 --benchmark_report_aggregates_only=true \
        --benchmark_min_time=0.2 --benchmark_out="$out/bench_fuse.json" --benchmark_out_format=json \
        >"$out/bench_fuse.txt" 2>&1 || status=1
    grep -E "median|ERROR" "$out/bench_fuse.txt"
    for run in 1 2 3 4 5; do # alternating, fresh processes and caches: compare the medians
        KILN_CACHE_DIR=$(mktemp -d) ./build-gpu/bench/bench_fuse --first-call
        KILN_CACHE_DIR=$(mktemp -d) ./build-gpu/bench/bench_fuse --first-call --elementwise
    done | tee "$out/fuse_first_call.txt"
    has cupy && { python3 bench/cupy_fuse.py 2>&1 | tee "$out/cupy_fuse.json" || status=1; }
}
step_fuse_softmax() {
    # Softmax over the rows of 16384 x 16384 float32 (issue 38): fused (the row plan, and the split
    # plan over a transposed view), unfused, and a device copy of the same array for scale; then
    # cupy.fuse, CuPy op by op and CuPy's copy, where CuPy is installed.
    ./build-gpu/bench/bench_fuse --benchmark_filter='Softmax|Copy' --benchmark_repetitions=3 \
        --benchmark_report_aggregates_only=true --benchmark_min_time=0.2 \
        --benchmark_out="$out/bench_fuse_softmax.json" --benchmark_out_format=json \
        >"$out/bench_fuse_softmax.txt" 2>&1 || status=1
    grep -E "median|ERROR" "$out/bench_fuse_softmax.txt"
    if python3 -c "import cupy" 2>/dev/null; then
        python3 bench/cupy_fuse.py --softmax 2>&1 | tee "$out/cupy_fuse_softmax.json" || status=1
    fi
}
step_tuner() {
    # Tuned against default launches (the tuning happens in each case's warm-up, fresh cache),
    # what one tuning costs, and the RawKernel sweep with its plot.
    KILN_CACHE_DIR=$(mktemp -d) ./build-gpu/bench/bench_tuner --benchmark_repetitions=3 \
        --benchmark_report_aggregates_only=true --benchmark_min_time=0.2 \
        --benchmark_out="$out/bench_tuner.json" --benchmark_out_format=json \
        >"$out/bench_tuner.txt" 2>&1 || status=1
    grep -E "median|ERROR" "$out/bench_tuner.txt"
    for run in 1 2 3; do
        KILN_CACHE_DIR=$(mktemp -d) ./build-gpu/bench/bench_tuner --first-call
    done | tee "$out/tuner_first_call.txt"
    ./build-gpu/bench/tune_raw_kernel --out "$out/tune_raw_kernel.json" || status=1
    python3 bench/plot_tune_raw_kernel.py "$out/tune_raw_kernel.json" "$out/tune_raw_kernel.png" \
        || echo "plot: matplotlib missing? the JSON is in $out"
}
step_startup() {
    # Each figure from fresh processes; the CUDA context is created before the timed region.
    first_call_cache=$(mktemp -d)
    { KILN_CACHE_DIR=$first_call_cache ./build-gpu/bench/bench_first_call --populate &&
      KILN_CACHE_DIR=$first_call_cache ./build-gpu/bench/bench_first_call --samples 20 \
          --warm-up-both --read-ahead-both --trace 2>"$out/first_call_trace.txt" &&
      KILN_CACHE_DIR=$first_call_cache ./build-gpu/bench/bench_first_call --samples 20 --no-gpu
    } 2>&1 | tee "$out/first_call_from_disk.txt" || status=1
    grep -E "^---|faults" "$out/first_call_trace.txt"
    # The driver's first-use set-up in a fresh context, and what takes it out of the first call.
    ./build-gpu/bench/bench_context_priming --samples 15 2>&1 | tee "$out/context_priming.txt" \
        || status=1
    # Kiln's cold compile beside plain NVRTC with Kiln's exact options: NVRTC's own cache off on
    # both sides (Kiln's default), then on for both, then the old comment-only salting with it on.
    # KILN_COLD_MODES="--phases" keeps only the first (the like-with-like figure).
    local modes
    IFS=, read -r -a modes <<<"${KILN_COLD_MODES:---phases,--nvrtc-cache,--nvrtc-cache --comment-salt}"
    for mode in "${modes[@]}"; do
        # shellcheck disable=SC2086 # a mode may be two options
        ./build-gpu/bench/bench_cold_compile --samples 10 $mode 2>&1 || status=1
    done | tee "$out/cold_compile.txt"
    # The raw kernel beside plain NVRTC given -minimal too (the RawKernel's options): NVRTC's share.
    ./build-gpu/bench/bench_cold_compile --samples 10 --plain-same 2>&1 | tee -a "$out/cold_compile.txt" || status=1
    # Generated kernels' first call with an empty cache beside the trivial kernel's plain compile
    # (the targets) and a plain compile of the same generated source (Kiln's own share), all three
    # in the same processes (--three-way; each side first in a process in 5 of the 15).
    for kind in elementwise reduction; do
        ./build-gpu/bench/bench_cold_compile --samples 15 --kind $kind --three-way 2>&1 || status=1
    done | tee -a "$out/cold_compile.txt"
    has cupy && { python3 bench/cupy_first_call.py 20 2>&1 | tee "$out/cupy_first_call.json" || status=1; }
}
step_warm() {
    bash bench/warm_speedup.sh ./build-gpu/tools/kiln 1 16 2>&1 | tee "$out/warm_speedup.txt" || status=1
}
step_multigpu() {
    # Several GPUs (issue 17): the first call on a second device (a second context on device 0
    # where there is one GPU) in fresh processes and caches, and the data-parallel split over two
    # GPUs (skipped, with a message, below two). The two-GPU tests run in the test step and skip
    # below two GPUs; their skips are listed here.
    for run in 1 2 3; do
        KILN_CACHE_DIR=$(mktemp -d) ./build-gpu/bench/bench_multi_gpu || status=1
    done 2>&1 | tee "$out/multi_gpu.txt"
    grep -h -E "needs 2 GPUs" build-gpu/Testing/Temporary/LastTest.log 2>/dev/null | sort | uniq -c | head -20
}
step_cupy() {
    python3 bench/cupy_launch.py 2>&1 | tee "$out/cupy_launch.txt" || status=1
    has elementwise && { python3 bench/cupy_elementwise.py 2>&1 | tee "$out/cupy_elementwise.json" || status=1; }
}
step_ncu() {
    # Nsight Compute source correlation with no manual Resolve (issue: cache / Nsight sources).
    export KILN_CACHE_DIR=$(mktemp -d) KILN_CACHE_SAVE_SOURCE=1
    ncu --import-source 1 -k regex:my_add -c 1 -f -o "$out/demo" ./build-gpu/tools/kiln demo >"$out/ncu.log" 2>&1 || status=1
    ncu -i "$out/demo.ncu-rep" --page source --print-source cuda --csv 2>&1 | head -12 | tee "$out/ncu_source.txt"
    unset KILN_CACHE_SAVE_SOURCE
}
for step in $steps; do
    if ! declare -F "step_$step" >/dev/null; then
        echo "gpu_suite.sh: no step '$step'" >&2
        status=1
        continue
    fi
    start=$SECONDS
    "step_$step"
    echo "step $step: $((SECONDS - start)) s"
    packed
done
exit $status
