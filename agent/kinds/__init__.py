"""Child kinds: for each kind the agent renders (``registry.CHILD_KINDS``), its render, health and owned fields.

May import: agent.api, agent.common.
"""
