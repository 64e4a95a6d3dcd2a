"""Application YAML from Git: loading, parsing and validating documents into manifests. Pure.

May import: agent.kinds, agent.api, agent.common.
"""
