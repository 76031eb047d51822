"""Reading a snapshot into a DataFrame: the scan, deletion vectors, row tracking and the arrow data source."""
