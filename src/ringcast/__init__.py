"""ringcast: token-ring group communication (Raincore, Totem, ...) as sans-IO state machines.

Every protocol is a pure state machine (``handle(event, now) -> effects``) that runs
unchanged in the deterministic simulator (:mod:`ringcast.sim`) and on a real network
(:mod:`ringcast.runtime`). See ``docs/`` for how each seed document maps to code.
"""

__version__ = "0.1.0"
