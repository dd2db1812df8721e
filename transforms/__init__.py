"""Pass registry: every pass of tilesync (transforms and lowerings) by its command-line name."""

from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass

# name -> (module, class). One pass, one file; the module is imported only when the pass is used.
_PASSES: dict[str, tuple[str, str]] = {
    # cuSync synchronization (transforms/sync/)
    "sync-generate-policies": ("tilesync.transforms.sync.generate_policies",
                               "GeneratePoliciesPass"),
    "sync-select-policy": ("tilesync.transforms.sync.select_policy", "SelectPolicyPass"),
    "sync-insert-post-wait": ("tilesync.transforms.sync.insert_post_wait", "InsertPostWaitPass"),
    "sync-reorder-loads": ("tilesync.transforms.sync.reorder_loads", "ReorderLoadsPass"),
    "sync-verify": ("tilesync.transforms.sync.verify", "VerifySyncPass"),
    "sync-annotate-occupancy": ("tilesync.transforms.sync.annotate_occupancy",
                                "AnnotateOccupancyPass"),
    "sync-tile-order": ("tilesync.transforms.sync.tile_order", "TileOrderPass"),
    "sync-drop-wait-kernel": ("tilesync.transforms.sync.optimize", "DropWaitKernelPass"),
    "sync-drop-tile-order": ("tilesync.transforms.sync.optimize", "DropTileOrderPass"),
    "sync-insert-wait-kernel": ("tilesync.transforms.sync.insert_wait_kernel",
                                "InsertWaitKernelPass"),
    "sync-use-pdl": ("tilesync.transforms.sync.use_pdl", "UsePDLPass"),
    "sync-one-launch": ("tilesync.transforms.sync.one_launch", "OneLaunchPass"),
    "sync-fuse-launches": ("tilesync.transforms.sync.fuse_launches", "FuseLaunchesPass"),
    "sync-epoch-in-memory": ("tilesync.transforms.sync.epoch_in_memory", "EpochInMemoryPass"),
    # the graph level (transforms/graph/)
    "graph-to-stages": ("tilesync.transforms.graph.graph_to_stages", "GraphToStagesPass"),
    "graph-to-dataflow": ("tilesync.transforms.graph.graph_to_dataflow", "GraphToDataflowPass"),
    # Kitsune dataflow (transforms/dataflow/)
    "dataflow-form-pipeline": ("tilesync.transforms.dataflow.form_pipeline", "FormPipelinePass"),
    "dataflow-split-reductions": ("tilesync.transforms.dataflow.split_reductions",
                                  "SplitReductionsPass"),
    "dataflow-insert-queues": ("tilesync.transforms.dataflow.insert_queues",
                               "InsertQueuesPass"),
    "dataflow-allot-ctas": ("tilesync.transforms.dataflow.allot_ctas", "AllotCTAsPass"),
    "dataflow-persistent-kernel": ("tilesync.transforms.dataflow.persistent_kernel",
                                   "PersistentKernelPass"),
    "dataflow-verify": ("tilesync.transforms.dataflow.verify", "VerifyPipelinePass"),
    # lowering (lowering/)
    "convert-tile-to-nvvm": ("tilesync.lowering.tile_to_nvvm", "ConvertTileToNVVMPass"),
    "convert-sync-to-nvvm": ("tilesync.lowering.sync_to_nvvm", "ConvertSyncToNVVMPass"),
    "convert-dataflow-to-nvvm": ("tilesync.lowering.dataflow_to_nvvm",
                                 "ConvertDataflowToNVVMPass"),
    "convert-gpu-to-nvvm": ("tilesync.lowering.gpu_to_nvvm", "ConvertGPUToNVVMPass"),
    "convert-nvvm-to-llvm": ("tilesync.lowering.nvvm_to_llvm", "ConvertNVVMToLLVMPass"),
    "convert-arith-to-llvm": ("tilesync.lowering.arith_to_llvm", "ConvertArithToLLVMPass"),
    "convert-index-to-llvm": ("tilesync.lowering.index_to_llvm", "ConvertIndexToLLVMPass"),
    "convert-cf-to-llvm": ("tilesync.lowering.cf_to_llvm", "ConvertCfToLLVMPass"),
    "convert-func-to-llvm": ("tilesync.lowering.func_to_llvm", "ConvertFuncToLLVMPass"),
    "convert-memref-to-llvm": ("tilesync.lowering.memref_to_llvm", "ConvertMemRefToLLVMPass"),
    "lower-scf-to-cf": ("tilesync.lowering.scf_to_cf", "LowerSCFToCFPass"),
    "tilesync-lower-to-llvm": ("tilesync.lowering.pipeline", "LowerToLLVMPass"),
}


def _loader(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    return lambda: getattr(import_module(module), cls)


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    return {name: _loader(mod, cls) for name, (mod, cls) in _PASSES.items()}


def all_passes_with_xdsl() -> dict[str, Callable[[], type[ModulePass]]]:
    """xDSL's own passes (scf, affine, reconcile…) plus tilesync's, by name."""
    from xdsl.transforms import get_all_passes as xdsl_passes

    passes = dict(xdsl_passes())
    passes.update(get_all_passes())
    return passes
