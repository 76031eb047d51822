"""Operators that change Delta tables through Spark (:mod:`.delta`), and that read them (:mod:`.table_info`)."""
