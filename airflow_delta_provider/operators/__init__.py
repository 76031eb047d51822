"""Operators that change Delta tables through Spark (see :mod:`.delta`)."""
