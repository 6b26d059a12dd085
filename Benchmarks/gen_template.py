#!/usr/bin/env python3
"""Writes a valid template of N nodes: a layered DAG where each node takes
one or two inputs from the previous layer, in YAML or JSON.

usage: gen_template.py N yaml|json OUT
"""
import json
import sys

n, fmt, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
width = 10
nodes = [{"id": "n0", "kind": "Gen", "params": {"seed": 0}}]
edges = []
for i in range(1, n):
    layer, pos = divmod(i, width)
    prev = max(0, (layer - 1) * width)
    a = prev + pos % max(1, min(width, i - prev))
    node = {"id": f"n{i}", "kind": "Mix", "params": {"steps": 10 + i % 20, "cfg": 4.5, "style": "paint"}}
    nodes.append(node)
    edges.append({"from": [f"n{a}", "out"], "to": [f"n{i}", "a"]})
    b = a + 1
    if b < i and i > width:
        edges.append({"from": [f"n{b}", "out"], "to": [f"n{i}", "b"]})
doc = {"schema": "app.workflow/v2", "name": f"Generated {n}", "nodes": nodes, "edges": edges,
       "options": {"concurrency": {"local": 2}, "errorPolicy": "isolate-node"}}
with open(out, "w") as f:
    if fmt == "json":
        json.dump(doc, f, indent=1)
    else:
        f.write(f"schema: app.workflow/v2\nname: Generated {n}\nnodes:\n")
        for nd in nodes:
            params = ", ".join(f"{k}: {v}" for k, v in nd["params"].items())
            f.write(f"  - id: {nd['id']}\n    kind: {nd['kind']}\n    params: {{ {params} }}\n")
        f.write("edges:\n")
        for e in edges:
            f.write(f"  - {e['from'][0]}.{e['from'][1]} -> {e['to'][0]}.{e['to'][1]}\n")
        f.write("options:\n  concurrency: { local: 2 }\n  errorPolicy: isolate-node\n")
