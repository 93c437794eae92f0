"""The `part` command line: check | eval | solve | convert."""
