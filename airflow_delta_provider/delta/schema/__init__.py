"""Delta schema JSON, one job a module: the type model and its names
(:mod:`.types`), walking and finding fields (:mod:`.fields`), column-name
rules (:mod:`.names`), Spark's tree display (:mod:`.display`), conversion to
and from pyarrow (:mod:`.arrow`), which type changes widen and their record
(:mod:`.widening`), and the write-time rules: enforcement and
``merge_schema`` (:mod:`.evolution`)."""
