"""Cairn's settings, with the benchmark's layer routes in front of its own (checkpoints.bench.layers)."""

from project.settings import *  # noqa: F403 # every production setting, unchanged

ROOT_URLCONF = "checkpoints.bench.layers_urls"
