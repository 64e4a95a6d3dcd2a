"""What ``get``, ``explain`` and the status page show of an Application: its row, its
explanation, and the reading of them from the cluster and Git.

May import: agent.engine, agent.source, agent.kube, agent.manifests, agent.kinds, agent.api, agent.common.
"""
