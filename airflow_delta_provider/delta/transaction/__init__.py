"""Optimistic transactions: staging and committing actions, conflict checks, and post-commit work."""
