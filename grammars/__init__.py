"""Fragment grammars and their manifests, one folder per language (data, not code)."""
