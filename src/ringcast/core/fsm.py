"""One state-machine convention for every protocol family.

A protocol whose source (a paper, a reference implementation) has a state diagram
writes it down as a :class:`TransitionTable`: for each ``(state, event)`` pair the
*action* the machine runs (a method name) and every state that action may end in. The
machine then

1. looks the pair up with :meth:`TransitionTable.lookup`; a pair the table does not
   list is an event the protocol does not expect in that state: the machine drops it
   and returns :func:`unlisted` (a ``drop`` trace row), its state unchanged;
2. runs the action;
3. checks where it landed with :meth:`TransitionTable.check`; a state the table does not
   list for that pair is a bug of the machine, never of the peer: it is recorded as an
   ``invariant`` trace row (which the lab reports) and the machine carries on. A
   machine never raises out of ``handle()`` because of a packet.

:meth:`TransitionTable.mermaid` renders the table as the Mermaid ``stateDiagram-v2``
embedded in the protocol's page under ``docs/protocols/``; the page's test compares
the block with the rendering, so the diagram cannot drift from the code.

:class:`Driver` is the one place that does steps 1-3 for every family: a machine builds
one in ``__init__`` from its table, itself (the driver reads its ``state``) and its
actions as bound methods, and raises each table event with :meth:`Driver.step`. Every
action has one signature, ``action(now, *args) -> list[Effect]``; an ``ignore`` row runs
nothing.

The driver also writes the machine's ``StateChanged`` (the trace's ``state`` row), from
one ``status`` method the machine gives it: :meth:`Driver.state_changed` when the family
reports at a moment of its own (a move, a token), :meth:`Driver.report_change` when it
reports whenever its status differs from the last one reported.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from ringcast.core.effects import Effect, Record, StateChanged


class TableEnum(enum.Enum):
    """The base of a family's ``State`` and ``Ev`` enums.

    A member hashes by identity (it is a singleton and compares by identity), not by
    its name as :class:`enum.Enum` does in Python code: the driver hashes the state and
    the event of every step, and this makes that lookup several times cheaper.
    """

    __hash__ = object.__hash__


S = TypeVar("S", bound=Hashable)
E = TypeVar("E", bound=Hashable)
S_co = TypeVar("S_co", bound=Hashable, covariant=True)


@dataclass(frozen=True, slots=True)
class Transition(Generic[S]):
    """What a ``(state, event)`` pair does: run ``action``; end in one of ``targets``."""

    action: str
    targets: tuple[S, ...]


IGNORE = "ignore"
"""The conventional action name of a pair that is listed but does nothing (a stale
timer of a state the node has left); not drawn in diagrams."""


def _label(x: object) -> str:
    value = getattr(x, "value", x)
    return str(value)


class TransitionTable(Generic[S, E]):
    """An explicit transition table: ``(state, event) -> Transition``.

    ``states`` and ``events`` give the order in which they are drawn and listed;
    ``initial`` the states a node boots in (drawn as ``[*] --> state``); ``label``
    names a state in diagrams and trace rows and ``event_label`` an event.
    """

    def __init__(
        self,
        name: str,
        rows: Mapping[tuple[S, E], Transition[S]],
        *,
        states: Iterable[S],
        events: Iterable[E],
        initial: Iterable[tuple[S, str]] = (),
        label: Callable[[S], str] = _label,
        event_label: Callable[[E], str] = _label,
    ):
        self.name = name
        self.rows: dict[tuple[S, E], Transition[S]] = dict(rows)
        self.states: tuple[S, ...] = tuple(states)
        self.events: tuple[E, ...] = tuple(events)
        self.initial: tuple[tuple[S, str], ...] = tuple(initial)
        self.label = label
        self.event_label = event_label
        known = set(self.states)
        for (state, event), tr in self.rows.items():
            if state not in known:
                raise ValueError(f"{name}: row for unknown state {state!r}")
            if event not in self.events:
                raise ValueError(f"{name}: row for unknown event {event!r}")
            for target in tr.targets:
                if target not in known:
                    raise ValueError(f"{name}: {state!r} on {event!r} targets unknown {target!r}")
        self._by_state: dict[S, dict[E, Transition[S]]] = {s: {} for s in self.states}
        for (state, event), tr in self.rows.items():
            self._by_state[state][event] = tr

    def lookup(self, state: S, event: E) -> Transition[S] | None:
        """The transition listed for ``(state, event)``, or None if the table has none."""
        return self.rows.get((state, event))

    def row(self, state: S) -> dict[E, Transition[S]]:
        """Every event ``state`` lists, with its transition (one dict per state, cached)."""
        return self._by_state[state]

    def check(self, before: S, event: E, after: S) -> Record | None:
        """None if ``after`` is a listed target of ``(before, event)``; otherwise the
        ``invariant`` trace row that reports the machine's own bug (it carries on)."""
        tr = self.rows.get((before, event))
        if tr is not None and (after in tr.targets or (after == before and tr.action == IGNORE)):
            return None
        return Record.of(
            "invariant",
            error="transition not in table",
            table=self.name,
            event=self.event_label(event),
            before=self.label(before),
            after=self.label(after),
        )

    def unlisted(self, state: S, event: E, **fields: object) -> Record:
        """The ``drop`` row for an event the table does not list in ``state``."""
        return Record.of(
            "drop",
            reason=f"{self.event_label(event)} in {self.label(state)}",
            **fields,
        )

    def mermaid(self, *, self_loops: bool = True, fenced: bool = False) -> str:
        """The table as a Mermaid ``stateDiagram-v2``.

        One edge per ``(state, target)`` pair, labelled with the events that lead
        there; ``ignore`` rows are not drawn, nor a state's edges to itself unless
        ``self_loops``. ``fenced`` wraps the diagram in a Markdown code fence.
        """
        lines = ["stateDiagram-v2"]
        for state, why in self.initial:
            lines.append(f"    [*] --> {self.label(state)}: {why}")
        edges: dict[tuple[S, S], list[str]] = {}
        for state in self.states:
            for event in self.events:
                tr = self.rows.get((state, event))
                if tr is None or tr.action == IGNORE:
                    continue
                for target in tr.targets:
                    if target == state and not self_loops:
                        continue
                    labels = edges.setdefault((state, target), [])
                    name = self.event_label(event)
                    if name not in labels:
                        labels.append(name)
        for (src, dst), labels in edges.items():
            lines.append(f"    {self.label(src)} --> {self.label(dst)}: {', '.join(labels)}")
        body = "\n".join(lines) + "\n"
        return f"```mermaid\n{body}```\n" if fenced else body


