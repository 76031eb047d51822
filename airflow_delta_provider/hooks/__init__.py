"""Hooks: run Delta operations on Spark through spark-submit."""
