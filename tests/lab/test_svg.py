"""The report's inline SVG charts."""

from __future__ import annotations

import re

from ringcast.lab.svg import strip_chart


def _label_rows(svg: str, names: list[str]) -> list[str]:
    """The y of each group's label, in group order."""
    ys = []
    for name in names:
        m = re.search(rf'<text x="[\d.]+" y="([\d.]+)"[^>]*>{re.escape(name)}</text>', svg)
        assert m, name
        ys.append(m.group(1))
    return ys


def test_strip_chart_labels_alternate_lines_only_when_crowded() -> None:
    few = {"crash": [1.0, 2.0], "heal": [3.0]}
    ys = _label_rows(strip_chart("t", few, "ms"), list(few))
    assert len(set(ys)) == 1
    many = {f"raincore/partition{k}": [float(k)] for k in range(12)}
    ys = _label_rows(strip_chart("t", many, "ms"), list(many))
    assert ys[0::2] == [ys[0]] * 6 and ys[1::2] == [ys[1]] * 6 and ys[0] != ys[1]
    assert "<circle" in strip_chart("t", many, "ms")