class HasState(Protocol[S_co]):
    """A machine as the driver sees it: its current state (an attribute or a property)."""

    @property
    def state(self) -> S_co: ...


Action = Callable[..., list[Effect]]
"""An action: a bound method of the machine, called as ``action(now, *args)``."""

Status = Callable[[], dict[str, Any]]
"""A machine's status: the fields of its ``StateChanged``, in the order they are written."""


class Driver(Generic[S, E]):
    """Runs a machine on a :class:`TransitionTable` (the module's steps 1-3), or on one
    table per role given as a mapping from each state to the table of its role.

    ``machine.state`` is the machine's current state; ``actions`` maps every action name
    the table uses (but ``ignore``) to the machine's bound method. :meth:`step` looks the
    ``(state, event)`` pair up, returns the ``drop`` row of an unlisted pair (counted in
    :attr:`dropped`), runs the action and appends the ``invariant`` row of a landing
    the row does not list.

    The check is made against the innermost event being handled. A machine that moves
    in one place (Totem's ``_set_state``) reports each move with :meth:`moved`, so an
    action that passes through several states is checked move by move; otherwise the
    state the action ends in is checked when it returns (staying must be listed too,
    unless the row is ``ignore``). An action that raises another event (a ``step`` inside
    a ``step``) ends the enclosing action's segment there: what it did so far is checked,
    and after the inner step it is checked again only if it moves on.
    """

    __slots__ = (
        "_bound",
        "_event",
        "_m",
        "_reported",
        "_resumed",
        "_start",
        "_status",
        "dropped",
        "tables",
    )

    def __init__(
        self,
        table: TransitionTable[S, E] | Mapping[S, TransitionTable[S, E]],
        machine: HasState[S],
        actions: Mapping[str, Action],
        *,
        status: Status | None = None,
    ):
        if isinstance(table, TransitionTable):
            self.tables: dict[S, TransitionTable[S, E]] = dict.fromkeys(table.states, table)
        else:  # one table per role, each for the states of that role (GMS)
            self.tables = dict(table)
        self.dropped = 0
        self._m = machine
        self._bound: dict[tuple[S, E], tuple[Action | None, tuple[S, ...]]] = {}
        for t in {id(t): t for t in self.tables.values()}.values():
            missing = sorted({tr.action for tr in t.rows.values()} - {IGNORE} - set(actions))
            if missing:
                raise ValueError(f"{t.name}: no method for actions {missing}")
            for key, tr in t.rows.items():
                if self.tables.get(key[0]) is t:
                    action = None if tr.action == IGNORE else actions[tr.action]
                    self._bound[key] = (action, tr.targets)
        # The step in progress (the innermost): its event, the state its current segment
        # started in, and whether that segment follows a move or an inner step. The
        # enclosing steps' are kept by the calls of step() on Python's stack.
        self._event: E | None = None
        self._start: S | None = None
        self._resumed = False
        self._status = status
        self._reported: dict[str, Any] | None = None

    def lists(self, state: S, event: E) -> bool:
        """Whether the table lists ``event`` in ``state`` (an ``ignore`` row included)."""
        return (state, event) in self._bound

    def step(
        self, event: E, now: int, *args: Any, drop: Mapping[str, object] | None = None
    ) -> list[Effect]:
        """Handle table event ``event``: the action's effects, or the ``drop`` row (with
        the fields ``drop`` gives, such as the sender of the message)."""
        m = self._m
        before = m.state
        entry = self._bound.get((before, event))
        if entry is None:
            self.dropped += 1
            return [self.tables[before].unlisted(before, event, **(drop or {}))]
        action, targets = entry
        if action is None:  # an ignore row
            return []
        if self._event is not None:  # raised inside another action
            return self._inner(event, before, action, targets, now, args)
        self._event, self._start, self._resumed = event, before, False
        try:
            out = action(now, *args)
        finally:  # nothing of the step stays behind, even when the action raised
            start, resumed = self._start, self._resumed
            self._event, self._start, self._resumed = None, None, False
        after = m.state
        if resumed:  # the action moved, or raised another event: check what followed
            if after != start:
                bad = self.tables[start].check(start, event, after)  # type: ignore[index]
                if bad is not None:
                    out.append(bad)
        elif after not in targets:  # the table is the specification: say so, and carry on
            out.append(self.tables[before].check(before, event, after))  # type: ignore[arg-type]
        return out

    def _inner(
        self,
        event: E,
        before: S,
        action: Action,
        targets: tuple[S, ...],
        now: int,
        args: tuple[Any, ...],
    ) -> list[Effect]:
        """:meth:`step` for an event raised inside another action: that action's segment
        ends here, and goes on from where this one leaves the machine."""
        outer = self._event
        bad = self._segment(before)
        self._event, self._start, self._resumed = event, before, False
        try:
            out = action(now, *args)
        finally:
            start, resumed = self._start, self._resumed
            self._event = outer
        after = self._m.state
        self._start, self._resumed = after, True
        if bad is not None:
            out.insert(0, bad)
        if resumed:
            if after != start:
                bad = self.tables[start].check(start, event, after)  # type: ignore[index]
                if bad is not None:
                    out.append(bad)
        elif after not in targets:
            out.append(self.tables[before].check(before, event, after))  # type: ignore[arg-type]
        return out

    def state_changed(self, **why: object) -> StateChanged:
        """The machine's ``StateChanged``: its status, then ``why`` (what this report
        adds, such as the state it left or its cause)."""
        if self._status is None:
            raise TypeError("this machine's driver was built without status=")
        fields = self._status()
        self._reported = fields
        return StateChanged.of(**fields, **why)

    def report_change(self, out: list[Effect]) -> None:
        """Append the machine's ``StateChanged`` to ``out`` if its status differs from
        the last one reported."""
        if self._status is None:
            raise TypeError("this machine's driver was built without status=")
        fields = self._status()
        if fields != self._reported:
            self._reported = fields
            out.append(StateChanged.of(**fields))

    def moved(self, new: S) -> Record | None:
        """Check a move to ``new`` against the event being handled (None outside a
        step, or when the move is listed); call it before the state changes."""
        if self._event is None:
            return None
        return self._segment(new)

    def _segment(self, now_in: S) -> Record | None:
        start = self._start
        self._start = now_in
        self._resumed = True
        if now_in == start:
            return None
        return self.tables[start].check(start, self._event, now_in)  # type: ignore[index, arg-type]


def unlisted(state: str, event: str, **fields: object) -> Record:
    """A ``drop`` row for a machine without a table (an event it does not expect)."""
    return Record.of("drop", reason=f"{event} in {state}", **fields)
