"""The log: reading ``_delta_log`` files, the segment of one version, replay, checkpoint reading and sidecars."""
