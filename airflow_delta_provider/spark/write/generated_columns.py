"""Generated and identity columns in Spark write jobs.

- :func:`generated_checks`: every row a job writes must satisfy
  ``column <=> expression`` for each generated column (delta-spark adds the
  same check to every write); :func:`airflow_delta_provider.spark.write.files.enforce_constraints`
  runs it with the other constraints, so a breaking row fails the job with a
  message naming the column, its expression and the values.
- :func:`fill_generated`: a generated column the data does not give is
  computed from the row's other (new) values: APPEND where the source lacks
  it, UPDATE and MERGE where a clause does not set it.
- :func:`with_identity_values`: identity values for a frame's rows, unique
  across Spark partitions as delta-spark's ``GenerateIdentityValues`` makes
  them: row ``k`` of partition ``i`` of ``n`` gets
  ``first + (i + k * n) * step``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pyspark.errors import PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from airflow_delta_provider.delta.errors import InvalidInputError
from airflow_delta_provider.delta.table_features.generated_columns import generation_expressions
from airflow_delta_provider.delta.table_features.identity_columns import Identity
from airflow_delta_provider.spark.read.files import column, spark_schema

if TYPE_CHECKING:
    from airflow_delta_provider.delta.actions.model import AddFile
    from airflow_delta_provider.delta.storage import TableStorage

#: monotonically_increasing_id() puts the partition index above bit 33.
_ROW_BITS = 33


def _expression(spark: SparkSession, name: str, sql: str, dtype: Any) -> Column:
    """The generation expression as a Column of the column's type; one that
    does not parse is an InvalidInputError before any job runs (Spark
    parses ``F.expr`` only when a frame uses it)."""
    from pyspark.errors import AnalysisException, ParseException

    try:
        value = F.expr(sql).cast(dtype)  # classic Spark parses here, Spark Connect in the select below
    except PySparkException as exc:
        raise InvalidInputError(f"generation expression of column {name} does not parse: {sql}") from exc
    try:
        spark.range(0).select(value)
    except ParseException as exc:
        raise InvalidInputError(f"generation expression of column {name} does not parse: {sql}") from exc
    except AnalysisException:
        pass  # it reads the table's columns, which a bare frame lacks
    except PySparkException as exc:
        raise InvalidInputError(f"generation expression of column {name} does not parse: {sql}") from exc
    return value


def generated_checks(spark: SparkSession, schema: Mapping[str, Any]) -> dict[str, tuple[Column, Column]]:
    """Per generated column: (the row breaks ``column <=> expression``, the message)."""
    expressions = generation_expressions(schema)
    if not expressions:
        return {}
    struct = spark_schema(dict(schema))
    out = {}
    for name, sql in expressions.items():
        value = _expression(spark, name, sql, struct[name].dataType)
        shown = F.coalesce(column(name).cast("string"), F.lit("NULL"))
        computed = F.coalesce(value.cast("string"), F.lit("NULL"))
        message = F.concat(
            F.lit(f"generated column {name} must equal its expression {sql}; the row has {name} = "),
            shown,
            F.lit(", the expression gives "),
            computed,
        )
        out[name] = (~column(name).eqNullSafe(value), message)
    return out


def fill_generated(df: DataFrame, schema: Mapping[str, Any], where: Mapping[str, Column | None]) -> DataFrame:
    """``df`` (the table's columns) with each generated column named in
    ``where`` set to its expression over the row's values, on the rows where
    its flag column is true (None: every row). Other columns are untouched."""
    if not where:
        return df
    struct = spark_schema(dict(schema))
    expressions = generation_expressions(schema)
    by_lower = {n.lower(): n for n in expressions}
    replaced = {}
    for requested, flag in where.items():
        name = by_lower[requested.lower()]
        value = _expression(df.sparkSession, name, expressions[name], struct[name].dataType)
        replaced[name] = value if flag is None else F.when(flag, value).otherwise(column(name))
    return df.select(*[replaced.get(c, column(c)).alias(c) for c in df.columns])


def generated_over(schema: Mapping[str, Any], name: str, replacements: Mapping[str, str]) -> Column:
    """Generated column ``name`` computed over a row whose columns named in
    ``replacements`` take those SQL expressions instead (a change data
    postimage, written from the old row): the generation expression with
    each such column reference replaced by its cast expression."""
    import sqlglot
    from sqlglot import exp

    struct = spark_schema(dict(schema))
    sql = generation_expressions(schema)[name]
    by_lower = {k.lower(): (k, v) for k, v in replacements.items()}

    def swap(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and len(node.parts) == 1 and node.name.lower() in by_lower:
            column_name, text = by_lower[node.name.lower()]
            typed = f"CAST(({text}) AS {struct[column_name].dataType.simpleString()})"
            return sqlglot.parse_one(typed, read="spark")
        return node

    tree = sqlglot.parse_one(sql, read="spark").transform(swap)
    return F.expr(tree.sql(dialect="spark")).cast(struct[name].dataType)


def with_identity_values(
    df: DataFrame, identities: list[Identity], where: Mapping[str, Column] | None = None
) -> DataFrame:
    """``df`` with each of ``identities`` given fresh values (a ``long`` column
    of that name, added or replaced; with a flag column in ``where``, only on
    the rows where it is true). The values follow start and step beyond
    the high-water mark, and are unique across the frame's partitions (a row
    whose partition index is not below the partition count fails the job
    rather than risk a duplicate)."""
    if not identities:
        return df
    df, partitions = _with_known_partitions(df)
    pid = F.spark_partition_id().cast("long")
    row = F.monotonically_increasing_id() - F.shiftleft(pid, _ROW_BITS)
    stripe = pid + row * F.lit(partitions)
    out = df
    for ident in identities:
        value = F.lit(ident.first_value) + stripe * F.lit(ident.step)
        guarded = F.when(pid < F.lit(partitions), value).otherwise(
            F.raise_error(F.lit(f"identity values for {ident.column}: partition index beyond {partitions}"))
        )
        flag = (where or {}).get(ident.column)
        fresh = guarded.cast("long")
        out = out.withColumn(
            ident.column, fresh if flag is None else F.when(flag, fresh).otherwise(column(ident.column))
        )
    return out


def _with_known_partitions(df: DataFrame) -> tuple[DataFrame, int]:
    """``df`` and its number of partitions. A Spark Connect frame has no RDD
    to ask: it is repartitioned to ``spark.sql.shuffle.partitions`` (a count
    adaptive execution keeps)."""
    try:
        return df, max(1, df.rdd.getNumPartitions())
    except (AttributeError, NotImplementedError, PySparkException):
        partitions = max(1, int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or "200"))
        return df.repartition(partitions), partitions


def written_extreme(
    storage: TableStorage, adds: list[AddFile], key: str, is_partition: bool, positive: bool
) -> int | None:
    """The largest (``positive``) or smallest value of column ``key`` (its
    physical name) in the written files ``adds``: from their stats where they
    hold it, else read from the file (a column beyond the stats columns)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from airflow_delta_provider.delta.partitions import file_storage

    found: list[int] = []
    for add in adds:
        if is_partition:
            raw = add.partition_values.get(key)
            if raw is not None:
                found.append(int(raw))
            continue
        stats = add.parsed_stats() or {}
        bound = (stats.get("maxValues" if positive else "minValues") or {}).get(key)
        nulls = (stats.get("nullCount") or {}).get(key)
        if bound is not None:
            found.append(int(bound))
            continue
        if nulls is not None and add.num_records is not None and int(nulls) == add.num_records:
            continue  # every value NULL
        holder, rel = file_storage(storage, add.path)
        with holder.open_input_file(rel) as f:
            values = pq.read_table(f, columns=[key]).column(key)
        extreme = (pc.max if positive else pc.min)(values).as_py()
        if extreme is not None:
            found.append(int(extreme))
    if not found:
        return None
    return max(found) if positive else min(found)


__all__ = ["fill_generated", "generated_checks", "generated_over", "with_identity_values", "written_extreme"]
