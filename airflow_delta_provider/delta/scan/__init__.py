"""Which data files a query must read: file skipping by partition values and
stats (:mod:`.skipping`), and the facts a MERGE's join condition gives about
the target's files (:mod:`.merge_condition`)."""
