"""Real storage servers for the tests (moto's S3 server, Azurite), started by fixtures."""
