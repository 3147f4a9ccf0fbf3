"""The token multicast's flow control: fair share, byte bound, bounded queue, busy eating,
and the lock granted only in Agreement."""

from __future__ import annotations

from ringcast.core.effects import Backpressure, Deliver, LockGranted, Record, StateChanged
from ringcast.core.events import LockRequest, Submit
from ringcast.protocols.raincore._messages import TOKEN_SIGNATURE, Demand, Token
from ringcast.protocols.raincore._state import ViewState
from ringcast.protocols.raincore.services import TokenMulticast, message_size

from .harness import MS, Net

KB = b"x" * 1024


def service(**kw: int) -> TokenMulticast:
    args = {"max_token_messages": 64, "max_token_bytes": 48 * 1024, "max_pending": 512}
    args.update(kw)
    return TokenMulticast("A", 1, **args)


def token(*demand: Demand, nodes: tuple[str, ...] = ("A", "B", "C", "D")) -> Token:
    return Token(TOKEN_SIGNATURE, 10, nodes, 0, 0, 1, (), demand)


def fill(tm: TokenMulticast, n: int, payload: bytes = b"x") -> list:
    out = []
    for k in range(n):
        out.extend(tm.submit(Submit(f"A:{k}", payload)))
    return out


def test_share_is_proportional_to_the_backlogs_on_the_token() -> None:
    tm = service()
    fill(tm, 100)
    tok = token(Demand("B", 200), Demand("C", 100))
    assert tm.share(tok)[0] == 16  # 64 * 100 / 400
    passed, out = tm.on_pass(tok)
    assert len(passed.messages) == 16
    assert [type(e) for e in out] == [Deliver] * 16
    # Its own backlog (before it put messages on) is reported; the others' are kept.
    assert set(passed.demand) == {Demand("B", 200), Demand("C", 100), Demand("A", 100)}


def test_alone_with_a_backlog_a_node_may_fill_the_token() -> None:
    tm = service()
    fill(tm, 100)
    passed, _ = tm.on_pass(token())
    assert len(passed.messages) == 64


def test_a_small_backlog_still_gets_one_message_a_rotation() -> None:
    tm = service()
    fill(tm, 1)
    passed, _ = tm.on_pass(token(Demand("B", 10_000)))
    assert len(passed.messages) == 1


def test_departed_nodes_lose_their_demand() -> None:
    tm = service()
    fill(tm, 10)
    passed, _ = tm.on_pass(token(Demand("E", 10_000)))
    assert len(passed.messages) == 10
    assert passed.demand == (Demand("A", 10),)


def test_the_token_never_carries_more_bytes_than_max_token_bytes() -> None:
    tm = service(max_token_bytes=10_000)
    fill(tm, 50, KB)
    passed, _ = tm.on_pass(token())
    size = sum(message_size(m.origin, m.msg_id, m.payload) for m in passed.messages)
    assert len(passed.messages) == 10_000 // message_size("A", "A:10", KB)
    assert size <= 10_000


def test_a_message_that_can_never_fit_is_refused() -> None:
    tm = service(max_token_bytes=2048)
    out = tm.submit(Submit("A:1", b"y" * 4096))
    assert [type(e) for e in out] == [Record] and out[0].kind == "drop"
    assert not tm.pending


def test_backpressure_at_the_bound_and_released_at_half() -> None:
    tm = service(max_pending=40, max_token_messages=8)
    assert fill(tm, 39) == []
    assert tm.submit(Submit("A:40", b"x")) == [Backpressure(True)]
    assert len(tm.pending) == 40
    released = []
    for _ in range(3):  # 8 messages a pass: 32, 24, 16 left
        tok, out = tm.on_pass(token())
        released += [e for e in out if type(e) is Backpressure]
        tm.on_token(tok)  # its messages came round
    assert released == [Backpressure(False)]
    assert len(tm.pending) == 16


def _holds(net: Net, node: str) -> list[int]:
    """How long ``node`` kept the token each time it had it."""
    got = [t for t, e in net.effects[node] if type(e) is StateChanged]
    sends = [
        t
        for t, e in net.effects[node]
        if type(e) is Record and e.kind == "token" and e.fields["op"] == "sent"
    ]
    return [s - g for g, s in zip(got, sends, strict=False)]


def test_the_token_is_held_only_busy_eating_timeout_while_traffic_flows() -> None:
    net = Net(("A", "B", "C"), {"eating_timeout": 4 * MS, "busy_eating_timeout": 1 * MS})
    net.start().run(30)
    assert set(_holds(net, "B")) == {4 * MS}
    net.feed("B", Submit("B:1", b"x"))
    net.run(60)
    holds = _holds(net, "B")
    assert 1 * MS in holds[-4:]  # while its message was on the token
    assert holds[-1] == 4 * MS  # idle again once it came back


def test_the_lock_is_granted_only_in_agreement() -> None:
    net = Net(("A", "B", "C", "D"), {"lock_max_hold": 2 * MS}).start().run(1)
    net.crash("B")  # A's token to B fails: the ring goes through Chaos and Reserve
    net.feed("D", LockRequest())
    net.run(200)
    granted = [t for t, e in net.effects["D"] if type(e) is LockGranted]
    assert granted
    states = [(t, e.fields["view_state"]) for t, e in net.effects["D"] if type(e) is StateChanged]
    eaten_in = [v for t, v in states if t <= granted[0]]
    assert ViewState.CHAOS.value in eaten_in  # D held the token in Chaos before...
    assert eaten_in[-1] == ViewState.AGREEMENT.value  # ...and was granted in Agreement
