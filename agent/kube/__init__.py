"""The cluster door: client, configuration, credentials, rate limit, list reading, watches, election.

May import: agent.kinds, agent.api, agent.common.
"""
