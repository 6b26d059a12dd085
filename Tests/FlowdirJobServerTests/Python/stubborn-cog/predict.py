"""A cog predictor for the job server's tests of cog that misbehaves
(Tests/FlowdirJobServerTests/CogSupervisionTests.swift). Served by
`python -m cog.server.http` (no Docker), as examples/stylize-cog is.

mode:
  ok             returns "done <text>" after `seconds`
  ignore-cancel  never ends: each cancel cog raises in it is caught and
                 ignored (as a cancel that reached cog outside the
                 predictor leaves a prediction that never ends)
  hang           sleeps `seconds` (a cancel stops it as usual)
"""
import time

from cog import BasePredictor, Input

try:
    from coglet import CancelationException
except ImportError:  # older cog
    from cog.server.exceptions import CancelationException


class Predictor(BasePredictor):
    def setup(self):
        print("stubborn: ready", flush=True)

    def predict(
        self,
        mode: str = Input(default="ok"),
        text: str = Input(default=""),
        seconds: float = Input(default=0.0),
    ) -> str:
        print(f"stubborn: {mode} {text}", flush=True)
        if mode == "ignore-cancel":
            while True:
                try:
                    time.sleep(0.05)
                except CancelationException:
                    print("stubborn: cancel ignored", flush=True)
        time.sleep(seconds)
        return f"done {text}"
