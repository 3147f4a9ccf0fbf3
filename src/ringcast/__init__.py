"""ringcast: token-ring group communication (Raincore, Totem, ...) as sans-IO state machines.

Every protocol is a pure state machine (``handle(event, now) -> effects``) that runs
unchanged in the deterministic simulator (:mod:`ringcast.sim`) and on a real network
(:mod:`ringcast.runtime`). See ``docs/`` for how each published protocol maps to code.
"""

__version__ = "0.1.0"

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ringcast.runtime import Delivery, Group, GroupError, LeaderChange, ViewChange

_RUNTIME = ("Delivery", "Group", "GroupError", "LeaderChange", "ViewChange")
__all__ = ["Delivery", "Group", "GroupError", "LeaderChange", "ViewChange", "__version__"]


def __getattr__(name: str) -> Any:
    # The runtime (asyncio, cryptography) is imported only when the Group API is used.
    if name in _RUNTIME:
        import ringcast.runtime

        return getattr(ringcast.runtime, name)
    raise AttributeError(f"module 'ringcast' has no attribute {name!r}")
