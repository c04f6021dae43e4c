"""One adapter per provider API: a folder for an SDK with several parts, a module for one with one.
``formats/`` holds the wire formats several SDKs share; what adapters share about SDK objects is
in ``_sdks/``."""
