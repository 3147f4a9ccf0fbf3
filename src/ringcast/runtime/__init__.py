"""The real runtime: any protocol machine on asyncio UDP, and the Group API.

``async with Group.join(config, node_id) as g`` joins a cluster described by a TOML
cluster file (:mod:`ringcast.runtime.config`); see ``docs/runtime.md``.
"""

from ringcast.runtime.config import ClusterConfig, ConfigError, NodeConfig, load_config
from ringcast.runtime.group import (
    Delivery,
    Group,
    GroupEvent,
    LeaderChange,
    LockUnavailable,
    ViewChange,
)
from ringcast.runtime.host import HostListener, NodeHost

__all__ = [
    "ClusterConfig",
    "ConfigError",
    "Delivery",
    "Group",
    "GroupEvent",
    "HostListener",
    "LeaderChange",
    "LockUnavailable",
    "NodeConfig",
    "NodeHost",
    "ViewChange",
    "load_config",
]
