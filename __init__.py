"""tilesync: dependent GPU kernels synchronized tile by tile (cuSync, Kitsune) on xDSL."""

__version__ = "0.1.0"


def compile(module_or_text, pipeline=None, target="sm_90", **options):
    """Compile MLIR text or a ModuleOp to PTX; see tilesync.api.compile."""
    from tilesync.api import compile as _compile

    return _compile(module_or_text, pipeline=pipeline, target=target, **options)
