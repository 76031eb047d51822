"""The log: reading ``_delta_log`` files (:mod:`.store`), the segment of one
version (:mod:`.segment`), replay (:mod:`.replay`), checkpoint reading and
sidecars, and the probe for the latest version (:mod:`.version_probe`)."""
