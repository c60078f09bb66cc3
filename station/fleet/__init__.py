"""More than one host: one command on each host of a fleet, and the same recipe rendered for where a fleet runs.

each.py       one command on every host of a group at once, each under its own lock and with its own output;
              one host failing stops nothing on the others, and the command fails naming it
rotation.py   one host of a fleet out of its router's rotation, its requests finished (drain), and back (undrain)
k8s.py        a recipe as Kubernetes manifests (engines, vLLM's router with pod discovery, ServiceMonitors),
              validated offline against the Kubernetes schemas
"""
