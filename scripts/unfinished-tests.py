#!/usr/bin/env python3
"""The tests a `swift test` log shows started and never ended: what a run
that was stopped for taking too long was waiting on (scripts/test.sh).

    scripts/unfinished-tests.py LOG
"""
import re
import sys

# XCTest: Test Case '-[M.Class test]' started. / passed (…) / failed (…) / skipped
XC = re.compile(r"Test Case '(.+?)' (started|passed|failed|skipped)")
# Swift Testing: ◇ Test name() started. / ✔ … passed / ✘ … failed / ➜ … skipped;
# a suite likewise. A parameterised test's cases are left out (the test names them).
ST = re.compile(r"^[◇✔✘➜] (Test|Suite) (.+?) (started|passed|failed|skipped|recorded)")


def main(path):
    open_tests = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = XC.search(line)
            if m:
                name, what = m.group(1), m.group(2)
            else:
                m = ST.match(line)
                if not m or "Test case passing" in line:
                    continue
                name = m.group(1) + " " + m.group(2).split(" with ")[0]
                what = m.group(3)
            if name == "Test run":
                continue
            if what == "started":
                open_tests[name] = n
            elif what != "recorded":
                open_tests.pop(name, None)
    if not open_tests:
        print("unfinished-tests: every test that started ended (the hang was outside a test)")
        return
    print("unfinished-tests: started and never ended (log line):")
    for name, n in sorted(open_tests.items(), key=lambda kv: kv[1]):
        print(f"  {name}  (line {n})")


if __name__ == "__main__":
    main(sys.argv[1])
