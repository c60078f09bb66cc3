"""More than one engine: the same recipe rendered for where a fleet runs.

k8s.py        a recipe as Kubernetes manifests (engines, vLLM's router with pod discovery, ServiceMonitors),
              validated offline against the Kubernetes schemas
"""
