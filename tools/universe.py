"""Entry point `xdsl.universe`: makes plain `xdsl-opt` see tilesync's dialects and passes."""

from xdsl.universe import Universe

from tilesync.dialects import get_all_dialects
from tilesync.transforms import get_all_passes

TILESYNC_UNIVERSE = Universe(all_dialects=get_all_dialects(), all_passes=get_all_passes())
