"""The application API, asyncio first.

::

    async with Group.join("cluster.toml", "A") as g:   # returns with a view installed
        events = g.events()                            # events are queued from here on
        await g.multicast(b"hello", order="agreed")
        async for ev in events:
            if isinstance(ev, Delivery): ...
            elif isinstance(ev, ViewChange): ...
            elif isinstance(ev, LeaderChange): ...
        async with g.lock():
            ...

``multicast`` waits while the protocol's flow control says so (``Backpressure``),
so a sender can never queue without bound. ``events()`` yields deliveries, view
changes (transitional and regular) and leader changes in the order the protocol
produced them; events
are queued from the first call of ``events()`` or ``batches()`` (or
:meth:`Group.subscribe`), up to ``max_events``; beyond that the oldest are dropped and
counted in ``events_lost``. What goes wrong raises a :class:`~ringcast.runtime.errors.GroupError`
(see :mod:`ringcast.runtime.errors`).
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from ringcast.core.effects import Deliver
from ringcast.core.events import ORDERS
from ringcast.core.ids import View
from ringcast.runtime.config import ClusterConfig, load_config
from ringcast.runtime.errors import GroupClosed, JoinTimeout, LockUnavailable
from ringcast.runtime.host import NodeHost

Delivery = Deliver
"""An application message delivered to this node: ``msg_id``, ``payload``, ``order``,
``sender``. It is the protocol's own :class:`~ringcast.core.effects.Deliver`, handed over
as it is (no copy a delivery)."""


@dataclass(frozen=True, slots=True)
class ViewChange:
    """A configuration installed at this node (``transitional`` for Totem's EVS ones)."""

    view_id: str
    members: tuple[str, ...]
    transitional: bool


@dataclass(frozen=True, slots=True)
class LeaderChange:
    """The protocol now names ``leader`` as the group's leader (coordinator) in ``view_id``."""

    leader: str | None
    view_id: str | None


GroupEvent = Delivery | ViewChange | LeaderChange


class Group:
    """A joined group member. Create with ``async with Group.join(config, node_id)``."""

    def __init__(self, config: ClusterConfig, node_id: str, *, max_events: int = 100_000):
        self.config = config
        self.host = NodeHost(config, node_id, listener=self)
        self.max_events = max_events
        self.events_lost = 0
        self._queue: collections.deque[GroupEvent] = collections.deque()
        self._subscribed = False
        self._wakeup = asyncio.Event()
        self._unblocked = asyncio.Event()
        self._unblocked.set()
        self._lock_waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._lock_mutex = asyncio.Lock()
        self._view_seen = asyncio.Event()
        self._closed = False

    # ------------------------------------------------------------ joining

    @classmethod
    def join(
        cls,
        config: ClusterConfig | str | Path,
        node_id: str,
        *,
        wait_view: bool = True,
        view_timeout: float = 30.0,
        max_events: int = 100_000,
    ) -> _Joining:
        """``async with Group.join(config, node_id) as g``: start the node and, unless
        ``wait_view`` is false, wait until it installed its first regular view
        (:class:`~ringcast.runtime.errors.JoinTimeout` after ``view_timeout`` seconds);
        leave on exit.

        Raises :class:`~ringcast.runtime.errors.ConfigError` for a bad cluster file,
        :class:`~ringcast.runtime.errors.UnknownNode` for a node it lacks,
        :class:`~ringcast.runtime.errors.KeyFileError` for a missing or bad key and
        :class:`~ringcast.runtime.errors.AddressInUse` when the node's address is taken:
        all :class:`~ringcast.runtime.errors.GroupError`.
        """
        cfg = config if isinstance(config, ClusterConfig) else load_config(config)
        group = cls(cfg, node_id, max_events=max_events)
        return _Joining(group, view_timeout if wait_view else None)

    async def start(self) -> None:
        await self.host.start()

    async def _first_view(self, timeout: float) -> None:
        try:
            await self.wait_view(timeout=timeout)
        except TimeoutError:
            addrs = ", ".join(f"{h}:{p}" for h, p in self.host.node.addresses)
            raise JoinTimeout(
                f"node {self.node_id} ({addrs}): no view installed within {timeout:g} s; "
                "check that the cluster's other nodes run with the same cluster file and "
                "key and that their addresses are reachable from here"
            ) from None

    async def leave(self) -> None:
        """Leave the group gracefully and close the node (idempotent)."""
        await self._close(graceful=True)

    async def close(self) -> None:
        """Close the node without leaving the group, as when its process ends: the
        others learn of it by its silence. Its trace is written out (idempotent)."""
        await self._close(graceful=False)

    async def _close(self, *, graceful: bool) -> None:
        if self._closed:
            return
        self._closed = True
        await self.host.stop(graceful=graceful)
        self._wakeup.set()
        self._unblocked.set()
        for f in self._lock_waiters:
            if not f.done():
                f.set_exception(GroupClosed(f"node {self.node_id} left the group"))

    # ------------------------------------------------------------ properties

    @property
    def node_id(self) -> str:
        return self.host.node_id

    @property
    def view(self) -> View | None:
        """The configuration installed last (None before the first)."""
        return self.host.view

    @property
    def members(self) -> tuple[str, ...]:
        v = self.host.view
        return v.members if v is not None else ()

    @property
    def leader(self) -> str | None:
        """The protocol's leader if it names one, else the first member of the view."""
        return self.host.leader

    # ------------------------------------------------------------ multicast

    async def multicast(self, payload: bytes, order: str = "agreed") -> str:
        """Multicast ``payload`` to the group; waits while flow control blocks. Returns its id."""
        if order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
        if not isinstance(payload, bytes | bytearray | memoryview):
            raise TypeError(f"payload must be bytes, got {type(payload).__name__}")
        while self.host.blocked and not self._closed:
            self._unblocked.clear()
            await self._unblocked.wait()
        if self._closed:
            raise GroupClosed(f"node {self.node_id} left the group")
        msg_id = self.host.submit(bytes(payload), order)
        await asyncio.sleep(0)  # let the network and timers run between submits
        return msg_id

    async def multicast_many(self, payloads: Iterable[bytes], order: str = "agreed") -> list[str]:
        """Multicast each of ``payloads`` in turn; returns their ids.

        Like calling :meth:`multicast` for each, but it yields to the event loop only
        when flow control blocks and once at the end, not once a message: the way to
        send a burst. ``payloads`` is consumed lazily, an item just before its submit.
        """
        if order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
        host = self.host
        ids = []
        for payload in payloads:
            if not isinstance(payload, bytes | bytearray | memoryview):
                raise TypeError(f"payload must be bytes, got {type(payload).__name__}")
            while host.blocked and not self._closed:
                self._unblocked.clear()
                await self._unblocked.wait()
            if self._closed:
                raise GroupClosed(f"node {self.node_id} left the group")
            ids.append(host.submit(bytes(payload), order))
        await asyncio.sleep(0)
        return ids

    async def wait_view(self, predicate=None, timeout: float | None = None) -> View:  # type: ignore[no-untyped-def]
        """Wait until an installed regular view satisfies ``predicate`` (default: any)."""

        async def waiter() -> View:
            while True:
                v = self.host.view
                if v is not None and not v.transitional and (predicate is None or predicate(v)):
                    return v
                self._view_seen.clear()
                await self._view_seen.wait()

        return await asyncio.wait_for(waiter(), timeout)

    async def wait_for(self, predicate: Callable[[], bool], timeout: float | None = None) -> None:
        """Wait until ``predicate()`` is true, re-checking it at each change of the node's
        state (a datagram, a protocol event, a delivery, a view); ``TimeoutError`` after
        ``timeout`` seconds."""
        await wait_for_change(predicate, [self.host], timeout)

    # ------------------------------------------------------------ events

    def subscribe(self) -> None:
        """Start queuing events now (``events()`` does it on first use)."""
        self._subscribed = True

    def events(self) -> AsyncIterator[GroupEvent]:
        """Deliveries, view changes and leader changes, in the order the protocol
        produced them; queued from this call on (not only from the first iteration)."""
        self._subscribed = True
        return self._events()

    async def _events(self) -> AsyncIterator[GroupEvent]:
        while True:
            while self._queue:
                yield self._queue.popleft()
            if self._closed:
                return
            self._wakeup.clear()
            await self._wakeup.wait()

    def batches(self) -> AsyncIterator[list[GroupEvent]]:
        """Like :meth:`events`, a list at a time: everything queued when the consumer woke."""
        self._subscribed = True
        return self._batches()

    async def _batches(self) -> AsyncIterator[list[GroupEvent]]:
        while True:
            if self._queue:
                batch = list(self._queue)
                self._queue.clear()
                yield batch
                continue
            if self._closed:
                return
            self._wakeup.clear()
            await self._wakeup.wait()

    def _push(self, ev: GroupEvent) -> None:
        if not self._subscribed:
            return
        if len(self._queue) >= self.max_events:
            self._queue.popleft()
            self.events_lost += 1
        self._queue.append(ev)
        self._wakeup.set()

    # ------------------------------------------------------------ lock

    @asynccontextmanager
    async def lock(self) -> AsyncIterator[int]:
        """Hold the group's mutual-exclusion lock for the block's duration.

        ``async with g.lock() as fence:`` gives the grant's fencing token, a number that
        grows with every grant in the group: pass it to the resources the lock guards,
        and have them refuse a request whose fence is below one they have seen (a holder
        that was paused past its lease and no longer holds the lock).
        """
        if not self.host.spec.offers_lock:
            from ringcast.protocols import registry

            have = [n for n in registry.names() if registry.get(n).offers_lock]
            raise LockUnavailable(
                f"node {self.node_id}: protocol {self.config.protocol!r} offers no lock "
                f"(protocols that do: {', '.join(have) or 'none'})"
            )
        async with self._lock_mutex:
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._lock_waiters.append(fut)
            self.host.lock_request()
            await fut
            try:
                yield self.host.interp.fence
            finally:
                if self.host.holds_lock and not self._closed:
                    self.host.lock_release()

    # ------------------------------------------------------------ HostListener

    def on_deliver(self, d: Deliver) -> None:
        if self._subscribed:
            q = self._queue
            if len(q) >= self.max_events:
                q.popleft()
                self.events_lost += 1
            q.append(d)
            self._wakeup.set()

    def on_view(self, v: View) -> None:
        self._push(ViewChange(v.view_id, v.members, v.transitional))
        self._view_seen.set()

    def on_leader(self, leader: str | None, view: str | None) -> None:
        self._push(LeaderChange(leader, view))

    def on_lock(self, granted: bool, reason: str) -> None:
        if granted and self._lock_waiters:
            fut = self._lock_waiters.popleft()
            if not fut.done():
                fut.set_result(None)

    def on_backpressure(self, blocked: bool) -> None:
        if not blocked:
            self._unblocked.set()


async def wait_for_change(
    predicate: Callable[[], bool], hosts: Sequence[NodeHost], timeout: float | None = None
) -> None:
    """Wait until ``predicate()`` is true, re-checking it whenever one of ``hosts`` changes
    state (no polling); ``TimeoutError`` after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    while not predicate():
        left = None if deadline is None else deadline - loop.time()
        if left is not None and left <= 0:
            raise TimeoutError
        futs = [h.changed() for h in hosts]
        try:
            await asyncio.wait(futs, timeout=left, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for f in futs:
                f.cancel()


class _Joining:
    """The async context manager returned by :meth:`Group.join`."""

    def __init__(self, group: Group, view_timeout: float | None):
        self.group = group
        self.view_timeout = view_timeout

    async def __aenter__(self) -> Group:
        await self.group.start()
        if self.view_timeout is not None:
            try:
                await self.group._first_view(self.view_timeout)
            except BaseException:
                await self.group.leave()
                raise
        return self.group

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.group.leave()
