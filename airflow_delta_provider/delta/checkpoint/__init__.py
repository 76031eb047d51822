"""Writing checkpoints (classic and V2) and cleaning up expired log files."""
