"""Apache Airflow provider for Delta Lake tables, changed by Spark without Databricks."""

__version__ = "0.1.0"
