#!/usr/bin/env python3
"""Writes a short text report from image statistics."""
import json, sys

title, stats, out = sys.argv[1:]
s = json.load(open(stats))
tone = "bright" if s["mean"] > 0.6 else "dark" if s["mean"] < 0.4 else "balanced"
open(out, "w").write(f"{title}\n{'=' * len(title)}\n{s['width']}×{s['height']} pixels, {tone} (mean {s['mean']}).\n")
