"""The trigger tests use the shared Delta log fixtures of tests/conftest.py."""
