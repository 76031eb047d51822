"""Writing DataFrames into table files: files and stats, the arrow writer, Z-order, generated columns and change data."""
