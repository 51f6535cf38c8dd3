"""Plot a RawKernel launch sweep written by tune_raw_kernel: for each size, the time per launch
against the block size, one line per grid rule (a thread per element, or W waves of resident
blocks), the fastest configuration marked.

    python3 bench/plot_tune_raw_kernel.py SWEEP.json OUT.png
"""

import json
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(path, out):
    data = json.load(open(path))
    by_size = defaultdict(list)
    for row in data["results"]:
        by_size[row["n"]].append(row)
    sizes = sorted(by_size)
    fig, axes = plt.subplots(1, len(sizes), figsize=(4.2 * len(sizes), 4), squeeze=False)
    for ax, n in zip(axes[0], sizes):
        rows = by_size[n]
        rules = sorted({r["grid_rule"] for r in rows},
                       key=lambda rule: (rule != "cover", int(rule.split(":")[1]) if ":" in rule else 0))
        for rule in rules:
            points = sorted((r["block"], r["ms"] * 1e3) for r in rows if r["grid_rule"] == rule)
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=rule)
        best = min(rows, key=lambda r: r["ms"])
        ax.plot([best["block"]], [best["ms"] * 1e3], marker="*", markersize=16, color="black",
                linestyle="none", label=f"best: {best['block']} x {best['grid']}")
        ax.set_xscale("log", base=2)
        ax.set_xticks([64, 128, 256, 512, 1024])
        ax.set_xticklabels(["64", "128", "256", "512", "1024"])
        ax.set_title(f"n = {n:,} ({best['gbs']:.0f} GB/s best)")
        ax.set_xlabel("threads per block")
        ax.set_ylabel("µs per launch")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{data['kernel']} on {data['device']}")
    fig.tight_layout()
    fig.savefig(out, dpi=120)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
