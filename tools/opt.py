"""`tilesync-opt`: xDSL's opt driver with tilesync's dialects, passes and the llvm/ptx targets."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from xdsl.xdsl_opt_main import xDSLOptMain

from tilesync.dialects import get_all_dialects
from tilesync.transforms import get_all_passes


class TilesyncOptMain(xDSLOptMain):
    version_format = "tilesync-opt built on xdsl {xdsl_version}"

    def register_all_dialects(self):
        super().register_all_dialects()
        for name, factory in get_all_dialects().items():
            if name not in self.ctx.registered_dialect_names:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self):
        super().register_all_passes()
        for name, factory in get_all_passes().items():
            self.register_pass(name, factory)


def main(argv: Sequence[str] | None = None) -> int:
    TilesyncOptMain(description="tilesync modular optimizer driver", args=argv).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
