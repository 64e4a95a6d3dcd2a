"""``run``: passes on a schedule and on triggers, HTTP endpoints, the push webhook.

May import: agent.engine and every layer below it.
"""
