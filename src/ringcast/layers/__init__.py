"""Reusable sans-IO layers stacked under a protocol: reliable unicast and a failure detector."""

from ringcast.layers.detector import HeartbeatDetector
from ringcast.layers.reliable import ReliableUnicast
from ringcast.layers.stack import Stack

__all__ = ["HeartbeatDetector", "ReliableUnicast", "Stack"]
