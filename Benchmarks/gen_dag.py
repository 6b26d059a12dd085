#!/usr/bin/env python3
"""Writes the same DAG of N no-op steps three ways: a flowdir template (with
its Touch tool), a Makefile and a Snakefile. Each step `touch`es its output
after its one or two predecessors.

usage: gen_dag.py N DIR
"""
import json, os, sys

n, out = int(sys.argv[1]), sys.argv[2]
os.makedirs(out + "/tools", exist_ok=True)
width = 10
deps = {0: []}
for i in range(1, n):
    layer, pos = divmod(i, width)
    prev = max(0, (layer - 1) * width)
    a = prev + pos % max(1, min(width, i - prev))
    deps[i] = [a] + ([a + 1] if a + 1 < i and i > width else [])

with open(out + "/tools/Touch.yaml", "w") as f:
    f.write("kind: Touch\ninputs: { a: FileRef?, b: FileRef? }\noutputs: { out: FileRef }\n"
            "run:\n  command: [touch, \"{outputs.out}\"]\n")
with open(out + "/dag.yaml", "w") as f:
    f.write(f"schema: app.workflow/v2\nname: DAG {n}\nnodes:\n")
    for i in range(n):
        ports = ", ".join(f"{p}: FileRef" for p, _ in zip("ab", deps[i]))
        f.write(f"  - {{ id: n{i}, kind: Touch{', inputs: { ' + ports + ' }' if ports else ''} }}\n")
    f.write("edges:\n")
    for i in range(n):
        for p, d in zip("ab", deps[i]):
            f.write(f"  - n{d}.out -> n{i}.{p}\n")
    f.write("options: { concurrency: { local: 2 } }\n")
# One process per step, as flowdir runs it: `touch` exec'd directly by make
# (no shell: no metacharacters in the recipe), out/ made once beforehand
# as an order-only prerequisite.
with open(out + "/Makefile", "w") as f:
    f.write("all: " + " ".join(f"out/n{i}" for i in range(n)) + "\nout:\n\t@mkdir out\n")
    for i in range(n):
        f.write(f"out/n{i}: {' '.join(f'out/n{d}' for d in deps[i])} | out\n\ttouch $@\n")
json.dump({f"n{i}": [f"n{d}" for d in deps[i]] for i in range(n)}, open(out + "/deps.json", "w"))
with open(out + "/Snakefile", "w") as f:
    f.write('import json\nDEPS = json.load(open("deps.json"))\n'
            'rule all:\n    input: [f"out/{k}" for k in DEPS]\n'
            'rule step:\n    input: lambda wc: [f"out/{d}" for d in DEPS[wc.n]]\n'
            '    output: "out/{n}"\n    shell: "touch {output}"\n')
