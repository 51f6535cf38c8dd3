"""Plot reduction bandwidth per case, Kiln and CuPy (with and without CUB) side by side, from the
outputs of bench_reduction (Google Benchmark JSON) and cupy_reduction.py (one JSON object).

    python3 bench/plot_reduction.py KILN.json CUPY.json OUT.png
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# (label, Kiln benchmark name, CuPy key stem, bytes read) for each case.
CASES = [
    ("sum 2^28", "BM_Reduction_SumAll/268435456", "sum_all_gbs", None),
    ("sum 256^3", "BM_Reduction_SumCube", "sum_cube_ms", 4.0 * (1 << 24)),
    ("sum axis 1\n16384^2", "BM_Reduction_SumRows/16384", "sum_rows_gbs", None),
    ("sum axis 0\n16384^2", "BM_Reduction_SumColumns/16384", "sum_columns_gbs", None),
    ("sum axes (0,2)\n256^3", "BM_Reduction_SumMixed", "sum_mixed_gbs", None),
    ("argmax 2^28", "BM_Reduction_ArgmaxAll/268435456", "argmax_all_gbs", None),
    ("l2norm axis 1\n16384^2", "BM_Reduction_L2normRows/16384", "l2norm_rows_gbs", None),
]


def kiln_rates(path):
    rates = {}
    for run in json.load(open(path))["benchmarks"]:
        if run.get("aggregate_name") == "median" and "GB/s" in run:  # host-time runs have none
            name = run["run_name"].replace("/manual_time", "")
            rates[name] = run["GB/s"] / 1e9 if run["GB/s"] > 1e6 else run["GB/s"]
    return rates


def cupy_rate(cupy, stem, label, bytes_read):
    value = cupy[f"{stem}_{label}"]
    return bytes_read / (value * 1e6) if stem.endswith("_ms") else value


def main(kiln_path, cupy_path, out_path):
    kiln = kiln_rates(kiln_path)
    cupy = json.load(open(cupy_path))
    labels = [c[0] for c in CASES]
    series = [
        ("Kiln", [kiln[c[1]] for c in CASES]),
        (f"CuPy {cupy['cupy']} with CUB", [cupy_rate(cupy, c[2], "cub", c[3]) for c in CASES]),
        (f"CuPy {cupy['cupy']} without CUB",
         [cupy_rate(cupy, c[2], "nocub", c[3]) for c in CASES]),
    ]
    fig, ax = plt.subplots(figsize=(10, 4.5))
    width = 0.27
    for k, (name, values) in enumerate(series):
        ax.bar([i + (k - 1) * width for i in range(len(labels))], values, width, label=name)
    if "BM_Reduction_Read/268435456" in kiln:
        ax.axhline(kiln["BM_Reduction_Read/268435456"], color="gray", linestyle=":",
                   label="device-to-device copy (read + write)")
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, fontsize=8)
    ax.set_ylabel("GB/s (bytes read)")
    ax.set_title("float32 reductions on an H100")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=4)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)


if __name__ == "__main__":
    main(*sys.argv[1:4])
