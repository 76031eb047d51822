"""MERGE: upsert a source into a table, as delta-spark's ``MergeIntoCommand`` does.

The clause language is :mod:`~airflow_delta_provider.operations.merge.clauses`;
what each joined row becomes is :mod:`~airflow_delta_provider.operations.merge.rows`;
``docs/merge.rst`` is the user's account. :func:`run` runs the steps,
each a function that takes the frozen plan and returns a value, each as
cheap as the clauses allow:

1. **Plan** (:func:`~.prepare.plan_merge`, no data written): the snapshot and a
   transaction; the source's schema against the table's (``*`` clauses need
   a source that fits, or ``merge_schema``); every expression analysed; a
   file source persisted, so every step reads the same rows; the
   **candidates** (:func:`~.prune.prune`): one aggregation counts the
   source's rows and takes the min and max of each join key (``t.k = s.k``);
   with the join condition's target-only conjuncts they prune files by
   partition values and stats, and a small source's integral keys prune
   file by file. ``not_matched_by_source`` needs every target row: no pruning.
2. **Find touched files** (:func:`~.touched.find_touched_files`): the
   candidates inner-joined (left-joined with ``not_matched_by_source``) to
   the source, counted per file and clause; a target row matched twice is
   refused unless every matched clause deletes. An insert-only MERGE skips it.
3. **Rewrite** (:func:`~.rewrite.rewrite`): an insert-only MERGE appends the
   source rows matching none of the candidates, rewriting nothing; otherwise
   the touched files are rewritten (a left join to the source) and the
   unmatched source rows inserted (an anti-join to the matched keys, for an
   equi-join; else one full outer join); change data too, on a table that
   records it.
4. **Commit** (:func:`~.commit.commit`) removes and adds (and the evolved
   schema) as one version, once the rows written add up.

A MERGE reads at the table's ``delta.isolationLevel`` (``Serializable``
unless it says otherwise, as in delta-spark), so a concurrent blind append
into what it read is a conflict.

On a table with deletion vectors, touched files are rewritten whole
(copy-on-write); the commit removes them, vectors included.

On a table with row tracking enabled, rewritten target rows keep their
stable row ids (and their commit versions unless a clause updates them) in
the materialized columns (:mod:`~airflow_delta_provider.spark.read.row_tracking`);
inserted rows get fresh ones.

If a step fails, the files written so far are deleted, unless the commit
may have landed (:class:`~airflow_delta_provider.spark.write.files.WrittenFiles`).
"""

from __future__ import annotations

from collections.abc import Mapping

from pyspark.sql import SparkSession

from airflow_delta_provider.operations.merge.commit import commit
from airflow_delta_provider.operations.merge.files import KeptFrames
from airflow_delta_provider.operations.merge.prepare import plan_merge
from airflow_delta_provider.operations.merge.rewrite import rewrite
from airflow_delta_provider.operations.merge.spec import MergeSpec
from airflow_delta_provider.operations.merge.touched import find_touched_files
from airflow_delta_provider.operations.optimize.auto_compact import after_write
from airflow_delta_provider.operations.result import CommandResult
from airflow_delta_provider.operations.sources.spark import Source
from airflow_delta_provider.spark.write.files import WrittenFiles


def run(spark: SparkSession, spec: MergeSpec, storage_options: Mapping[str, str] | None = None) -> CommandResult:
    """MERGE INTO ``spec.table_path`` AS ``target_alias`` USING the source AS
    ``source_alias`` ON ``on`` with ``clauses``; a CommandResult.

    The source is the path ``source`` read as ``source_format`` (``parquet``,
    ``csv``, ``json``, ``orc`` or ``delta``; a Delta source at
    ``source_version``, default its latest) with reader ``options``, or else
    the query ``source_sql`` over ``source_views``
    (:class:`~airflow_delta_provider.operations.sources.spark.Source`).
    ``storage_options`` reach the table and a Delta source from this process.
    ``version`` is None when nothing changed.
    """
    with Source.of(spark, spec, storage_options, version=spec.source_version) as rows, KeptFrames() as keep:
        plan = plan_merge(spark, spec, rows, keep=keep, storage_options=storage_options)
        with WrittenFiles(plan.target.table.storage, [], []) as written:
            touched = find_touched_files(plan, keep)
            rewritten = rewrite(plan, touched, written)
            written.committing()
            result = commit(plan, rewritten)
    configuration = plan.metadata.configuration
    return after_write(spark, plan.target.table, result, rewritten.added, configuration, plan.target.io)


__all__ = ["run"]
