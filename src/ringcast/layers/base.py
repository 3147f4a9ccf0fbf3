"""The one interface every sans-IO layer implements (events go up, effects go down).

A layer sits between the protocol machine (above) and the host (below). What reaches
it is one of four things, and each answer is a pair ``(up, down)``: events to hand to
the layer above, effects to hand to the layer below.

- :meth:`Layer.start` at ``Start`` (before the protocol sees it): effects only;
- :meth:`Layer.up`: an event coming from below, only of the types listed in
  :attr:`Layer.up_types` (a ``Received`` datagram, a ``SendFailed`` or ``Suspected``
  from a lower layer, ...);
- :meth:`Layer.down`: an effect coming from above, only of the types listed in
  :attr:`Layer.down_types` (every other effect passes the layer untouched, at no cost);
- :meth:`Layer.timer`: one of the layer's own timers (a name starting with
  :attr:`Layer.timer_prefix`) fired.

A layer passes what is not its business on unchanged. :class:`~ringcast.layers.Stack`
composes any number of them under a protocol.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from ringcast.core.effects import Effect
from ringcast.core.events import Event

Up = list[Event]
Down = list[Effect]


class Layer(Protocol):
    """What :class:`~ringcast.layers.Stack` needs of a layer."""

    timer_prefix: ClassVar[str]
    """Timers whose name starts with this belong to the layer (``"rt:"``, ``"fd:"``)."""
    down_types: ClassVar[frozenset[type]]
    """The effect types :meth:`down` wants to see; others pass the layer untouched."""
    up_types: ClassVar[frozenset[type]]
    """The event types :meth:`up` wants to see; others pass the layer untouched."""

    def start(self, now: int) -> Down: ...

    def up(self, event: Event, now: int) -> tuple[Up, Down]: ...

    def down(self, effect: Effect, now: int) -> tuple[Up, Down]: ...

    def timer(self, name: str, now: int) -> tuple[Up, Down]: ...
