"""The deterministic, fault-injecting discrete-event simulator.

>>> from ringcast.sim import load_scenario, Simulation
>>> result = Simulation(load_scenario("scenarios/raincore/fig13_crash.toml"), seed=1).run()
>>> result.events(kind="view")
"""

from ringcast.sim.result import SimResult
from ringcast.sim.scenario import Scenario, ScenarioError, load_scenario, parse_scenario
from ringcast.sim.scheduler import Scheduler
from ringcast.sim.world import Simulation

__all__ = [
    "Scenario",
    "ScenarioError",
    "Scheduler",
    "SimResult",
    "Simulation",
    "load_scenario",
    "parse_scenario",
]
