#!/usr/bin/env python3
"""Applies a colour look (a choice) and output settings (confirmed params) to a photo."""
import json, subprocess, sys

image, look, settings, sharpen, out = sys.argv[1:]
choice = json.load(open(look))
choice = choice.get("choice", choice) if isinstance(choice, dict) else choice
cfg = json.load(open(settings))
looks = {"warm": ["-modulate", "100,110,96"], "cool": ["-modulate", "100,95,106"], "mono": ["-colorspace", "Gray"]}
cmd = ["convert", image, *looks.get(str(choice), []), "-resize", f"{int(cfg.get('width', 1600))}x>",
       "-sharpen", f"0x{sharpen}", "-quality", str(int(cfg.get("quality", 85))), out]
sys.exit(subprocess.run(cmd).returncode)
