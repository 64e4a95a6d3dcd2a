"""The vocabulary: the Application's schema and CRD, label and annotation keys, condition reasons.

May import: agent.common.
"""
