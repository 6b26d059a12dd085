#!/usr/bin/env python3
"""Puts the given images side by side; an absent optional input is an empty argument."""
import subprocess, sys

tile, out, *images = sys.argv[1:]
images = [i for i in images if i]
cmd = ["convert", *images, "-resize", f"{tile}x{tile}", "-background", "white", "-gravity", "center",
       "-extent", f"{tile}x{tile}", "+append", out]
sys.exit(subprocess.run(cmd).returncode)
