"""What a run needs around the algorithms: the Deadline, Ctrl-C handling, capture of a native
library's standard output, and executors (local processes or a Dask cluster)."""
