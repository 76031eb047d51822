"""Every Python example of README.md and docs/*.rst runs, so none can drift from the code.

The examples are the ```` ```python ```` fences of README.md and the
``.. code-block:: python`` blocks of docs/*.rst. Blocks in any other language
(``bash``, ``text``, literal ``::`` blocks of shell lines or output) are not
Python and are not run.

Each Python block is one of two kinds, told apart by one rule:

- **a DAG file**: the block contains ``with DAG(``. It is imported as written.
- **a fragment**: any other block (an operator call, a sensor, MERGE clause
  lists). The test indents it, unchanged, under
  ``with DAG(dag_id="<file>_<line>", schedule=None):``, so every task it
  creates joins that DAG. A fragment imports what it uses, as a DAG file
  does; nothing is imported for it.

Paths: ``/data/...`` and ``/landing/...`` (also inside ``file:///data/...``)
become folders of the test's tmp dir. Nothing else in a block changes.

Every block must then:

1. import nothing it does not use;
2. import as a DAG file in a ``DagBag`` with no import error, and define at
   least one DAG;
3. render the templated fields of every task against a run's context:
   ``ds``, ``logical_date``, ``params``, ``var`` (no Variable is set:
   ``var.value.get(key, default)`` is the default) and ``ti.xcom_pull``,
   which answers what a Delta operator or sensor pushes (its version under
   the key ``version``, its result ``{table, version, operation, metrics}``
   as ``return_value``), for a task upstream of a ``DeltaChangesOperator``
   a version range (what ``assets.version_range`` returns), for a
   ``DeltaMaintenanceOperator``'s ``decisions`` the decisions of a table
   due for OPTIMIZE and REORG, or, for any other task of the block, a
   placeholder string. A Delta operator's rendered arguments must then make its
   operation request, which is the first thing its ``execute`` does;
4. make valid MERGE clauses of each list of ``{"when": ...}`` dicts it
   shows on its own (docs/merge.rst's clause examples).

Two examples also run through ``dag.test()`` on local Spark (the session's
``spark_default`` connection), exactly as printed but for the paths: the
first Python example of README.md and the first DAG file of docs/merge.rst,
the MERGE example.
"""

from __future__ import annotations

import ast
import datetime
import functools
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pendulum
import pytest

from airflow_delta_provider.hooks.delta_spark import application_path
from airflow_delta_provider.operators.delta import DeltaChangesOperator, DeltaMergeOperator, DeltaSparkOperator
from airflow_delta_provider.operators.maintenance import DECISIONS_XCOM_KEY, DeltaMaintenanceOperator
from tests.airflow_env import run_dag, task_states

ROOT = Path(__file__).resolve().parents[2]
#: The logical date of the rendered and the run examples.
LOGICAL_DATE = pendulum.datetime(2026, 5, 4, tz="UTC")

needs_spark = pytest.mark.skipif(not Path(application_path()).is_file(), reason="the Spark CLI is not there")


@dataclass(frozen=True)
class Block:
    """One Python example: where it is and its code, dedented."""

    doc: str  # relative to the repository root
    line: int  # of its first line of code
    code: str

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def is_dag_file(self) -> bool:
        return "with DAG(" in self.code


def markdown_blocks(path: Path) -> list[Block]:
    blocks, code, start = [], None, 0
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if code is None:
            if line.strip() == "```python":
                code, start = [], number + 1
        elif line.strip() == "```":
            blocks.append(Block(str(path.relative_to(ROOT)), start, "\n".join(code) + "\n"))
            code = None
        else:
            code.append(line)
    return blocks


_DIRECTIVE = re.compile(r"^(\s*)\.\. code-block:: python\s*$")


def rst_blocks(path: Path) -> list[Block]:
    lines = path.read_text().splitlines()
    blocks = []
    for index, line in enumerate(lines):
        match = _DIRECTIVE.match(line)
        if not match:
            continue
        indent = len(match.group(1))
        body = index + 1
        while body < len(lines) and lines[body].strip().startswith(":"):  # directive options
            body += 1
        end = body
        while end < len(lines) and (not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent):
            end += 1
        code = textwrap.dedent("\n".join(lines[body:end])).strip("\n")
        first = body + next(i for i, text in enumerate(lines[body:end]) if text.strip())
        blocks.append(Block(str(path.relative_to(ROOT)), first + 1, code + "\n"))
    return blocks


BLOCKS = markdown_blocks(ROOT / "README.md") + [
    block for path in sorted((ROOT / "docs").glob("*.rst")) for block in rst_blocks(path)
]


