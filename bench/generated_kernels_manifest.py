#!/usr/bin/env python3
"""Print a `kiln warm` manifest of 200 generated kernels (100 reductions, 100 elementwise), for
bench_entry_size: python3 bench/generated_kernels_manifest.py > /tmp/kernels.json"""
import json

dtypes = ["float32", "float64", "int32", "int64", "uint32"]
kernels = []
for i in range(100):
    dtype = dtypes[i % len(dtypes)]
    kernels.append({
        "reduction": {"name": f"reduce_{i}", "in_params": "T x", "out_params": "T y",
                      "map_expr": f"x * x + {i % 7}", "reduce_expr": "a + b",
                      "post_map_expr": "y = a", "identity": "0"},
        "args": [{"dtype": dtype, "shape": [64 + i, 256]}], "axis": [i % 2]})
    kernels.append({
        "elementwise": {"name": f"scale_{i}", "in_params": "T x, T a", "out_params": "T y",
                        "operation": f"y = a * x + {i}"},
        "args": [{"dtype": dtype, "shape": [1024 + i]}, {"dtype": dtype, "scalar": True},
                 {"dtype": dtype, "shape": [1024 + i]}]})
print(json.dumps({"kernels": kernels}, indent=1))
