"""Table health, read from the log alone, and the maintenance it calls for.

:mod:`.report` measures a snapshot (files and bytes per partition, small
files, rows hidden by deletion vectors, commits since the last checkpoint, the
last OPTIMIZE and VACUUM, the bytes a VACUUM would free, clustering coverage);
:mod:`.decisions` turns a report and user-overridable thresholds into the
steps that are due; :mod:`.text` prints both as one table and :mod:`.page`
renders them as a self-contained HTML page.
"""
