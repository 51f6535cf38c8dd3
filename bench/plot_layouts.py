"""Plot every layout's bandwidth, Kiln and CuPy side by side, with the device-to-device copy's
ceiling and the 90% line, from the CSVs of bench_layouts and cupy_layouts.py (bytes read +
written, as the copy counts them).

    python3 bench/plot_layouts.py KILN.csv [CUPY.csv] OUT.png
"""

import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read(path):
    with open(path, newline="") as f:
        return {row["layout"]: float(row["gbs"]) for row in csv.DictReader(f)}


def main(args):
    if len(args) not in (2, 3):
        sys.exit("usage: plot_layouts.py KILN.csv [CUPY.csv] OUT.png")
    kiln = read(args[0])
    cupy = read(args[1]) if len(args) == 3 else {}
    copy = kiln.pop("copy", 0.0)
    cupy.pop("copy", None)
    layouts = list(kiln)
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(layouts) + 1.6))
    at = range(len(layouts))
    height = 0.4 if cupy else 0.8
    ax.barh([y - (height / 2 if cupy else 0) for y in at], [kiln[l] for l in layouts],
            height=height, label="Kiln")
    if cupy:
        ax.barh([y + height / 2 for y in at], [cupy.get(l, 0.0) for l in layouts], height=height,
                label="CuPy")
    if copy:
        ax.axvline(copy, color="black", linestyle="-", label=f"device-to-device copy ({copy:.0f})")
        ax.axvline(0.9 * copy, color="gray", linestyle="--", label="90% of the copy")
    ax.set_yticks(list(at))
    ax.set_yticklabels(layouts, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("GB/s (bytes read + written)")
    ax.set_title("Every layout against the copy's ceiling (bench_layouts, H200)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(args[-1], dpi=110)


if __name__ == "__main__":
    main(sys.argv[1:])
