"""Telling people what the passes did: a signed webhook and a commit status on the Git host.

Between ``agent.server`` and ``agent.engine`` in the layers: ``cli`` and ``server`` hand each
pass's ``Report`` to a ``notifier.Notifier``; this package reads the engine's notices
(``agent.engine.news``) and never writes to the cluster but Warning Events about what it
could not deliver.
"""
