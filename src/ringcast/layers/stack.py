"""Stacking sans-IO layers under a protocol machine.

:class:`Stack` is itself a :class:`~ringcast.core.machine.Machine`. ``layers`` are
listed from the top (next to the protocol) to the bottom (next to the host); each
implements :class:`~ringcast.layers.base.Layer`. An event from the host enters the
bottom layer and climbs: each layer answers with events for the layer above and
effects for the layer below. The protocol's effects descend through every layer to
the host. A layer's effects go down before its events go up, so a layer's
acknowledgement leaves before the protocol reacts to what it acknowledged.

Raincore runs over ``[ReliableUnicast]``; the coordinator protocols over
``[ReliableUnicast, HeartbeatDetector]`` (the detector below: every datagram, data
frames included, is a sign of life); Totem's redundant ring puts its network layer
at the bottom.
"""

from __future__ import annotations

from ringcast.core.effects import Effect
from ringcast.core.events import Event, Start, TimerFired
from ringcast.core.machine import Machine
from ringcast.layers import detector as fd
from ringcast.layers import reliable as rt
from ringcast.layers.base import Layer


class Stack:
    """A protocol machine over ``layers`` (top first).

    ``reliable=`` and ``detector=`` are shorthand for the two layers ringcast ships,
    appended below ``layers`` in that order (reliable unicast above the detector).
    """

    def __init__(
        self,
        upper: Machine,
        *layers: Layer,
        reliable: rt.ReliableUnicast | None = None,
        detector: fd.HeartbeatDetector | None = None,
    ):
        self.upper = upper
        self.node_id = upper.node_id
        stack: list[Layer] = list(layers)
        if reliable is not None:
            stack.append(reliable)
        if detector is not None:
            stack.append(detector)
        self.layers: tuple[Layer, ...] = tuple(stack)
        prefixes = [layer.timer_prefix for layer in self.layers]
        for p in prefixes:
            if not p or any(q != p and (q.startswith(p) or p.startswith(q)) for q in prefixes):
                raise ValueError(f"layer timer prefixes must be distinct and non-empty: {prefixes}")
        self._timers = tuple((layer.timer_prefix, k) for k, layer in enumerate(self.layers))
        n = self._n = len(self.layers)
        # _next_down[k]: the first layer at or below k that wants some effect type;
        # _to_host[k]: effects entering layer k reach the host untouched
        self._next_down = [n] * (n + 1)
        for k in range(n - 1, -1, -1):
            self._next_down[k] = k if self.layers[k].down_types else self._next_down[k + 1]
        self._to_host = [nxt == n for nxt in self._next_down]
        # looked up once here, not at every frame: what each layer wants, and its methods
        self._up_types = tuple(layer.up_types for layer in self.layers)
        self._layer_up = tuple(layer.up for layer in self.layers)
        self._layer_down = tuple(layer.down for layer in self.layers)
        self._upper_handle = upper.handle

    def layer(self, kind: type) -> Layer | None:
        """The first layer of type ``kind``, or None."""
        for layer in self.layers:
            if type(layer) is kind:
                return layer
        return None

    @property
    def reliable(self) -> rt.ReliableUnicast | None:
        return self.layer(rt.ReliableUnicast)  # type: ignore[return-value]

    @property
    def detector(self) -> fd.HeartbeatDetector | None:
        return self.layer(fd.HeartbeatDetector)  # type: ignore[return-value]

    def handle(self, event: Event, now: int) -> list[Effect]:
        out: list[Effect] = []
        tp = type(event)
        if tp is TimerFired:
            name = event.name  # type: ignore[union-attr]
            for prefix, k in self._timers:
                if name.startswith(prefix):
                    up, down = self.layers[k].timer(name, now)
                    if down:
                        self._down(k + 1, down, now, out)
                    if up:
                        self._up(k - 1, up, now, out)
                    return out
        elif tp is Start:
            for k, layer in enumerate(self.layers):
                self._down(k + 1, layer.start(now), now, out)
            self._up(-1, [event], now, out)
            return out
        self._up(len(self.layers) - 1, [event], now, out)
        return out

    def _up(self, k: int, events: list[Event], now: int, out: list[Effect]) -> None:
        """Hand ``events`` to layer ``k`` (``-1``: the protocol); a layer that does not
        want an event's type (``up_types``) is skipped at no cost."""
        up_types = self._up_types
        layer_up = self._layer_up
        to_host = self._to_host
        for ev in events:
            j = k
            while True:  # climb with one event while each layer hands up just one
                tp = type(ev)
                while j >= 0 and tp not in up_types[j]:
                    j -= 1
                if j < 0:
                    effects = self._upper_handle(ev, now)
                    if effects:
                        if to_host[0]:
                            out.extend(effects)
                        else:
                            self._down(0, effects, now, out)
                    break
                up, down = layer_up[j](ev, now)
                if down:
                    if to_host[j + 1]:
                        out.extend(down)
                    else:
                        self._down(j + 1, down, now, out)
                j -= 1
                if len(up) != 1:
                    if up:
                        self._up(j, up, now, out)
                    break
                ev = up[0]

    def _down(self, k: int, effects: list[Effect], now: int, out: list[Effect]) -> None:
        """Hand ``effects`` to layer ``k`` (``len(layers)``: the host), in order; layers
        that want none of them (``down_types``) are skipped at no cost."""
        k = self._next_down[k]
        if k == self._n:
            out.extend(effects)
            return
        wanted = self.layers[k].down_types
        layer_down = self._layer_down[k]
        below_is_host = self._to_host[k + 1]  # what leaves this layer goes straight out
        passing: list[Effect] = []
        for eff in effects:
            if type(eff) not in wanted:
                passing.append(eff)
                continue
            if passing:  # what came before goes down first
                if below_is_host:
                    out.extend(passing)
                else:
                    self._down(k + 1, passing, now, out)
                passing = []
            up, down = layer_down(eff, now)
            if down:
                if below_is_host:
                    out.extend(down)
                else:
                    self._down(k + 1, down, now, out)
            if up:
                self._up(k - 1, up, now, out)
        if passing:
            if below_is_host:
                out.extend(passing)
            else:
                self._down(k + 1, passing, now, out)
