"""Plot ElementwiseKernel bandwidth against size, Kiln and CuPy side by side, from the outputs of
bench_elementwise (Google Benchmark JSON) and cupy_elementwise.py (one JSON object).

    python3 bench/plot_elementwise.py KILN.json CUPY.json OUT.png
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def kiln_series(path):
    runs = json.load(open(path))["benchmarks"]
    points = {}
    for run in runs:
        name = run["name"]
        if name.startswith("BM_Elementwise_Fma/") and run.get("aggregate_name") == "median":
            n = int(name.split("/")[1])
            points[n] = run["GB/s"] / 1e9 if run["GB/s"] > 1e6 else run["GB/s"]
    return sorted(points.items())


def main(kiln_path, cupy_path, out_path):
    kiln = kiln_series(kiln_path)
    cupy = json.load(open(cupy_path))
    cupy_points = sorted((int(n), gbs) for n, gbs in cupy["fma_gbs"].items())
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot([n for n, _ in kiln], [g for _, g in kiln], "o-", label="Kiln ElementwiseKernel")
    ax.plot([n for n, _ in cupy_points], [g for _, g in cupy_points], "s--",
            label=f"CuPy {cupy['cupy']} ElementwiseKernel")
    ax.axhline(cupy["copy_gbs"], color="gray", linestyle=":", label="device-to-device copy")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("elements (float32)")
    ax.set_ylabel("GB/s (bytes read + written)")
    ax.set_title("z = x * y + b on an H100, contiguous")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)


if __name__ == "__main__":
    main(*sys.argv[1:4])
