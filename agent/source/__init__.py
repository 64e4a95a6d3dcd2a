"""The Git source: mirror, snapshot of one commit, submodules, credentials, repository identity, cache dir.

May import: agent.manifests, agent.kinds, agent.api, agent.common.
"""
