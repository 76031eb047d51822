"""The requests: every operator's request comes back equal from the Spark
CLI's parser, each operation is defined once, and the request layer imports
neither pyspark nor airflow."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from typing import Any

import pytest

from airflow_delta_provider.operations.checkpoint.spec import CheckpointSpec
from airflow_delta_provider.operations.delete.spec import DeleteSpec
from airflow_delta_provider.operations.registry import OPERATIONS, PYTHON_ENGINE_OPERATIONS, SPECS
from airflow_delta_provider.operations.restore.spec import RestoreSpec
from airflow_delta_provider.operations.spec.base import OperationSpec
from airflow_delta_provider.operations.update.spec import UpdateSpec
from airflow_delta_provider.operators.delta import (
    DeltaAlterTableOperator,
    DeltaAppendOperator,
    DeltaChangesOperator,
    DeltaCheckpointOperator,
    DeltaCloneOperator,
    DeltaConvertOperator,
    DeltaDeleteOperator,
    DeltaGenerateManifestOperator,
    DeltaMergeOperator,
    DeltaOptimizeOperator,
    DeltaPurgeDeletionVectorsOperator,
    DeltaRegisterTableOperator,
    DeltaRestoreOperator,
    DeltaSparkOperator,
    DeltaUpdateOperator,
    DeltaVacuumOperator,
)
from airflow_delta_provider.spark.cli import parse_request
from airflow_delta_provider.spark.runtime.io_modes import IO_MODES

TOKEN = "dag/task/run/-1"
#: The base operator's arguments that reach the request, all away from their defaults.
COMMON = {"table_path": "s3://lake/orders", "io": "arrow", "debug": True}

#: Every operator, with every argument of its own set away from its default.
OPERATORS: list[tuple[type[DeltaSparkOperator], dict[str, Any]]] = [
    (DeltaUpdateOperator, {"updates": {"status": "'late'", "amount": "amount * 2"}, "condition": "id > 3"}),
    (DeltaDeleteOperator, {"condition": "day < '2026-01-01'"}),
    (
        DeltaAppendOperator,
        {
            "user_metadata": "nightly load {{ ds }}",
            "source": "/in/day=1",
            "source_format": "csv",
            "merge_schema": True,
            "partition_by": ["day", "country"],
            "mode": "overwrite",
            "overwrite_schema": True,
            "txn_app_id": "loader",
            "txn_version": 7,
            "options": {"header": "true", "sep": ";"},
            "table_properties": {"delta.enableDeletionVectors": "true", "delta.appendOnly": "false"},
            "table_schema": {
                "type": "struct",
                "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}],
            },
        },
    ),
    (
        DeltaAppendOperator,
        {
            "user_metadata": "nightly load {{ ds }}",
            "source": "/in/day=2",
            "source_format": "json",
            "merge_schema": True,
            "partition_by": ["day"],
            "mode": "overwrite",
            "replace_where": "day = '2'",
            "txn_app_id": "loader",
            "txn_version": 8,
            "options": {"multiLine": "true"},
            "table_properties": {"delta.appendOnly": "false"},
            "table_schema": '{"type": "struct", "fields": []}',
        },
    ),
    (
        DeltaAppendOperator,
        {
            "user_metadata": "nightly load {{ ds }}",
            "source": "/in/day=3",
            "source_format": "delta",
            "merge_schema": True,
            "partition_by": ["day"],
            "mode": "overwrite",
            "partition_overwrite_mode": "dynamic",
            "txn_app_id": "loader",
            "txn_version": 9,
            "options": {"k": "v"},
            "table_properties": {"delta.appendOnly": "false"},
            "table_schema": '{"type": "struct", "fields": []}',
        },
    ),
    (
        DeltaAppendOperator,
        {
            "user_metadata": "nightly load {{ ds }}",
            "source": "/in/day=5",
            "source_format": "parquet",
            "merge_schema": True,
            "cluster_by": "day, id",
            "mode": "overwrite",
            "overwrite_schema": True,
            "txn_app_id": "loader",
            "txn_version": 11,
            "options": {"k": "v"},
            "table_properties": {"delta.appendOnly": "false"},
            "table_schema": '{"type": "struct", "fields": []}',
        },
    ),
    (
        DeltaAppendOperator,
        {
            "user_metadata": "nightly load {{ ds }}",
            "source_sql": "SELECT * FROM a JOIN b USING (id) WHERE a.day = '4'",
            "source_views": {"a": {"path": "/in/a", "format": "orc"}, "b": {"path": "/in/b", "format": "delta"}},
            "merge_schema": True,
            "partition_by": ["day"],
            "mode": "overwrite",
            "replace_where": "day = '4'",
            "txn_app_id": "loader",
            "txn_version": 10,
            "table_properties": {"delta.appendOnly": "false"},
            "table_schema": '{"type": "struct", "fields": []}',
        },
    ),
    (
        DeltaMergeOperator,
        {
            "source": "/in/upserts",
            "on": "tt.id = ss.id",
            "clauses": [
                {"when": "matched", "condition": "ss.op = 'D'", "delete": True},
                {"when": "not_matched", "insert": "*"},
            ],
            "source_format": "delta",
            "source_version": 4,
            "target_alias": "tt",
            "source_alias": "ss",
            "merge_schema": True,
            "options": {"k": "v=w"},
        },
    ),
    (
        DeltaMergeOperator,
        {
            "source_sql": "SELECT u.*, c.region FROM upserts u JOIN customers c USING (cid)",
            "source_views": {
                "upserts": {"path": "s3://raw/upserts", "format": "delta", "version": 2},
                "customers": {"path": "/in/c.csv", "format": "csv", "options": {"header": "true"}},
            },
            "on": "tt.id = ss.id",
            "clauses": [{"when": "not_matched", "insert": "*"}],
            "target_alias": "tt",
            "source_alias": "ss",
            "merge_schema": True,
        },
    ),
    (DeltaCheckpointOperator, {"cleanup_logs": True}),
    (DeltaVacuumOperator, {"retention_hours": 12.5, "dry_run": True, "retention_check": False, "mode": "lite"}),
    (DeltaPurgeDeletionVectorsOperator, {"min_deleted_ratio": 0.25}),
    (DeltaOptimizeOperator, {"where": "day = 1", "target_size": 1 << 20, "zorder_by": ["a", "b"]}),
    (DeltaOptimizeOperator, {"where": "day = 1", "target_size": 1 << 20, "full": True}),
    (
        DeltaAlterTableOperator,
        {"change": {"rename_column": {"column": "a", "to": "b"}}, "enable_column_mapping": True},
    ),
    (DeltaAlterTableOperator, {"drop_feature": "v2Checkpoint", "truncate_history": True}),
    (DeltaRestoreOperator, {"version": 3}),
    (DeltaRestoreOperator, {"timestamp": "2026-11-26T10:00:00+01:00"}),
    (
        DeltaChangesOperator,
        {"start_version": 2, "end_version": 5, "output_path": "s3://lake/changes", "output_format": "json"},
    ),
    (
        DeltaConvertOperator,
        {"partition_by": "day date, region string", "table_properties": {"delta.appendOnly": "true"}},
    ),
    (DeltaConvertOperator, {"partition_by": {"day": "date", "`a b`": "decimal(10,2)"}, "table_properties": {"k": "v"}}),
    (DeltaGenerateManifestOperator, {"mode": "symlink_format_manifest"}),
    (
        DeltaCloneOperator,
        {"source_path": "s3://lake/src", "version": 4, "replace": True, "table_properties": {"k": "v"}},
    ),
    (
        DeltaCloneOperator,
        {
            "source_path": "/lake/src",
            "timestamp": "2026-11-26T10:00:00Z",
            "replace": True,
            "table_properties": {"a": 1},
        },
    ),
    # A name in a catalog, in place of COMMON's path: REGISTER takes nothing else.
    (DeltaRegisterTableOperator, {"table_path": "uc://lake.sales.orders", "location": "s3://lake/orders"}),
]

#: Fields whose only value is their default: REORG is always ``--purge``, GENERATE's one mode.
_FIXED = {("reorg", "purge"), ("generate", "mode"), ("append", "location")}  # APPEND's location: for a catalog name
#: Sets of fields of an operation of which exactly one is away from its default in a case (they exclude each other).
_ONE_OF = {
    "append": (("overwrite_schema", "replace_where", "partition_overwrite_mode"), ("partition_by", "cluster_by")),
    "optimize": (("zorder_by", "full"),),
    "clone": (("version", "timestamp"),),
}
#: Groups of fields of an operation that are alternatives: a case sets every field of one group, none of the others.
_ALTERNATIVES = {
    "append": (("source", "source_format", "options"), ("source_sql", "source_views")),
    "merge": (("source", "source_format", "source_version", "options"), ("source_sql", "source_views")),
    "alter": (("change", "enable_column_mapping"), ("drop_feature", "truncate_history")),
}
#: The least each operation needs beyond its required fields: a source.
_MINIMAL = {
    "append": {"source": "x", "source_format": "parquet"},
    "merge": {"source": "x", "clauses": '[{"when": "matched", "delete": true}]'},
    "alter": {"change": '{"set_properties": {"k": "v"}}'},
    "register": {"table_path": "uc://c.s.t"},
}


def _ids(case: tuple[type, dict[str, Any]]) -> str:
    return f"{case[0].__name__}-{'-'.join(case[1])}"


@pytest.mark.parametrize("operator_class, arguments", OPERATORS, ids=[_ids(c) for c in OPERATORS])
def test_every_operator_request_comes_back_equal_from_the_cli(operator_class, arguments) -> None:
    operator = operator_class(task_id="t", **{**COMMON, **arguments})
    request = operator.request(TOKEN)
    assert type(request) is operator_class.spec_class and request.operation == operator.operation

    argv = request.to_argv()
    assert parse_request(argv) == request
    # What the hooks build from run(operation, table, arguments, token) is that argv.
    assert [request.operation, request.table_path, *request.arguments(), "--token", TOKEN] == argv
    assert operator.cli_arguments() == request.operation_arguments()

    # Every argument really was away from its default (so none can be dropped on the way).
    table = arguments.get("table_path", COMMON["table_path"])
    assert (request.table_path, request.io, request.debug, request.token) == (table, "arrow", True, TOKEN)
    sets = _ONE_OF.get(request.operation, ())
    exclusive = sum(sets, ())
    groups = _ALTERNATIVES.get(request.operation, ())
    in_groups = [name for group in groups for name in group]
    for field in request.operation_fields():
        if (request.operation, field.name) in _FIXED or field.name in (*request.exactly_one_of, *exclusive, *in_groups):
            continue
        assert getattr(request, field.name) != field.default, field.name
    defaults = {f.name: f.default for f in request.operation_fields()}
    for one_of in sets:
        assert sum(getattr(request, name) != defaults[name] for name in one_of) == 1, one_of
    if groups:
        set_ = [[getattr(request, name) != defaults[name] for name in group] for group in groups]
        assert sorted(map(all, set_)) == [False] * (len(groups) - 1) + [True]
        assert sum(map(any, set_)) == 1


def test_each_field_that_excludes_others_has_its_own_case() -> None:
    exclusive = {op: sum(sets, ()) for op, sets in _ONE_OF.items()}
    alternatives = {op: sum(groups, ()) for op, groups in _ALTERNATIVES.items()}
    for operation in {*exclusive, *alternatives}:
        names = (*exclusive.get(operation, ()), *alternatives.get(operation, ()))
        cls = SPECS[operation]
        defaults = {f.name: f.default for f in cls.operation_fields()}
        requests_ = [
            op_cls(task_id="t", **{**COMMON, **args}).request()
            for op_cls, args in OPERATORS
            if op_cls.spec_class is cls
        ]
        for name in names:
            assert any(getattr(request, name) != defaults[name] for request in requests_), name


def test_every_operation_has_an_operator_in_the_round_trip() -> None:
    assert {cls.spec_class for cls, _ in OPERATORS} == set(SPECS.values())


def test_a_request_without_token_or_options_comes_back_equal() -> None:
    for cls in SPECS.values():
        required = {
            f.name: _example(f)
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        if cls.exactly_one_of:
            required[cls.exactly_one_of[0]] = 1
        required.update(_MINIMAL.get(cls.operation, {}))
        request = cls(**required)
        assert parse_request(request.to_argv()) == request
        assert "--token" not in request.to_argv()


def _example(field: dataclasses.Field[Any]) -> Any:
    argument = field.metadata["argument"]
    if argument.kind == "pairs":
        return (("a", "b"),)
    if argument.choices:
        return argument.choices[-1]
    return argument.parse("1") if argument.parse is not str else "x"


def test_spark_conf_rides_in_the_request_too() -> None:
    request = UpdateSpec(table="/t", set_exprs=(("a", "1"),), spark_conf=(("spark.x", "1"),))
    assert request.to_argv()[-2:] == ["--spark-conf", "spark.x=1"]
    assert parse_request(request.to_argv()) == request


def test_the_cli_flags_keep_their_spelling() -> None:
    """The argv of a fully set operator, word for word (the CLI's flags are an interface)."""
    operator = DeltaAppendOperator(task_id="t", **COMMON, **dict(OPERATORS[2][1]))
    assert operator.request(TOKEN).to_argv() == [
        "append", "s3://lake/orders", "--source", "/in/day=1", "--format", "csv", "--mode", "overwrite",
        "--table-schema", json.dumps(OPERATORS[2][1]["table_schema"]), "--merge-schema", "--overwrite-schema",
        "--partition-by", "day", "--partition-by", "country", "--txn-app-id", "loader", "--txn-version", "7",
        "--option", "header=true", "--option", "sep=;",
        "--property", "delta.enableDeletionVectors=true", "--property", "delta.appendOnly=false",
        "--user-metadata", "nightly load {{ ds }}", "--io", "arrow", "--debug", "--token", TOKEN,
    ]  # fmt: skip
    vacuum = DeltaVacuumOperator(task_id="v", table_path="/t", retention_hours="48", retention_check=False)
    assert vacuum.request().to_argv() == [
        "vacuum",
        "/t",
        "--retention-hours",
        "48",
        "--no-retention-check",
        "--io",
        "auto",
    ]
    reorg = DeltaPurgeDeletionVectorsOperator(task_id="p", table_path="/t")
    assert reorg.request().to_argv() == ["reorg", "/t", "--purge", "--min-deleted-ratio", "0", "--io", "auto"]


def test_a_delete_without_condition_is_a_request_for_every_row() -> None:
    """DeltaDeleteOperator documents "all rows when None": the CLI takes it."""
    request = DeltaDeleteOperator(task_id="d", table_path="/t").request(TOKEN)
    assert request == DeleteSpec(table="/t", token=TOKEN)
    assert request.to_argv() == ["delete", "/t", "--io", "auto", "--token", TOKEN]
    assert parse_request(["delete", "/t"]) == DeleteSpec(table="/t")


def test_a_request_refuses_what_the_cli_would() -> None:
    with pytest.raises(ValueError, match="io must be one of"):
        CheckpointSpec(table="/t", io="fast")
    with pytest.raises(ValueError, match="exactly one of version, timestamp"):
        RestoreSpec(table="/t", version=1, timestamp="2026-01-01")
    with pytest.raises(dataclasses.FrozenInstanceError):
        DeleteSpec(table="/t").condition = "x"  # type: ignore[misc]


def test_rendered_templates_become_typed_fields() -> None:
    """Templates render text: the request holds the numbers and names the CLI parses back."""
    changes = DeltaChangesOperator(task_id="c", table_path="/t", start_version="3", end_version="", output_path="/o")
    assert (changes.request().start_version, changes.request().end_version) == (3, None)
    merge = DeltaMergeOperator(
        task_id="m", table_path="/t", source="/s", on="t.id = s.id", clauses='[{"when": "matched", "delete": true}]',
        source_format="delta",
        source_version="7",
    )  # fmt: skip
    assert merge.request().source_version == 7
    optimize = DeltaOptimizeOperator(task_id="o", table_path="/t", zorder_by=" a, b ,")
    assert optimize.request().zorder_by == ("a", "b")
    restore = DeltaRestoreOperator(task_id="r", table_path="/t", version="2")
    assert restore.request().version == 2
    for request in (changes.request(), merge.request(), optimize.request(), restore.request()):
        assert parse_request(request.to_argv()) == request
    with pytest.raises(ValueError, match="retention_hours must be a number"):
        DeltaVacuumOperator(task_id="v", table_path="/t", retention_hours="soon").request()


@pytest.mark.parametrize(
    ("operator", "argument", "rendered", "field", "value"),
    [
        (DeltaAppendOperator, "txn_version", " 20240101 ", "txn_version", 20240101),
        (DeltaOptimizeOperator, "target_size", "1048576", "target_size", 1048576),
        (DeltaPurgeDeletionVectorsOperator, "min_deleted_ratio", "0.25", "min_deleted_ratio", 0.25),
        (DeltaRestoreOperator, "version", "4", "version", 4),
        (DeltaVacuumOperator, "retention_hours", "168", "retention_hours", 168.0),
    ],
)
def test_numbers_are_templated_and_converted_once_rendered(operator, argument, rendered, field, value) -> None:
    extra = {"source": "/s", "txn_app_id": "app"} if operator is DeltaAppendOperator else {}
    task = operator(task_id="t", table_path="/t", **{argument: "{{ params.n }}"}, **extra)
    task.render_template_fields({"params": {"n": rendered}})
    assert getattr(task.request(), field) == value


@pytest.mark.parametrize(
    ("operator", "argument", "rendered", "message"),
    [
        (DeltaAppendOperator, "txn_version", "2024-01-01", "txn_version must be a version number, not '2024-01-01'"),
        (DeltaOptimizeOperator, "target_size", "1.5", "target_size must be an integer, not '1.5'"),
        (DeltaOptimizeOperator, "target_size", "-3", "target_size must be positive, not -3"),
        (DeltaPurgeDeletionVectorsOperator, "min_deleted_ratio", "half", "min_deleted_ratio must be a number"),
        (
            DeltaPurgeDeletionVectorsOperator,
            "min_deleted_ratio",
            "1",
            "min_deleted_ratio must be at least 0 and below 1",
        ),
    ],
)
def test_a_rendered_number_of_the_wrong_kind_is_named(operator, argument, rendered, message) -> None:
    extra = {"source": "/s", "txn_app_id": "app"} if operator is DeltaAppendOperator else {}
    task = operator(task_id="t", table_path="/t", **{argument: "{{ params.n }}"}, **extra)
    task.render_template_fields({"params": {"n": rendered}})
    with pytest.raises(ValueError, match=message):
        task.request()


def test_numbers_that_are_not_templates_are_checked_when_the_dag_is_parsed() -> None:
    with pytest.raises(ValueError, match="target_size must be positive"):
        DeltaOptimizeOperator(task_id="o", table_path="/t", target_size=0)
    with pytest.raises(ValueError, match="min_deleted_ratio must be at least 0 and below 1"):
        DeltaPurgeDeletionVectorsOperator(task_id="r", table_path="/t", min_deleted_ratio=1.5)


def test_template_fields_are_unchanged() -> None:
    """Every argument a user would template (paths, conditions, versions,
    timestamps, sizes, lists, mappings) is; switches and choices are not."""
    base = ("table_path", "conf", "env_vars", "name")
    expected = {
        DeltaUpdateOperator: (*base, "updates", "condition"),
        DeltaDeleteOperator: (*base, "condition"),
        DeltaAppendOperator: (
            *base,
            "source",
            "source_sql",
            "source_views",
            "partition_by",
            "cluster_by",
            "txn_app_id",
            "txn_version",
            "options",
            "table_properties",
            "table_schema",
            "replace_where",
            "partition_overwrite_mode",
            "user_metadata",
            "location",
        ),
        DeltaMergeOperator: (
            *base,
            "source",
            "source_sql",
            "source_views",
            "on",
            "clauses",
            "source_version",
            "options",
        ),
        DeltaCheckpointOperator: base,
        DeltaVacuumOperator: (*base, "retention_hours"),
        DeltaPurgeDeletionVectorsOperator: (*base, "min_deleted_ratio"),
        DeltaOptimizeOperator: (*base, "where", "target_size", "zorder_by"),
        DeltaAlterTableOperator: (*base, "change", "drop_feature"),
        DeltaRestoreOperator: (*base, "version", "timestamp"),
        DeltaChangesOperator: (*base, "start_version", "end_version", "version_range", "output_path"),
        DeltaConvertOperator: (*base, "partition_by", "table_properties"),
        DeltaGenerateManifestOperator: base,
        DeltaCloneOperator: (*base, "source_path", "version", "timestamp", "table_properties"),
        DeltaRegisterTableOperator: (*base, "location"),
    }
    assert {cls: set(cls.template_fields) for cls in expected} == {cls: set(fields) for cls, fields in expected.items()}
    assert all(len(set(cls.template_fields)) == len(cls.template_fields) for cls in expected)


def test_no_request_field_hides_a_method() -> None:
    for cls in (OperationSpec, *SPECS.values()):
        for field in dataclasses.fields(cls):
            assert not callable(getattr(OperationSpec, field.name, None)), (cls.__name__, field.name)


def test_each_list_is_defined_once_in_the_request_layer() -> None:
    from airflow_delta_provider.hooks import delta_in_process, delta_operation
    from airflow_delta_provider.operators import delta as operators
    from airflow_delta_provider.spark.runtime import io_mode

    # The operators read the request layer's lists and keep no copy of their own.
    assert getattr(operators, "IO_MODES", IO_MODES) is IO_MODES
    assert io_mode.IO_MODES is IO_MODES
    assert delta_operation.OPERATIONS is OPERATIONS == tuple(SPECS)
    assert delta_in_process.PYTHON_ENGINE_OPERATIONS is PYTHON_ENGINE_OPERATIONS
    assert PYTHON_ENGINE_OPERATIONS == (
        "checkpoint",
        "vacuum",
        "alter",
        "restore",
        "convert",
        "generate",
        "clone",
        "register",
    )


def test_the_specs_import_neither_pyspark_nor_airflow_nor_the_core_beyond_its_errors() -> None:
    code = (
        "import json, sys, airflow_delta_provider.operations.argv as r;"
        "r.parse_request(['delete', '/t']).to_argv();"
        # The catalog reference parser is string work over the errors and the quoting module (which
        # imports nothing): the specs check table names with it.
        "light = ('airflow_delta_provider.operations', 'airflow_delta_provider.spark.runtime.io_modes', 'airflow_delta_provider.delta.errors', 'airflow_delta_provider.delta.catalog.reference', 'airflow_delta_provider.delta.expressions.quoting');"
        "shells = ('airflow_delta_provider.spark', 'airflow_delta_provider.spark.runtime', 'airflow_delta_provider.delta', 'airflow_delta_provider.delta.catalog', 'airflow_delta_provider.delta.expressions');"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j', 'airflow', 'pyarrow')"
        " or m.startswith('airflow_delta_provider.') and not m.startswith(light) and m not in shells)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_templated_arguments_reach_the_request_once_rendered() -> None:
    """Templates render as before (same template_fields); execute() builds the request from the rendered values."""
    changes = DeltaChangesOperator(
        task_id="c", table_path="{{ params.root }}/t", start_version="{{ params.start }}", output_path="/o"
    )
    update = DeltaUpdateOperator(
        task_id="u", table_path="/t", updates={"status": "'{{ params.status }}'"}, condition="day = '{{ ds }}'"
    )
    context: Any = {"params": {"root": "/lake", "start": 3, "status": "late"}, "ds": "2026-11-27"}
    for operator in (changes, update):
        operator.render_template_fields(context)
    assert (changes.request().table_path, changes.request().start_version) == ("/lake/t", 3)
    assert update.request().updates == (("status", "'late'"),)
    assert update.request().condition == "day = '2026-11-27'"
    for request in (changes.request(TOKEN), update.request(TOKEN)):
        assert parse_request(request.to_argv()) == request


def test_a_rendered_value_of_the_wrong_kind_fails_the_task_without_a_retry(tmp_path) -> None:
    """A template that renders a non-number where a version is needed: the task
    fails for good (no retry mends it), names the argument, and runs nothing."""
    from types import SimpleNamespace

    from airflow.sdk.exceptions import AirflowFailException

    changes = DeltaChangesOperator(
        task_id="c", table_path=str(tmp_path / "t"), start_version="{{ params.start }}", output_path=str(tmp_path / "o")
    )
    changes.render_template_fields({"params": {"start": "yesterday"}})
    ti = SimpleNamespace(dag_id="d", task_id="c", run_id="r", map_index=-1)
    with pytest.raises(AirflowFailException, match="start_version must be a version number, not 'yesterday'"):
        changes.execute({"ti": ti})  # type: ignore[arg-type]
    assert not (tmp_path / "o").exists()


def test_vacuum_mode_is_full_or_lite_and_lite_is_the_cli_switch() -> None:
    lite = DeltaVacuumOperator(task_id="v", table_path="/t", mode="lite").request()
    assert lite.to_argv() == ["vacuum", "/t", "--lite", "--io", "auto"]
    assert DeltaVacuumOperator(task_id="v", table_path="/t").request().mode == "full"
    with pytest.raises(ValueError, match="mode must be one of"):
        DeltaVacuumOperator(task_id="v", table_path="/t", mode="fast")
