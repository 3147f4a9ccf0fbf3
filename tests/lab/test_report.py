"""The report and the space-time diagrams, without Spark: the charts from a metrics
document (CDFs on a log axis, no averaging across scenarios, unknown protocol names),
the diagram of a simulated run (lanes, labelled views, fault spans, arrows, ticks,
highlighted counterexamples), the ``lab timeline`` command, and both pages loaded in
headless Chromium with no script error and every chart drawn."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from ringcast.cli.main import main
from ringcast.lab import charts, diagrams
from ringcast.lab.report import render_report
from ringcast.lab.spacetime import Highlight, figure, read_run, run_file_name, view_label

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "basic" / "crash_restart.toml"
MS = 1_000_000


@pytest.fixture(scope="module")
def sim_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``ringcast sim`` output: the basic protocol, four nodes, B crashes and restarts."""
    out = tmp_path_factory.mktemp("sim")
    assert main(["sim", str(SCENARIO), "--out", str(out), "-q", "--seed", "3"]) == 0
    return out


def _trace(sim_dir: Path) -> Any:
    return pq.read_table(sim_dir / "trace.parquet")


def _first_remote_delivery(sim_dir: Path) -> tuple[str, str, str]:
    """(run, message, delivering node) of a message delivered away from its sender."""
    rows = _trace(sim_dir).to_pylist()
    for r in rows:
        if r["kind"] == "deliver" and not r["msg"].startswith(r["node"] + ":"):
            return r["run"], r["msg"], r["node"]
    raise AssertionError("no remote delivery")


def _check_doc(run: str, msg: str, node: str) -> dict[str, Any]:
    sender = msg.rpartition(":")[0]
    return {
        "ok": False,
        "properties": {
            "total_order": {
                "status": "violated",
                "runs_checked": 1,
                "runs_violated": 1,
                "violations": 1,
                "protocols": {"newfamily": {"claimed": True, "runs_checked": 1, "violations": 1}},
                "counterexamples": [
                    {
                        "run": run,
                        "protocol": "newfamily",
                        "t": 1_200_000_000,
                        "nodes": [sender, node],
                        "msgs": [msg],
                        "views": [],
                        "times": [],
                        "note": f"{node} and {sender} disagree on the place of {msg}",
                    }
                ],
            },
            "fifo": {
                "status": "holds",
                "runs_checked": 1,
                "runs_violated": 0,
                "violations": 0,
                "protocols": {},
                "counterexamples": [],
            },
        },
    }


def _metrics_doc(run: str) -> dict[str, Any]:
    """A metrics document over two protocol names the report cannot know."""
    runs = []
    for proto, scen, n, mps in [
        ("newfamily", "steady", 3, 100.0),
        ("newfamily", "steady", 5, 80.0),
        ("newfamily", "crashy", 3, 10.0),
        ("newfamily", "crashy", 5, 4.0),
        ("otherfamily", "steady", 4, 50.0),
    ]:
        for seed in (1, 2):
            runs.append(
                {
                    "run": run
                    if (proto, scen, n, seed) == ("newfamily", "crashy", 3, 1)
                    else f"{scen}@nodes={n}:{seed}",
                    "protocol": proto,
                    "scenario": scen,
                    "point": f"nodes={n},network.loss=0.0",
                    "params": json.dumps({"nodes": n, "network.loss": 0.0}),
                    "seed": seed,
                    "nodes": n,
                    "faults": "crash+restart" if scen == "crashy" else "none",
                    "errors": 0,
                    "messages_per_s": mps + seed,
                    "deliveries_per_s": 3 * mps,
                    "packets_per_message": 2.0,
                    "bytes_per_message": 200.0,
                    "retransmits_per_message": 0.1,
                }
            )
    hist = [
        {"protocol": p, "order": o, "faults": f, "bucket": b, "count": c, "scenarios": ["s"]}
        for p, o, f in [
            ("newfamily", "agreed", "none"),
            ("newfamily", "safe", "none"),
            ("otherfamily", "agreed", "crash+restart"),
        ]
        for b, c in [(120, 5), (125, 20), (140, 3), (171, 1)]
    ]
    return {
        "runs": runs,
        "groups": [{"protocol": "newfamily", "scenario": "steady", "nodes": 3, "runs": 2}],
        "latency": [{"protocol": "newfamily", "scenario": "steady", "order": "agreed"}],
        "latency_histogram": hist,
        "latency_buckets_per_decade": 20,
        "convergence": [
            {
                "protocol": "newfamily",
                "action": "crash",
                "faults": 2,
                "no_view_change": 0,
                "samples": [
                    {"took_ms": 120.0, "run": run, "at_ms": 1000.0},
                    {"took_ms": 180.0, "run": "crashy@nodes=5:1", "at_ms": 1000.0},
                ],
            }
        ],
    }


