"""One module per `part` command: `add(subparsers)` declares its arguments, `run(args)`
does the work and returns the exit code."""
