#!/usr/bin/env python3
"""StylizeLocal's work, with ImageMagick: the masked region of the image gets
the chosen style (StylizeRemote does it on a GPU box, examples/stylize-cog)."""
import argparse, subprocess, sys

p = argparse.ArgumentParser()
for a in ("--image", "--mask", "--steps", "--cfg", "--style", "--out"):
    p.add_argument(a, required=True)
a = p.parse_args()
steps, cfg = int(a.steps), float(a.cfg)
effects = {
    "sketch": ["-sketch", f"0x{max(1, steps // 3)}+120"],
    "paint": ["-paint", str(max(1, steps // 10))],
    "posterize": ["-posterize", str(max(2, int(cfg)))],
    "charcoal": ["-charcoal", str(max(1, cfg / 2))],
}
size = subprocess.run(["identify", "-format", "%wx%h", a.image], check=True, capture_output=True, text=True).stdout
print("progress: 0.2", flush=True)
cmd = ["convert", a.image, "(", "+clone", *effects[a.style], ")", "(", a.mask, "-resize", size + "!", ")",
       "-composite", a.out]
print("running:", " ".join(cmd), flush=True)
sys.exit(subprocess.run(cmd).returncode)
