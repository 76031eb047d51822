"""Delta schema JSON: types, conversion to and from arrow, enforcement and evolution."""
