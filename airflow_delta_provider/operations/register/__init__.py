"""REGISTER: create the catalog entry of a Delta table that exists at a path."""
