"""Expressions: SQL conditions as one small typed tree, shared by every place that judges them.

The layer is Delta Kernel's ``expressions`` (and pyiceberg's): a condition
is parsed once and then read by whoever needs it.

- :mod:`.tree`: the typed tree: comparisons of a column with a literal,
  ``IS NULL``, ``NOT``/``AND``/``OR``, constants, and the parts no reader
  understands (:data:`~.tree.UNKNOWN`); the terms of a generation expression
  (a column, a recognised function of one column).
- :mod:`.parse`: Spark SQL text to that tree, through sqlglot (the only
  module here that imports it), and the helpers every reader of SQL shares:
  the columns an expression reads, its conjuncts, column equalities, quoting,
  and the calls whose value is not deterministic.
- :mod:`.coerce`: Spark's coercion of a literal to a column's type (integral,
  fractional, decimal, date, timestamp in the session time zone,
  timestamp without a zone), and literal ``CAST``\\ s.
- :mod:`.bind`: a tree bound to columns, its literals coerced to their types.
- :mod:`.evaluate`: three-valued logic over *sets* of truth values, judged
  from facts about a column (min/max/nullCount bounds, or an exact
  partition value).

File skipping (:mod:`airflow_delta_provider.delta.scan.skipping`), the MERGE
condition (:mod:`airflow_delta_provider.delta.scan.merge_condition`) and
generated columns (:mod:`airflow_delta_provider.delta.table_features.generated_columns`)
sit above this folder; it imports none of them. Importing this package
imports nothing: only :mod:`.parse` loads sqlglot.
"""
