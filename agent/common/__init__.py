"""Process-wide helpers that know nothing of Kubernetes or Git: log set-up, guarded stdout/stderr.

May import: the standard library and third-party packages only (no other agent package).
"""
