"""Table features: every feature's name and what we implement
(:mod:`.features`), one module per feature with logic of its own, and the
gate (:mod:`.gate`) that says whether a table can be read or written and
which protocol its properties need."""
