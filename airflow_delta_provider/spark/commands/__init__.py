"""One Spark application per operation; each makes at most one core commit.

Each ``run_<op>`` function returns a :class:`~airflow_delta_provider.spark.result.CommandResult`
and raises only :class:`~airflow_delta_provider.delta.errors.DeltaError` for
bad input, unsupported tables and conflicts. :mod:`.dispatch` maps each
request type (:mod:`airflow_delta_provider.requests`) to its command.
"""
