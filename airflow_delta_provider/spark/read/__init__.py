"""Reading: a snapshot's data files into a DataFrame, and the changes of a version range.

From the bottom up: :mod:`.files` (schemas, file locations and keys, column
names), :mod:`.deletion_vectors` (leaving deleted rows out of a read),
:mod:`.file_reads` (the reads, and the rows of files that match a
condition), :mod:`.row_tracking` (stable row ids and commit versions) and
:mod:`.scan` (a snapshot as a DataFrame). :mod:`.arrow_source` and
:mod:`.arrow_conform` read parquet through pyarrow and the storage seam
(``arrow`` I/O); :mod:`.table_changes` reads the change data feed of a
version range.
"""
