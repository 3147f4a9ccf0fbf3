"""A lab JVM's start with and without the class-data archive (ringcast.lab.classcache).

    python bench/lab_jvm_start.py [--repeat 5] [--trace DIR]

Each measurement is a fresh process: ``spark_session("local[2]")`` (the JVM's start and
the SparkContext's), then one trivial job, then, with ``--trace``, ``run_checks`` on that
trace (``ringcast sim scenarios/raincore/crash.toml --seed 1 --out DIR`` makes a small
one). With and without the archive alternate (``RINGCAST_CLASS_ARCHIVE=off``), so that
both see the same machine; the archive is built first if there is none. Prints each
measurement and the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = """
import json, sys, time
t0 = time.perf_counter()
from ringcast.lab.session import spark_session
s = spark_session("local[2]")
t1 = time.perf_counter()
s.range(10).count()
t2 = time.perf_counter()
out = {"session": t1 - t0, "first_job": t2 - t1}
if len(sys.argv) > 1:
    from ringcast.lab.checks import run_checks
    from ringcast.lab.load import load_traces
    run_checks(load_traces(s, [sys.argv[1]]))
    out["check"] = time.perf_counter() - t2
print(json.dumps(out))
"""


def measure(archive: bool, trace: str | None) -> dict[str, float]:
    env = dict(os.environ)
    if not archive:
        env["RINGCAST_CLASS_ARCHIVE"] = "off"
    cmd = [sys.executable, "-c", CHILD, *([trace] if trace else [])]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--trace", help="a trace directory to check after the first job")
    args = ap.parse_args()
    subprocess.run([sys.executable, "-m", "ringcast.lab.classcache"], check=True)
    got: dict[bool, list[dict[str, float]]] = {True: [], False: []}
    for k in range(args.repeat):
        for archive in (True, False):
            m = measure(archive, args.trace)
            got[archive].append(m)
            shown = " ".join(f"{key} {v:.2f} s" for key, v in m.items())
            print(f"{k} archive={'on ' if archive else 'off'} {shown}", flush=True)
    print("medians:")
    for archive in (True, False):
        keys = got[archive][0]
        med = {key: statistics.median(m[key] for m in got[archive]) for key in keys}
        total = sum(med.values())
        shown = " ".join(f"{key} {v:.2f} s" for key, v in med.items())
        print(f"  archive={'on ' if archive else 'off'} {shown} (sum {total:.2f} s)")


if __name__ == "__main__":
    main()
