"""The pass: plan, apply, prune and status write over one change set (the report).

May import: agent.source, agent.kube, agent.manifests, agent.kinds, agent.api, agent.common.
"""
