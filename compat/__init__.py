"""Workarounds for what xDSL 0.74 lacks or does slowly; each module says what, and each has a
parity test under test/python/compat/. Imports only `tilesync.contract` and xDSL."""
