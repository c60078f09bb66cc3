"""Deploy and host wiring: every interaction with a host, through Ansible.

actions.py      deploy (proven beside the live engine, or swapped in place), provision, status, down, check-recipe
candidate.py    the engine beside the live one: started, handed the traffic, kept, restored or removed
agent_check.py  what coding agents send, tried against an endpoint
argcheck.py     a recipe's flags through the pinned vLLM's own parser, in its image on this machine
delivery.py     the images a host needs: built here for its architecture, sent in the offline bundle
images.py       building images with the Docker SDK from a debootstrap base, reused by a digest of their inputs
bundle.py       the offline bundle: image archives and the hash-pinned wheelhouse, with a manifest
platforms.py    CPU architectures of the controller, a host and an image
wheelhouse.py   hash-locked wheels, downloaded once
playbook.py     ansible-playbook with station's event stream, progress and errors
inventory.py    the inventory, and a wiring value as a host gets it
host_status.py  what `invoke status` reads on a host, typed
keys.py         the engine's API key on the controller
tunnel.py       SSH forwards to a host's loopback services
lock.py         one command at a time per host, one image build at a time per controller
sim.py          the simulated host (a Debian container reached over SSH)
"""
