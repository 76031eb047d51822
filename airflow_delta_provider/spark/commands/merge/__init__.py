"""MERGE: the command, and the rows each clause makes."""
