"""A form of a graph that replays a CUDA graph: one launch from the host for the whole graph.

    GraphReplay(function, example_inputs)    called like `function`

Around a launch-bound model the host's time is most of a call (bench torch: eager PyTorch
7x slower than its own CUDA graph on LlamaMLP), so each form of a graph is also offered
captured (graph_choice measures both). The capture runs `function` on copies of the inputs
that are not parameters; a call copies its inputs into them, replays, and returns clones of
the captured outputs (a later call overwrites them). A call it cannot replay runs `function`
itself: other shapes, dtypes or constants, another parameter tensor, autograd recording,
or a capture already under way (a CUDA graph of the whole model, which then holds `function`'s
launches). A graph that writes to its inputs or returns a view of one is not captured
(NotReplayable).
"""

from __future__ import annotations

from typing import Any


class NotReplayable(Exception):
    """Why a form cannot be replayed from a CUDA graph, in one line."""


def _version(tensor: Any) -> int | None:
    try:
        return tensor._version
    except Exception:  # inference tensors keep no version counter
        return None


def _signature(tensor: Any) -> tuple[Any, ...]:
    return tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype, tensor.device


class GraphReplay:
    def __init__(self, function: Any, inputs: list[Any]):
        import torch
        from torch.utils._pytree import tree_leaves

        from tilesync.frontend.torch.cost import capture_graph

        tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
        if not tensors or not all(t.is_cuda for t in tensors):
            raise NotReplayable("inputs off the GPU")
        if self._records_autograd(tensors):
            raise NotReplayable("autograd records the graph")
        self.function = function
        self.kept = [isinstance(t, torch.nn.Parameter) for t in inputs]
        self.static = [t if kept or not isinstance(t, torch.Tensor) else t.clone()
                       for t, kept in zip(inputs, self.kept, strict=True)]
        self.signatures = [_signature(t) if isinstance(t, torch.Tensor) else None
                           for t in self.static]
        versions = [_version(t) if isinstance(t, torch.Tensor) else None for t in self.static]
        self.graph, self.outputs = capture_graph(lambda: function(*self.static))
        after = [_version(t) if isinstance(t, torch.Tensor) else None for t in self.static]
        if after != versions:
            raise NotReplayable("the graph writes to its inputs")
        storages = {t.untyped_storage().data_ptr() for t in self.static
                    if isinstance(t, torch.Tensor)}
        if any(isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() in storages
               for o in tree_leaves(self.outputs)):
            raise NotReplayable("an output is a view of an input")

    @staticmethod
    def _records_autograd(tensors: list[Any]) -> bool:
        import torch

        return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)

    def _fits(self, args: tuple[Any, ...]) -> bool:
        import torch

        if len(args) != len(self.static) or torch.cuda.is_current_stream_capturing():
            return False
        for arg, static, kept, signature in zip(args, self.static, self.kept, self.signatures,
                                                strict=True):
            if signature is None:
                if isinstance(arg, torch.Tensor) or arg != static:
                    return False
            elif not isinstance(arg, torch.Tensor) or _signature(arg) != signature \
                    or (kept and arg.data_ptr() != static.data_ptr()):
                return False
        return not self._records_autograd([a for a in args if isinstance(a, torch.Tensor)])

    def __call__(self, *args: Any) -> Any:
        import torch
        from torch.utils._pytree import tree_map_only

        if not self._fits(args):
            return self.function(*args)
        for arg, static, kept in zip(args, self.static, self.kept, strict=True):
            if isinstance(arg, torch.Tensor) and not kept:
                static.copy_(arg)
        self.graph.replay()
        return tree_map_only(torch.Tensor, torch.Tensor.clone, self.outputs)


__all__ = ["GraphReplay", "NotReplayable"]
