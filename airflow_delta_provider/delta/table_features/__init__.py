"""Table features: one module per feature, and the gate that says what this implementation can read and write."""