def dag_file(block: Block, root: Path) -> str:
    """The block as a DAG file: paths under ``root``, a fragment wrapped into a DAG."""
    code = re.sub(r"(?<![\w.])/(data|landing)/", lambda m: f"{root}/{m.group(1)}/", block.code)
    if block.is_dag_file:
        return code
    dag_id = re.sub(r"\W", "_", block.id)
    return (
        "from airflow.sdk import DAG as _ExampleDAG\n\n"
        f"with _ExampleDAG(dag_id={dag_id!r}, schedule=None):\n" + textwrap.indent(code, "    ")
    )


def load_dags(block: Block, tmp_path: Path) -> dict[str, Any]:
    """The DAGs of ``block``, imported by a DagBag from a file in ``tmp_path``."""
    from airflow.dag_processing.dagbag import DagBag

    path = tmp_path / "dags" / (re.sub(r"\W", "_", block.id) + ".py")
    path.parent.mkdir(exist_ok=True)
    path.write_text(dag_file(block, tmp_path))
    bag = DagBag(dag_folder=str(path), safe_mode=False)
    errors = [error.strip().splitlines()[-1] for error in bag.import_errors.values()]
    assert not errors, f"{block.id} does not import: {errors[0] if errors else ''}"
    assert bag.dags, f"{block.id} defines no DAG"
    return bag.dags


def unused_imports(code: str) -> list[str]:
    tree = ast.parse(code)
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported |= {alias.asname or alias.name for alias in node.names}
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    return sorted(imported - used)


def clause_lists(code: str) -> list[Any]:
    """The lists of ``{"when": ...}`` dicts the block shows as statements of their own."""
    lists = []
    for node in ast.parse(code).body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.List):
            value = ast.literal_eval(node.value)
            if value and all(isinstance(clause, dict) and "when" in clause for clause in value):
                lists.append(value)
    return lists


class _Variables:
    """``var.value`` and ``var.json`` of a deployment where no Variable is set."""

    def get(self, key: str, default: Any = None) -> Any:
        return default

    def __getattr__(self, key: str) -> Any:
        raise KeyError(f"Variable {key} is not set")


#: What a maintenance branch decided, for the steps' templates.
MAINTENANCE_DECISIONS = {
    "due": ["optimize", "reorg"],
    "steps": {
        "optimize": {"due": True, "arguments": {"where": "(`day` = '2026-11-27')"}},
        "reorg": {"due": True, "arguments": {"min_deleted_ratio": 0.05}},
        "vacuum": {"due": False, "arguments": {}},
        "checkpoint": {"due": False, "arguments": {}},
    },
}


class _TaskInstance:
    """``ti`` of the rendering context; ``xcom_pull`` as in the module docstring."""

    VERSION = 3

    def __init__(self, dag: Any, task: Any) -> None:
        self.dag, self.task = dag, task
        self.dag_id, self.task_id = dag.dag_id, task.task_id
        self.run_id = f"scheduled__{LOGICAL_DATE.isoformat()}"
        self.map_index, self.try_number = -1, 1

    def xcom_pull(self, task_ids: Any = None, key: str = "return_value", **kwargs: Any) -> Any:
        from airflow.sdk import BaseSensorOperator

        upstream = self.dag.task_dict.get(task_ids) if isinstance(task_ids, str) else None
        if isinstance(self.task, DeltaChangesOperator) and task_ids in self.task.upstream_task_ids:
            return {"table": self.task.table_path, "start_version": 1, "end_version": self.VERSION}
        if isinstance(upstream, DeltaMaintenanceOperator) and key == DECISIONS_XCOM_KEY:
            return MAINTENANCE_DECISIONS
        if upstream is not None and not isinstance(upstream, (DeltaSparkOperator, BaseSensorOperator)):
            return f"xcom-of-{task_ids}"
        if key == "version":
            return self.VERSION
        table = getattr(upstream, "table_path", "/data/orders")
        return {"table": table, "version": self.VERSION, "operation": "WRITE", "metrics": {}}


