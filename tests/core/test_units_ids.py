from __future__ import annotations

import pytest

from ringcast.core.ids import View, check_node_id
from ringcast.core.units import MS, US, S, format_duration, parse_duration


@pytest.mark.parametrize(
    "raw,ns",
    [
        ("10ms", 10 * MS),
        ("1.5s", 1500 * MS),
        ("20us", 20 * US),
        ("7ns", 7),
        (42, 42),
        ("2min", 120 * S),
    ],
)
def test_parse_duration(raw: object, ns: int) -> None:
    assert parse_duration(raw) == ns


@pytest.mark.parametrize("raw", ["10", "ms", "-1ms", "1h", True, -5, None, "1.2.3s"])
def test_bad_durations_name_the_key(raw: object) -> None:
    with pytest.raises(ValueError, match=r"settings\.x"):
        parse_duration(raw, "settings.x")


def test_format_duration() -> None:
    assert format_duration(1500 * MS) == "1.5s"
    assert format_duration(250 * US) == "250us"


@pytest.mark.parametrize("bad", ["", "a b", "x" * 65, 3, "tab\there"])
def test_bad_node_ids(bad: object) -> None:
    with pytest.raises(ValueError):
        check_node_id(bad)


def test_view_membership() -> None:
    v = View("1", ("A", "B"))
    assert "A" in v and "C" not in v


def test_leader_of_view_names_the_first_member_of_regular_views_only() -> None:
    from ringcast.core.effects import InstallView, LeaderChanged, install_view, leader_of_view

    regular = View("9:A", ("A", "B", "C"))
    assert regular.leader == "A"
    assert install_view(regular) == [InstallView(regular)]  # no leader behind one's back
    assert leader_of_view(regular) == [LeaderChanged("A", "9:A")]
    transitional = View("9:A/t/5:A", ("A", "B"), True)
    assert leader_of_view(transitional) == []
    empty = View("1", ())
    assert empty.leader is None
    assert leader_of_view(empty) == []
