#!/usr/bin/env python3
"""Plot the matmul example's CSV: GFLOP/s against matrix size for each method, with the device's
FP32 peak (and the TF32 tensor-core peak, which only the TF32 method can reach) marked.

    python3 plot.py matmul.csv matmul.png
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LABELS = {
    "naive": "naive raw kernel",
    "tiled": "tiled raw kernel (shared memory, 8x8 registers)",
    "kiln_matmul": "kiln::matmul (cuBLAS SGEMM, FP32)",
    "kiln_matmul_tf32": "kiln::matmul, TF32 allowed",
}


def main(source, target):
    with open(source) as f:
        header = f.readline().lstrip("# ").strip()
        meta = dict(item.split("=", 1) for item in header.split(","))
        rows = list(csv.DictReader(f))
    fig, ax = plt.subplots(figsize=(8, 5))
    for method, label in LABELS.items():
        points = [(int(r["n"]), float(r["gflops"])) for r in rows if r["method"] == method]
        if points:
            ax.plot(*zip(*points), marker="o", label=label)
    fp32 = float(meta.get("fp32_peak_gflops", 0))
    tf32 = float(meta.get("tf32_peak_gflops", 0))
    if fp32 > 0:
        ax.axhline(fp32, color="black", linestyle="--", label=f"FP32 peak {fp32 / 1000:.1f} TFLOP/s")
    if tf32 > 0:
        ax.axhline(tf32, color="grey", linestyle=":", label=f"TF32 tensor peak {tf32 / 1000:.0f} TFLOP/s")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("n (square float32 matrices, n x n)")
    ax.set_ylabel("GFLOP/s (2 n^3 / median GPU time)")
    ax.set_title(f"matmul on {meta.get('device', 'the GPU')}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(target, dpi=120)
    print(f"wrote {target}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "matmul.csv",
         sys.argv[2] if len(sys.argv) > 2 else "matmul.png")
