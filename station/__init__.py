"""station: self-host an open LLM at full throughput on one NVIDIA GPU box.

recipes/      what to serve and how, and the traffic to measure it with
deploy/       every interaction with a host: deploy, provision, images, the candidate engine, Ansible
bench/        measurements, the records they leave, and the gate, cost and accuracy judged from them
reports/      console tables, markdown reports and charts
tune/         flags searched for a host's traffic, and a configuration promoted through every gate
fleet/        more than one engine: the recipe rendered for a Kubernetes cluster
generators/   files made from code: the Grafana dashboards, the tiny model
errors.py     StationError: what went wrong and how to fix it
paths.py      where the bundle's files and the controller's state live
"""
