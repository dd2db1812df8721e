"""Front ends that bring models to tilesync: `tilesync.frontend.torch` (PyTorch)."""
