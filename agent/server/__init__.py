"""``run``: passes on a schedule and on triggers, HTTP endpoints, the push webhook.

May import: agent.notify, agent.views and every layer below them.
"""
