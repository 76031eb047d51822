"""Version checksums: the ``NNN.crc`` file written after each commit
(PROTOCOL.md "Version Checksum File"), derived incrementally, and checked
against a snapshot's state when one is present."""
