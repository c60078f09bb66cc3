"""Recipes and profiles: what to serve and how, and the traffic to measure it with.

recipe.py     recipes and ladders (YAML, `extends`), validated; the single source of truth for flags
profiles.py   agentic traffic profiles, and a captured traffic profile replayed in a profile's sessions
captures.py   a traffic profile captured from a host's live traffic: its model and its file
render.py     a recipe as the engine's argv and the roles' variables
models.py     a model's checkpoint size and the config.json values that size its caches (recipes/models/)
fit.py        whether a recipe fits a GPU: weights, Mamba state, overhead, and the KV cache left
"""
