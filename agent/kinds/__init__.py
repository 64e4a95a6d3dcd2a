"""Child kinds: for each kind the agent renders (Deployment, Service), its render, health and owned fields.

May import: agent.api, agent.common.
"""
