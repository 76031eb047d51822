"""Which data files a query must read: file skipping by partition values and stats."""
