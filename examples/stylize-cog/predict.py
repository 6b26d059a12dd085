"""StylizeRemote's work as a cog predictor: the masked region of an image
gets a style, with Pillow. Served by `python -m cog.server.http` (no
Docker), fronted by `flowdir jobserver --model flowdir/stylize=URL`."""
import os
import tempfile
import time

from cog import BasePredictor, Input, Path
from PIL import Image, ImageChops, ImageFilter, ImageOps

STYLES = ["sketch", "paint", "posterize", "charcoal"]


class Predictor(BasePredictor):
    def setup(self):
        print("stylize: ready")

    def predict(
        self,
        image: Path = Input(description="The photo"),
        mask: Path = Input(description="White where the style goes"),
        style: str = Input(default="sketch", choices=STYLES),
        steps: int = Input(default=30, ge=1, le=150),
        cfg: float = Input(default=4.0, ge=0, le=30),
        delay: float = Input(default=0.0, ge=0, description="Seconds to take at least (tests and demos)"),
    ) -> Path:
        started = time.time()
        # cog without Docker runs without its OpenAPI schema, so checks nothing itself.
        if style not in STYLES:
            raise ValueError(f"style '{style}' is not one of {', '.join(STYLES)}")
        if not 1 <= steps <= 150 or not 0 <= cfg <= 30 or delay < 0:
            raise ValueError(f"steps must be 1-150, cfg 0-30, delay >= 0 (got steps={steps}, cfg={cfg}, delay={delay})")
        img = Image.open(image).convert("RGB")
        m = Image.open(mask).convert("L").resize(img.size)
        print(f"stylize: {img.width}x{img.height}, style={style}, steps={steps}, cfg={cfg}", flush=True)
        styled = img
        rounds = max(1, steps // 10)
        for i in range(rounds):
            styled = self.apply(style, styled, steps, cfg)
            print(f"progress: {(i + 1) / (rounds + 1):.2f}", flush=True)
        # Small sleeps: a cancel lands at the next bytecode.
        while time.time() - started < delay:
            time.sleep(0.05)
        out = Image.composite(styled, img, m)
        # A folder of its own: cog servers side by side never share an output.
        path = os.path.join(tempfile.mkdtemp(prefix="stylize-"), "stylized.png")
        out.save(path)
        print("progress: 1.0", flush=True)
        print(f"stylize: done in {time.time() - started:.2f}s", flush=True)
        return Path(path)

    @staticmethod
    def apply(style, img, steps, cfg):
        if style == "sketch":
            edges = ImageOps.grayscale(img).filter(ImageFilter.FIND_EDGES)
            return ImageOps.invert(edges).convert("RGB")
        if style == "paint":
            return img.filter(ImageFilter.ModeFilter(size=max(3, steps // 10)))
        if style == "posterize":
            return ImageOps.posterize(img, max(1, min(8, int(8 - cfg / 4))))
        gray = ImageOps.grayscale(img).filter(ImageFilter.GaussianBlur(max(0.5, cfg / 4)))
        return ImageChops.multiply(ImageOps.autocontrast(gray), gray.filter(ImageFilter.CONTOUR)).convert("RGB")