def test_latency_cdfs_are_per_fault_set_on_a_log_axis_and_end_at_one() -> None:
    fig = charts.latency_cdf(_metrics_doc("r:1"))
    assert fig is not None
    lines = fig["data"]
    assert len(lines) == 3  # (protocol, order, faults)
    for tr in lines:
        ys = list(tr["y"])
        assert ys == sorted(ys) and ys[-1] == pytest.approx(1.0)
        assert min(tr["x"]) > 0
    axes = [v for k, v in fig["layout"].items() if k.startswith("xaxis")]
    assert len(axes) == 2 and all(a["type"] == "log" for a in axes)  # none, crash+restart
    titles = {a["text"] for a in fig["layout"]["annotations"]}
    assert titles == {"faults: none", "faults: crash+restart"}
    # every curve rises from 0 at the floor (a delivery at 0 ms has no place on a log
    # axis), as the axis title says; ticks are labelled in full ("0.5", "1", "2")
    assert all(tr["x"][0] == charts.LATENCY_FLOOR_MS and tr["y"][0] == 0 for tr in lines)
    assert all("below 0.01 drawn at 0.01" in a["title"]["text"] for a in axes)
    assert all(a["ticktext"] == [f"{v:g}" for v in a["tickvals"]] for a in axes)
    assert charts.log_ticks(0.3, 30)[1] == ["0.5", "1", "2", "5", "10", "20"]
    assert charts.log_ticks(0.01, 50)[1] == ["0.01", "0.1", "1", "10"]
    long = charts.latency_cdf(
        {
            **_metrics_doc("r:1"),
            "latency_histogram": [
                {
                    "protocol": "p",
                    "order": "agreed",
                    "faults": "crash+partition+heal+restart",
                    "bucket": 0,
                    "count": 3,
                    "scenarios": ["s"],
                },
                {
                    "protocol": "p",
                    "order": "agreed",
                    "faults": "crash+partition+heal+restart",
                    "bucket": 120,
                    "count": 1,
                    "scenarios": ["s"],
                },
            ],
        }
    )
    assert long is not None
    (title,) = [a["text"] for a in long["layout"]["annotations"]]
    assert "<br>" in title  # a long fault set is broken over lines, not run into the next
    (curve,) = long["data"]
    assert list(curve["x"][:2]) == [0.01, 0.01] and list(curve["y"][:2]) == [0, 0.75]
    # bucket 125 of 20 a decade ends at 10^6.3 ns = 1.995 ms; 25 of 29 deliveries by then
    first = lines[0]
    k = list(first["x"]).index(pytest.approx(10 ** (126 / 20) / 1e6, rel=1e-3))
    assert first["y"][k] == pytest.approx(25 / 29, abs=1e-4)


def test_throughput_is_per_scenario_never_averaged_across_scenarios() -> None:
    fig = charts.throughput(_metrics_doc("r:1"))
    assert fig is not None
    lines = [t for t in fig["data"] if t["mode"] == "lines"]
    by_name = {t["name"]: t for t in lines}
    assert set(by_name) == {"crashy (network.loss=0.0)", "steady (network.loss=0.0)"}
    # newfamily/steady: means over seeds at each size (101, 102 -> 101.5; 81, 82 -> 81.5)
    steady = [t for t in lines if t["name"].startswith("steady") and list(t["x"]) == [3, 5]]
    assert [list(t["y"]) for t in steady] == [[101.5, 81.5]]
    crashy = [t for t in lines if t["name"].startswith("crashy")]
    assert [list(t["y"]) for t in crashy] == [[11.5, 5.5]]
    markers = [t for t in fig["data"] if t["mode"] == "markers"]
    assert sum(len(t["x"]) for t in markers) == 10  # one per run
    colours = [t["line"]["color"] for t in lines]
    assert len(set(colours)) == len(colours)  # no two lines share a colour
    hover = markers[0]["customdata"][0]
    assert hover[0] and hover[1] in (1, 2) and "nodes=" in hover[2]  # run, seed, point
    menu = fig["layout"]["updatemenus"][0]["buttons"]
    assert [b["label"] for b in menu] == [label for _, label in charts.METRICS]
    assert all(len(b["args"][0]["y"]) == len(fig["data"]) for b in menu)