def render_context(dag: Any, task: Any) -> dict[str, Any]:
    from airflow.sdk.execution_time import macros

    ti = _TaskInstance(dag, task)
    end = LOGICAL_DATE.add(days=1)
    return {
        "dag": dag,
        "task": task,
        "ti": ti,
        "task_instance": ti,
        "run_id": ti.run_id,
        "params": dag.params.dump(),
        "var": {"value": _Variables(), "json": _Variables()},
        "macros": macros,
        "logical_date": LOGICAL_DATE,
        "data_interval_start": LOGICAL_DATE,
        "data_interval_end": end,
        "ds": LOGICAL_DATE.strftime("%Y-%m-%d"),
        "ds_nodash": LOGICAL_DATE.strftime("%Y%m%d"),
        "ts": LOGICAL_DATE.isoformat(),
        "ts_nodash": LOGICAL_DATE.strftime("%Y%m%dT%H%M%S"),
        "triggering_asset_events": {},
        "inlets": [],
        "outlets": [],
    }


def test_the_docs_have_python_examples_of_both_kinds() -> None:
    docs = {block.doc for block in BLOCKS}
    assert {"README.md", "docs/operators.rst", "docs/merge.rst", "docs/index.rst"} <= docs
    assert any(block.is_dag_file for block in BLOCKS) and any(not block.is_dag_file for block in BLOCKS)


@pytest.mark.parametrize("block", [pytest.param(block, id=block.id) for block in BLOCKS])
def test_example(block: Block, tmp_path: Path) -> None:
    assert unused_imports(block.code) == [], f"{block.id} imports names it does not use"
    dags = load_dags(block, tmp_path)
    for dag in dags.values():
        for task in dag.tasks:
            task.render_template_fields(render_context(dag, task))
            if isinstance(task, DeltaSparkOperator):
                task.request(token="docs-example")  # the rendered arguments make a request
    for clauses in clause_lists(block.code):
        DeltaMergeOperator(task_id="clauses", table_path="/t", source="/s", on="t.id = s.id", clauses=clauses)


def _first(predicate: Any) -> Block:
    return next(block for block in BLOCKS if predicate(block))


def _run(dag: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``run_dag`` at :data:`LOGICAL_DATE`, so the example's ``{{ ds }}`` is known."""
    monkeypatch.setattr(dag, "test", functools.partial(dag.test, logical_date=LOGICAL_DATE))
    return run_dag(dag)


@needs_spark
@pytest.mark.usefixtures("airflow_db")
def test_the_readme_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """README's DAG loads the day's Parquet folder, then expires old pending orders."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    block = _first(lambda block: block.doc == "README.md")
    (dag,) = load_dags(block, tmp_path).values()
    today = datetime.date.today()
    landing = tmp_path / "landing" / "orders" / LOGICAL_DATE.strftime("%Y-%m-%d")
    landing.mkdir(parents=True)
    orders = {
        "order_id": pa.array([1, 2, 3], pa.int64()),
        "status": ["pending", "pending", "shipped"],
        "updated_at": [today - datetime.timedelta(days=60), today, today - datetime.timedelta(days=60)],
    }
    pq.write_table(pa.table(orders), landing / "part-0.parquet")

    dag_run = _run(dag, monkeypatch)

    assert set(task_states(dag_run).values()) == {"success"}, task_states(dag_run)
    table = DeltaTable(str(tmp_path / "data" / "orders"))
    rows = table.to_pyarrow_table().sort_by("order_id")
    assert rows["status"].to_pylist() == ["expired", "pending", "shipped"]
    assert [entry["operation"] for entry in table.history()][:2] == ["UPDATE", "WRITE"]


@needs_spark
@pytest.mark.usefixtures("airflow_db")
def test_the_merge_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/merge.rst's DAG writes its source and merges it into an existing orders table."""
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake

    block = _first(lambda block: block.doc == "docs/merge.rst" and block.is_dag_file)
    (dag,) = load_dags(block, tmp_path).values()
    table = str(tmp_path / "data" / "orders")
    existing = {
        "order_id": pa.array([1, 2, 3], pa.int64()),
        "status": ["open", "open", "open"],
        "amount": pa.array([1.0, 2.0, 3.0], pa.float64()),
    }
    write_deltalake(table, pa.table(existing))

    dag_run = _run(dag, monkeypatch)

    assert set(task_states(dag_run).values()) == {"success"}, task_states(dag_run)
    rows = DeltaTable(table).to_pyarrow_table().sort_by("order_id").to_pylist()
    assert rows == [
        {"order_id": 1, "status": "shipped", "amount": 10.0},  # matched: updated
        {"order_id": 3, "status": "open", "amount": 3.0},  # not in the source: unchanged
        {"order_id": 4, "status": "open", "amount": 40.0},  # not matched: inserted
    ]  # order 2, matched and cancelled, is deleted
    assert DeltaTable(table).history(1)[0]["operation"] == "MERGE"
