"""Stacking sans-IO layers under a protocol machine.

:class:`Stack` is itself a :class:`~ringcast.core.machine.Machine`. It routes what the
host hands it: frames of the reliable-unicast layer and heartbeats go to their layer,
whose upward events (the inner message, ``SendFailed``, ``Suspected``) go on to the
protocol; the protocol's ``Send(..., reliable=True)`` effects go down through the
reliable layer. Everything else passes straight through.
"""

from __future__ import annotations

from ringcast.core.effects import Effect, Send
from ringcast.core.events import Event, Received, Start, TimerFired
from ringcast.core.machine import Machine
from ringcast.layers import detector as fd
from ringcast.layers import reliable as rt


class Stack:
    def __init__(
        self,
        upper: Machine,
        *,
        reliable: rt.ReliableUnicast | None = None,
        detector: fd.HeartbeatDetector | None = None,
    ):
        self.upper = upper
        self.node_id = upper.node_id
        self.reliable = reliable
        self.detector = detector

    def handle(self, event: Event, now: int) -> list[Effect]:
        effects: list[Effect] = []
        up: list[Event]
        if type(event) is Received:
            msg = event.msg
            if self.detector is not None:
                for e in self.detector.heard(event.src, now):
                    self._upper(e, now, effects)
                if type(msg) is fd.Heartbeat:
                    return effects
            if self.reliable is not None:
                if type(msg) is rt.RtData:
                    up, down = self.reliable.on_data(event.src, msg, event.network)
                    effects.extend(down)
                    for e in up:
                        self._upper(e, now, effects)
                    return effects
                if type(msg) is rt.RtAck:
                    effects.extend(self.reliable.on_ack(event.src, msg))
                    return effects
        elif type(event) is TimerFired:
            name = event.name
            if self.reliable is not None and name.startswith(rt.TIMER_PREFIX):
                up, down = self.reliable.on_timer(name)
                effects.extend(down)
                for e in up:
                    self._upper(e, now, effects)
                return effects
            if self.detector is not None and name == fd.TIMER:
                up, down = self.detector.tick(now)
                effects.extend(down)
                for e in up:
                    self._upper(e, now, effects)
                return effects
        elif type(event) is Start:
            if self.reliable is not None:
                effects.extend(self.reliable.start())
            if self.detector is not None:
                effects.extend(self.detector.start(now))
        self._upper(event, now, effects)
        return effects

    def _upper(self, event: Event, now: int, effects: list[Effect]) -> None:
        reliable = self.reliable
        for eff in self.upper.handle(event, now):
            if reliable is not None and type(eff) is Send and eff.reliable:
                effects.extend(reliable.send(eff.dst, eff.msg, eff.network))
            else:
                effects.append(eff)
