"""The names of the ways Spark reads and writes data files (``--io``; the operators' ``io``).

Apart from :mod:`.io_mode`, which picks one per store, so that the specs
(which a DAG file imports) name them without importing the storage layer.
"""

#: Spark's Hadoop filesystem, pyarrow through the storage layer, or picked per store.
IO_MODES = ("auto", "hadoop", "arrow")
AUTO, HADOOP, ARROW = IO_MODES

__all__ = ["ARROW", "AUTO", "HADOOP", "IO_MODES"]
