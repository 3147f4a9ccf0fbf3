"""The real runtime: any protocol machine on asyncio UDP, and the Group API.

``async with Group.join(config, node_id) as g`` joins a cluster described by a TOML
cluster file (:mod:`ringcast.runtime.config`); see ``docs/runtime.md``.
"""

from ringcast.runtime.config import ClusterConfig, NodeConfig, load_config
from ringcast.runtime.errors import (
    AddressInUse,
    ConfigError,
    GroupClosed,
    GroupError,
    JoinTimeout,
    KeyFileError,
    LockUnavailable,
    UnknownNode,
)
from ringcast.runtime.group import Delivery, Group, GroupEvent, LeaderChange, ViewChange
from ringcast.runtime.host import HostListener, NodeHost

__all__ = [
    "AddressInUse",
    "ClusterConfig",
    "ConfigError",
    "Delivery",
    "Group",
    "GroupClosed",
    "GroupError",
    "GroupEvent",
    "HostListener",
    "JoinTimeout",
    "KeyFileError",
    "LeaderChange",
    "LockUnavailable",
    "NodeConfig",
    "NodeHost",
    "UnknownNode",
    "ViewChange",
    "load_config",
]
