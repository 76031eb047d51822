"""Each Delta operation's arguments, defined once: one frozen dataclass per operation.

The operator builds a request; the request turns itself into the Spark
application's argv; the application parses that argv back into an equal
request and runs the command the request's type maps to.

- :mod:`.fields`: how a field is spelled on the command line (dataclass metadata);
- :mod:`.base`: :class:`OperationRequest`, the fields every operation has
  (``--io`` takes one of :data:`IO_MODES`), and the request <-> argv round trip;
- :mod:`.operations`: one dataclass per operation, the lists derived from
  them (:data:`OPERATIONS`, :data:`PYTHON_ENGINE_OPERATIONS`) and the choices
  of their options (:data:`CHANGES_OUTPUT_FORMATS`, ...);
- :mod:`.sources`: where APPEND's and MERGE's rows come from (a path in one
  of :data:`SOURCE_FORMATS`, or a query over :class:`SourceView` s);
- :mod:`.parser`: the argparse parser generated from the dataclasses.

This is the package's lowest layer: it imports the standard library only
(neither pyspark nor airflow, nor the Delta core), so the Airflow layer, the
Spark applications and the docs all take these definitions from here.
"""

from airflow_delta_provider.requests.base import IO_MODES, OperationRequest
from airflow_delta_provider.requests.operations import (
    APPEND_MODES,
    CHANGES_OUTPUT_FORMATS,
    DYNAMIC_OVERWRITE,
    GENERATE_MODES,
    LITE_VACUUM,
    OPERATIONS,
    PARTITION_OVERWRITE_MODES,
    PYTHON_ENGINE_OPERATIONS,
    REQUESTS,
    STATIC_OVERWRITE,
    VACUUM_MODES,
    AlterRequest,
    AppendRequest,
    ChangesRequest,
    CheckpointRequest,
    CloneRequest,
    ConvertRequest,
    DeleteRequest,
    GenerateRequest,
    MergeRequest,
    OptimizeRequest,
    ReorgRequest,
    RestoreRequest,
    UpdateRequest,
    VacuumRequest,
)
from airflow_delta_provider.requests.parser import (
    build_parser,
    parse_request,
    request_from_namespace,
)
from airflow_delta_provider.requests.sources import SOURCE_FORMATS, SourceView, parse_source_views, views_json

__all__ = [
    "APPEND_MODES",
    "CHANGES_OUTPUT_FORMATS",
    "DYNAMIC_OVERWRITE",
    "GENERATE_MODES",
    "IO_MODES",
    "LITE_VACUUM",
    "OPERATIONS",
    "PARTITION_OVERWRITE_MODES",
    "PYTHON_ENGINE_OPERATIONS",
    "REQUESTS",
    "SOURCE_FORMATS",
    "STATIC_OVERWRITE",
    "VACUUM_MODES",
    "AlterRequest",
    "AppendRequest",
    "ChangesRequest",
    "CheckpointRequest",
    "CloneRequest",
    "ConvertRequest",
    "DeleteRequest",
    "GenerateRequest",
    "MergeRequest",
    "OperationRequest",
    "OptimizeRequest",
    "ReorgRequest",
    "RestoreRequest",
    "SourceView",
    "UpdateRequest",
    "VacuumRequest",
    "build_parser",
    "parse_request",
    "parse_source_views",
    "request_from_namespace",
    "views_json",
]
