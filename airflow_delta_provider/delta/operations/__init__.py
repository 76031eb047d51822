"""Table operations planned in the core: VACUUM, OPTIMIZE, RESTORE, ALTER and MERGE's clauses."""