def test_the_report_is_interactive_self_contained_and_links_counterexamples(
    sim_dir: Path, tmp_path: Path
) -> None:
    run, msg, node = _first_remote_delivery(sim_dir)
    check, metrics = _check_doc(run, msg, node), _metrics_doc(run)
    links = diagrams.draw(sim_dir, tmp_path, check, metrics)
    assert links == {run: f"timelines/{run_file_name(run)}"}
    assert (tmp_path / "timelines" / "plotly.min.js").stat().st_size > 1_000_000
    html = render_report(check, metrics, timelines=links, out_dir="lab-out")
    assert html.count("<script src=") == 0  # nothing loaded from elsewhere
    assert len(re.findall(r"plotly\.js v\d", html)) == 1  # plotly.js inlined once
    for div in ("chart-latency", "chart-throughput", "chart-convergence"):
        assert f'id="{div}"' in html
    assert f"{links[run]}#total_order-1" in html
    assert "<details><summary>latency table" in html
    assert "ringcast lab timeline lab-out --run" in html  # runs without a diagram
    timeline = (tmp_path / links[run]).read_text()
    assert 'src="plotly.min.js"' in timeline and '"highlight":"total_order-1"' in timeline


def test_diagram_of_a_simulated_run(sim_dir: Path) -> None:
    table, run, protocol = read_run(sim_dir)
    assert protocol == "basic"
    rows = table.to_pylist()
    _, msg, node = _first_remote_delivery(sim_dir)
    hl = Highlight("total_order-1", "total_order #1", "x", nodes=(node,), msgs=(msg,))
    fig = figure(table, run=run, protocol=protocol, highlights=[hl])
    names = [t["name"] for t in fig["data"]]
    nodes = sorted({r["node"] for r in rows})
    assert fig["layout"]["yaxis"]["ticktext"] == nodes
    views = {(r["view"], tuple(r["members"])) for r in rows if r["kind"] == "view"}
    for vid, members in views:
        assert f"{{{','.join(members)}}} view {vid}" in names
    # a transitional configuration (Totem's "new/t/old") reads as the rings it joins
    assert view_label("5:A/t/1:A", ("A",), True) == "{A} transitional, 1:A to 5:A"
    assert "crash" in names and "restart" in names and "crash (span)" in names
    span = next(t for t in fig["data"] if t["name"] == "crash (span)")
    b = nodes.index("B")
    assert [x for x in span["x"] if x is not None][:2] == [1000.0, 2000.0]
    assert min(y for y in span["y"] if y is not None) < b < max(y for y in span["y"] if y)
    sender = {r["msg"]: r["node"] for r in rows if r["kind"] == "submit"}
    remote = [
        r for r in rows if r["kind"] == "deliver" and sender.get(r["msg"], r["node"]) != r["node"]
    ]
    arrows = next(t for t in fig["data"] if t["name"].startswith("message"))
    assert len(arrows["x"]) == 3 * len(remote)
    ticks = next(t for t in fig["data"] if t["name"] == "deliver")
    assert len(ticks["x"]) == sum(r["kind"] == "deliver" for r in rows)
    mark = next(t for t in fig["data"] if t["name"] == "total_order #1")
    assert mark["y"] == [nodes.index(node), None] and mark["text"][0] == msg
    assert mark["meta"]["highlight"] == "total_order-1"


def test_token_passes_become_arrows(tmp_path: Path) -> None:
    """A token 'sent' is joined to the next 'received' of its sequence number elsewhere."""
    import pyarrow as pa

    from ringcast.trace.schema import SCHEMA

    def row(node: str, t: int, i: int, kind: str, **kw: Any) -> dict[str, Any]:
        return (
            {c: None for c in SCHEMA.names}
            | {"run": "r", "node": node, "t": t, "i": i, "kind": kind}
            | kw
        )

    rows = [
        row("A", 0, 0, "view", view="1", members=["A", "B"], transitional=False),
        row("B", 0, 0, "view", view="1", members=["A", "B"], transitional=False),
        row("A", 10 * MS, 1, "token", detail='{"op":"sent","seq":1}'),
        row("B", 15 * MS, 1, "token", detail='{"op":"received","seq":1}'),
        row("B", 20 * MS, 2, "token", detail='{"op":"sent","seq":2}'),
        row("A", 26 * MS, 2, "token", detail='{"op":"received","seq":2}'),
        row("A", 30 * MS, 3, "token", detail='{"op":"regenerated","seq":3,"reason":"lost"}'),
    ]
    fig = figure(pa.Table.from_pylist(rows, schema=SCHEMA))
    tok = next(t for t in fig["data"] if t["name"] == "token pass")
    x, y = tok["x"], tok["y"]
    segments = {(x[k], y[k], x[k + 1], y[k + 1]) for k in range(0, len(x), 3)}
    assert segments == {(10.0, 0, 15.0, 1), (20.0, 1, 26.0, 0)}  # ms; lanes A=0, B=1
    marks = next(t for t in fig["data"] if t["name"].startswith("token created"))
    assert "regenerated" in marks["text"][0] and "lost" in marks["text"][0]


