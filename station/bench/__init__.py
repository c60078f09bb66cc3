"""Benchmarks and evidence: measurements on a host, the records they leave, and what is judged from them.

measure.py       smoke-bench (vLLM's benchmark on the host), agentic replays (AIPerf), replays against a candidate
fleet.py         a fleet measured through its router, each host's share from its engine's counters
bench_result.py  vLLM's benchmark result, parsed and checked
agentic.py       agentic sessions replayed with AIPerf, and what agents feel
telemetry.py     GPU telemetry beside a run: power, energy, tokens per joule
provenance.py    where a number came from
records.py       a run's record and index line, typed and versioned
runs.py          runs on disk and their index
traffic.py       a traffic profile read from Prometheus, and its drift
capture.py       a host's live traffic captured and compared
ladder.py        a ladder's steps deployed and measured one by one, resumable
accuracy.py      drift between two configurations' answers at temperature 0
gate.py          the regression gate against a baseline run
cost.py          cost per million output tokens against an API price
"""
