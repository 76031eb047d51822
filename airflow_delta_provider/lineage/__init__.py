"""OpenLineage for the provider's operators and sensors (the ``[openlineage]`` extra).

The operators' and the sensor's ``get_openlineage_facets_on_start`` and
``get_openlineage_facets_on_complete`` import from here inside the method,
so parsing a DAG file never loads this package, the OpenLineage provider or
its client. Without ``apache-airflow-providers-openlineage`` the methods
return None and nothing else changes.

- :mod:`.naming`: the OpenLineage namespace and name of a table or a source path;
- :mod:`.columns`: which input columns feed which output column of a change;
- :mod:`.facets`: OpenLineage datasets and facets from plain values;
- :mod:`.build`: the lineage of one operator or sensor run, read from ``_delta_log``.

Only :mod:`.facets` and :mod:`.build` import OpenLineage.
"""
