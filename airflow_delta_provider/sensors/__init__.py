"""Sensors that wait for new versions of a Delta table.

Importing this package is cheap: the log is read through the core, which is
imported only when a sensor pokes.
"""
