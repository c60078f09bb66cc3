"""Tuning and promotion: engine flags searched for the traffic a host actually has, and a configuration moved
to a host through every gate.

space.py    the search space file: flags with choices or ranges, the objective and its constraints
trials.py   one trial: a candidate engine held back beside the live one, the profile replayed against it
search.py   the Optuna study (resumable), the interleaved A/B re-measurement, the winner as a recipe
report.py   ranked trials, the Pareto chart and the written report
run.py      invoke tune: the traffic to tune for, the search, the re-measurement, the winner written
promote.py  invoke promote: health, agent-check, accuracy and canary gates, then the router moves the traffic
"""
