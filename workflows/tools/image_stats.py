#!/usr/bin/env python3
"""Measures an image with ImageMagick's identify: size and mean brightness, as JSON."""
import json, subprocess, sys

image, out = sys.argv[1:]
w, h, mean = subprocess.run(["identify", "-format", "%w %h %[fx:mean]", image], check=True,
                            capture_output=True, text=True).stdout.split()
json.dump({"width": int(w), "height": int(h), "mean": round(float(mean), 4)}, open(out, "w"), indent=2)
