"""MERGE, as a frozen plan and the steps that take it.

- :mod:`.spec`: :class:`MergeSpec`, the arguments, checked by its ``validate()``;
- :mod:`.spark`: :func:`run`, which runs the steps in order;
- :mod:`.prepare`: :class:`MergePlan` (snapshot, transaction, clauses, join
  facts, schemas, the rows, candidate files) and :func:`plan_merge`, every
  check that needs the table, made before a file is written;
- :mod:`.schema`: the schema the MERGE writes (``merge_schema`` evolution);
- :mod:`.prune`: the candidate files, pruned by the source's keys;
- :mod:`.touched`: the files a clause changes rows of, and the multiple-match check;
- :mod:`.frames`: the rewritten files' rows after the clauses, and the inserts, as frames;
- :mod:`.rewrite`: those frames written, and the rows counted;
- :mod:`.changes`: the change data of a table that records it;
- :mod:`.commit`: one version with delta-spark's metrics (:mod:`.metrics`);
- :mod:`.files`: reading the target's files, writing data and change files, frames kept in memory;
- :mod:`.rows`: what each clause makes of a joined row, as Spark columns.

Nothing is re-exported: import from the module.
"""
