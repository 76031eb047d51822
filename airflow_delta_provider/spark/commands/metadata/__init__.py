"""Commands that write only the log: no data file is read or written by Spark.

ALTER, RESTORE, CHECKPOINT, CONVERT TO DELTA and the like run in the core; the
Spark session they are given may be None.
"""
