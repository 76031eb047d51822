"""Where the Spark engine runs: sessions (classic and Connect), I/O modes, and store settings for the JVM and the Python workers."""
