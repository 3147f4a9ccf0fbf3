"""Sweep time, check time and peak driver memory of the lab per group size and family.

    python bench/lab_scale.py [--bands 3-8 16-32 48-100] [--protocols raincore totem ...]
        [--seeds 2] [--out DIR] [--conf KEY=VALUE ...] [--sweep FILE]

For each band of group sizes (the hostile generator's ``nodes`` setting: ``[fewest,
most]``) and each family, writes a sweep file (``protocols = [FAMILY]``, ``seeds``
hostile scenarios, the generator's quiet end of 12 failure-detection timeouts up to 8
members and 40 above, as ``sweeps/scale.toml``) and runs ``ringcast lab run --sweep
FILE -q`` on it in a process of its own (the driver's default memory unless ``--conf``
says otherwise), then prints one line: the runs and trace events, the phases that
``lab run`` prints of itself (sweep, check, metrics; each its wall time), the check's
share of the sweep, the CPU seconds of the whole process tree (the driver, its JVM and
the Python workers; and of the sweep and the check, from samples of it taken with the
phases' boundaries), the peak resident size of the driver's JVM (sampled every 0.2 s),
and the properties violated. ``--sweep FILE`` measures ``lab run`` on that sweep file
instead (``--sweep sweeps/default.toml``: the main job). A run that fails (a JVM out of
memory) is reported with its last line of error output.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PHASES = re.compile(r"phases: (.*); total ([\d.]+) s")


def _tree(root: int) -> list[int]:
    """``root`` and every process below it (Linux /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


class Sampler(threading.Thread):
    """Samples the process tree of ``pid``: the peak resident size of its JVM and the
    CPU seconds (user + system) each process used, as last seen."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.jvm_peak = 0
        self.cpu: dict[int, float] = {}
        self.series: list[tuple[float, float]] = []
        """(seconds since the start, CPU seconds of the tree so far), at each sample."""
        self.done = threading.Event()
        self.tick = os.sysconf("SC_CLK_TCK")

    def run(self) -> None:
        t0 = time.perf_counter()
        while not self.done.is_set():
            for pid in _tree(self.pid):
                try:
                    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                # utime, stime, cutime, cstime: fields 14-17 of stat
                self.cpu[pid] = sum(int(x) for x in stat[11:15]) / self.tick
                if b"java" in cmd.split(b"\0", 1)[0]:
                    rss = int(stat[21]) * os.sysconf("SC_PAGE_SIZE")
                    self.jvm_peak = max(self.jvm_peak, rss)
            self.series.append((time.perf_counter() - t0, sum(self.cpu.values())))
            self.done.wait(0.2)

    def cpu_between(self, start: float, end: float) -> float:
        """CPU seconds the tree used from ``start`` to ``end`` seconds after it started
        (to the sampling interval)."""

        def at(t: float) -> float:
            before = [c for s, c in self.series if s <= t]
            return before[-1] if before else 0.0

        return at(end) - at(start)


def phase_cpu(sampler: Sampler, phases: dict[str, float]) -> dict[str, float]:
    """CPU seconds of each phase of ``lab run``'s phases line, taking the phases to run
    one after the other from the start (what is left, "other", is under a second)."""
    out, t = {}, 0.0
    for name in ("spark start", "sweep", "check", "metrics", "report"):
        if name in phases:
            out[name] = sampler.cpu_between(t, t + phases[name])
            t += phases[name]
    return out


def sweep_file(path: Path, protocol: str, lo: int, hi: int, seeds: int) -> None:
    quiet = 12 if hi <= 8 else 40
    path.write_text(
        f'name = "{protocol}_{lo}_{hi}"\nprotocols = ["{protocol}"]\nseeds = {seeds}\n\n'
        f'[generator]\nkind = "hostile"\nnodes = [{lo}, {hi}]\nquiet = {quiet}\n'
    )


def events(out: Path) -> int:
    import pyarrow.dataset as ds

    return int(ds.dataset(out / "traces", partitioning="hive").count_rows())


def one(
    protocol: str, lo: int, hi: int, seeds: int, work: Path, conf: list[str], given: Path | None
) -> None:
    name = f"{protocol}_{lo}_{hi}" if given is None else given.stem
    sweep, out = work / f"{name}.toml", work / name
    if given is None:
        sweep_file(sweep, protocol, lo, hi, seeds)
    else:
        sweep = given.resolve()
    exe = Path(sys.executable).with_name("ringcast")
    cmd = [str(exe), "lab", "run", "--sweep", str(sweep), "--out", str(out), "-q"]
    for c in conf:
        cmd += ["--conf", c]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sampler = Sampler(proc.pid)
    sampler.start()
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - t0
    sampler.done.set()
    sampler.join()
    cpu = sum(sampler.cpu.values())
    m = PHASES.search(stdout)
    if m is None:
        last = (stderr.strip().splitlines() or ["?"])[-1]
        print(f"{protocol:9} {lo:3}-{hi:<3} FAILED after {wall:.1f} s: {last}", flush=True)
        return
    phases = {k: float(v) for k, v in re.findall(r"([a-z ]+) ([\d.]+) s", m.group(1))}
    phases = {k.strip(): v for k, v in phases.items()}
    doc = json.loads((out / "check.json").read_text())
    bad = sorted(p for p, r in doc["properties"].items() if r["status"] == "violated")
    runs = int(json.loads((out / "sweep.json").read_text())["runs"])
    sweep_s, check_s = phases["sweep"], phases["check"]
    cpus = phase_cpu(sampler, phases)
    print(
        f"{protocol:9} {lo:3}-{hi:<3} runs {runs:5} events {events(out):10,}"
        f" sweep {sweep_s:7.1f} s check {check_s:7.1f} s ({check_s / sweep_s:4.2f} of sweep)"
        f" cpu sweep {cpus['sweep']:6.1f} s check {cpus['check']:6.1f} s"
        f" metrics {phases.get('metrics', 0):6.1f} s total {wall:7.1f} s cpu {cpu:7.1f} s"
        f" jvm peak {sampler.jvm_peak / 2**30:4.2f} GiB violated {','.join(bad) or '-'}",
        flush=True,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bands", nargs="+", default=["3-8", "16-32", "48-100"])
    ap.add_argument(
        "--protocols", nargs="+", default=["basic", "raincore", "totem", "tribes", "gms"]
    )
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="keep the outputs here")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument(
        "--sweep", type=Path, default=None, help="measure `lab run` on this sweep file instead"
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = args.out or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        print(f"load average {os.getloadavg()[0]:.1f} at start", flush=True)
        if args.sweep is not None:
            one("(file)", 0, 0, 0, work, args.conf, args.sweep)
        for band in args.bands if args.sweep is None else ():
            lo, hi = (int(x) for x in band.split("-"))
            for protocol in args.protocols:
                one(protocol, lo, hi, args.seeds, work, args.conf, None)
        print(f"load average {os.getloadavg()[0]:.1f} at end", flush=True)


if __name__ == "__main__":
    main()