def test_timeline_command(
    sim_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "one.html"
    assert main(["lab", "timeline", str(sim_dir), "--out", str(out)]) == 0
    html = out.read_text()
    assert re.search(r"plotly\.js v\d", html) and "space-time diagram" in html
    assert main(["lab", "timeline", str(sim_dir), "--run", "nosuch:1"]) == 2
    assert "no run 'nosuch:1'" in capsys.readouterr().err
    assert main(["lab", "timeline", str(tmp_path / "nowhere")]) == 2


def test_report_and_timeline_in_headless_chromium(sim_dir: Path, tmp_path: Path) -> None:
    """The pages load in a real browser with no script error, and every chart renders;
    a counterexample's link opens the diagram focused on it."""
    from ringcast.lab.browser import browser, chromium_path, load

    assert chromium_path(), "Chromium is needed (./dev test installs Debian's package)"
    run, msg, node = _first_remote_delivery(sim_dir)
    check, metrics = _check_doc(run, msg, node), _metrics_doc(run)
    links = diagrams.draw(sim_dir, tmp_path, check, metrics)
    report = tmp_path / "report.html"
    report.write_text(render_report(check, metrics, timelines=links))
    with browser() as b:
        r = load(b, report)
        assert r.errors == [] and r.failed_requests == []
        assert r.charts == 3 and r.rendered == 3
        r = load(b, tmp_path / links[run], fragment="total_order-1")
        assert r.errors == [] and r.charts == 1 and r.rendered == 1
        assert r.focus is not None and r.focus[1] - r.focus[0] < 1000  # zoomed on it


def test_sampled_diagrams_cover_every_protocol() -> None:
    """Ten scenarios per protocol: the sample's first MAX_SAMPLE runs still name every
    protocol (a sample by run name alone stopped inside the third), and per scenario
    the run that saw a fault is the one drawn."""
    protocols = ["basic", "gms", "raincore", "totem", "tribes"]
    runs = [
        {
            "run": f"{p}_s{s:02d}:{seed}",
            "protocol": p,
            "scenario": f"s{s:02d}",
            "faults": "crash" if seed == 2 else "none",
        }
        for p in protocols
        for s in range(10)
        for seed in (1, 2)
    ]
    picked = diagrams.sample({"runs": runs})
    assert len(picked) == 50 and len(set(picked)) == 50
    assert all(r.endswith(":2") for r in picked)  # the run with a fault
    cut = picked[: diagrams.MAX_SAMPLE]
    assert {r.split("_")[0] for r in cut} == set(protocols)
    assert [r.split("_")[0] for r in picked[:5]] == protocols  # round-robin
    # a protocol with one scenario keeps it; the others go on filling the sample
    few = [r for r in runs if r["protocol"] != "tribes" or r["scenario"] == "s00"]
    picked = diagrams.sample({"runs": few})[: diagrams.MAX_SAMPLE]
    assert "tribes_s00:2" in picked and len(picked) == diagrams.MAX_SAMPLE


def test_a_diagram_opens_on_its_faults_and_their_aftermath(sim_dir: Path) -> None:
    """B crashes at 1,000 ms and restarts at 2,000 ms of 3,000; the others install
    their view without B at 1,200 ms and B is back in by 2,001 ms: the diagram opens
    on that stretch with a margin before the crash, not on t=0."""
    table, run, protocol = read_run(sim_dir)
    fig = figure(table, run=run, protocol=protocol)
    x0, x1 = fig["layout"]["xaxis"]["range"]
    assert 800 <= x0 < 1000  # the steady state just before the crash shows
    assert 2000 < x1 < 2300  # through the views that follow the restart
    assert "the faults and after" in fig["layout"]["title"]["text"]
    # on its own line below the run's name: a long name is not cut off at the edge
    assert "<br>" in fig["layout"]["title"]["text"]
    # without faults: from t=0
    rows = [r for r in table.to_pylist() if r["kind"] != "fault"]
    import pyarrow as pa

    calm = figure(pa.Table.from_pylist(rows, schema=table.schema), run=run)
    assert calm["layout"]["xaxis"]["range"][0] == 0


def test_opening_range() -> None:
    from ringcast.lab.spacetime import FAULT_MARGIN_MS, opening_range

    assert opening_range([], [0.0, 5.0], 100.0) is None
    # the view 4 s after a 1 s fault is its aftermath; a view before it is not
    assert opening_range([1000.0], [0.0, 500.0, 5000.0], 9000.0) == (600.0, 5400.0)
    # clipped to the run, margin at least FAULT_MARGIN_MS
    assert opening_range([20.0], [], 60.0) == (0.0, 60.0)
    assert opening_range([500.0], [510.0], 10_000.0) == (
        500.0 - FAULT_MARGIN_MS,
        510.0 + FAULT_MARGIN_MS,
    )


ARTIFACTS = Path(os.environ.get("RINGCAST_ARTIFACTS") or ROOT / "artifacts") / "screenshots"
"""Where the browser test leaves its screenshots for a person to look at: ``artifacts/``
at the top of the checkout (ignored by git), or ``$RINGCAST_ARTIFACTS``."""

SECTIONS_JS = """() => {
  const out = [];
  for (const h of document.querySelectorAll('h2')) {
    let text = '', charts = 0, drawn = 0, tables = 0, height = 0;
    for (let e = h.nextElementSibling; e && e.tagName !== 'H2'; e = e.nextElementSibling) {
      text += e.innerText || '';
      height += e.getBoundingClientRect().height;
      const divs = e.classList.contains('plotly-graph-div') ? [e]
        : Array.from(e.querySelectorAll('.plotly-graph-div'));
      charts += divs.length;
      drawn += divs.filter(d => d._fullData && d._fullData.length
                                && d.querySelector('.main-svg')).length;
      tables += e.tagName === 'TABLE' ? 1 : e.querySelectorAll('table').length;
    }
    out.push({id: h.id, title: h.innerText, text: text.trim().length, height: height,
              charts: charts, drawn: drawn, tables: tables});
  }
  return {sections: out, body: document.body.innerText,
          overflow: document.documentElement.scrollWidth - window.innerWidth};
}"""


def test_report_screenshots_in_headless_chromium(sim_dir: Path, tmp_path: Path) -> None:
    """Screenshots of the report (the window, the whole page) and of a diagram, kept
    under ARTIFACTS; every section of the report is there with something in it (its
    chart drawn, or its table), no error text, nothing wider than the window."""
    from ringcast.lab.browser import browser, chromium_path, load

    assert chromium_path(), "Chromium is needed (./dev test installs Debian's package)"
    run, msg, node = _first_remote_delivery(sim_dir)
    check, metrics = _check_doc(run, msg, node), _metrics_doc(run)
    links = diagrams.draw(sim_dir, tmp_path, check, metrics)
    report = tmp_path / "report.html"
    report.write_text(render_report(check, metrics, timelines=links))
    shots = {
        "report-window.png": (report, False),
        "report-page.png": (report, True),
        "timeline.png": (tmp_path / links[run], False),
    }
    for old in shots:
        (ARTIFACTS / old).unlink(missing_ok=True)
    with browser() as b:
        results = {
            name: load(b, page, screenshot=ARTIFACTS / name, full_page=full, probe=SECTIONS_JS)
            for name, (page, full) in shots.items()
        }
    for name, r in results.items():
        assert r.errors == [] and r.rendered == r.charts, name
        png = (ARTIFACTS / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000, name
    page = results["report-page.png"].probe
    sections = {s["id"]: s for s in page["sections"]}
    assert set(sections) == {"properties", "latency", "throughput", "convergence", "runs"}
    for s in sections.values():
        assert s["text"] > 0 and s["height"] > 50, s
        assert s["charts"] == s["drawn"], s
    for sid in ("latency", "throughput", "convergence"):
        assert sections[sid]["charts"] == 1, sections[sid]
    assert sections["properties"]["tables"] + sections["runs"]["tables"] >= 2
    assert not re.search(r"Traceback|\bNaN\b|\bundefined\b|\[object Object\]", page["body"])
    assert page["overflow"] <= 0, "the report is wider than the window"
    timeline = results["timeline.png"]
    assert timeline.focus is not None and timeline.focus[0] > 0  # opens on the crash
