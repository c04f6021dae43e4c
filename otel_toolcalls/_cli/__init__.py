"""``otel-toolcalls``: the command line (``doctor``, ``chaos``)."""
