"""The lab catches a planted bug in Tribes with its unchanged checks: a copy in which a
node never forwards a token it cannot improve (:func:`lab_buggy.register_tribes_lazy`)
is swept beside the real protocol over the bundled crash scenario."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lab_buggy
import pytest

from ringcast.lab.grid import load_sweep
from ringcast.lab.pipeline import check_paths
from ringcast.lab.sweep import run_sweep

try:
    from pyspark import cloudpickle
except ImportError:  # pragma: no cover - pyspark always bundles it
    import cloudpickle  # type: ignore[no-redef]

cloudpickle.register_pickle_by_value(lab_buggy)

CRASH = Path(__file__).resolve().parents[2] / "scenarios" / "tribes" / "crash.toml"


@pytest.fixture(scope="module")
def lazy_swept(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    lab_buggy.register_tribes_lazy()
    d = tmp_path_factory.mktemp("tribes_lazy")
    # 3.2 s after the crash, more than convergence's bound (10 x member_drop_time)
    text = CRASH.read_text().replace('duration = "2s"', 'duration = "4s"')
    (d / "tribes.toml").write_text(text)
    buggy = text.replace('protocol = "tribes"', f'protocol = "{lab_buggy.TRIBES_LAZY}"')
    (d / "buggy.toml").write_text(buggy.replace('"tribes_crash"', '"tribes_crash_lazy"'))
    (d / "sweep.toml").write_text(
        'name = "lazy"\nscenarios = ["tribes.toml", "buggy.toml"]\nseeds = 2\n'
    )
    out = d / "out"
    run_sweep(
        spark, load_sweep(d / "sweep.toml"), out, partitions=2,
        setup=lab_buggy.register_tribes_lazy,
    )  # fmt: skip
    return out


def test_tribes_not_forwarding_unimproved_tokens_is_caught(spark: Any, lazy_swept: Path) -> None:
    doc = check_paths(spark, [lazy_swept])
    assert doc["ok"] is False
    props = doc["properties"]
    conv = props["convergence"]
    assert conv["status"] == "violated"
    # the same scenario and seeds: Tribes converges in every run, the broken copy never
    assert conv["protocols"]["tribes"] == {"claimed": True, "runs_checked": 2, "violations": 0}
    assert conv["protocols"][lab_buggy.TRIBES_LAZY]["runs_violated"] == 2
    for c in conv["counterexamples"]:
        assert c["protocol"] == lab_buggy.TRIBES_LAZY
        assert c["run"].startswith("tribes_crash_lazy@")
        # the survivors stay on the view that still lists the crashed member C
        assert "never settled" in c["note"] and "final members A+B+C+D+E," in c["note"]
    # every other claim holds for both (views that are confirmed still agree)
    assert {n for n, p in props.items() if p["status"] == "violated"} == {"convergence"}
    for name in ("view_agreement", "leader_agreement", "integrity", "fifo"):
        assert props[name]["protocols"]["tribes"]["violations"] == 0
