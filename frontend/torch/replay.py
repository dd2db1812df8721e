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


class GraphReplay:
    def __init__(self, function: Any, inputs: list[Any]):
        import torch
        from torch.utils._pytree import tree_leaves

        from tilesync.frontend.torch.cost import capture_graph

        tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
        if not tensors or not all(t.is_cuda for t in tensors):
            raise NotReplayable("inputs off the GPU")
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            raise NotReplayable("autograd records the graph")
        self.function = function
        self.static = [t.clone() if isinstance(t, torch.Tensor)
                       and not isinstance(t, torch.nn.Parameter) else t for t in inputs]
        # what a call checks, slot by slot: parameters read in place (the same tensor, or
        # one at its address and of its layout), inputs copied in (of the same shape, dtype
        # and device), constants (equal)
        self.kept = [(i, t, t.shape, t.stride(), t.dtype) for i, t in enumerate(self.static)
                     if isinstance(t, torch.nn.Parameter)]
        self.copied = [(i, t, t.shape, t.dtype, t.device) for i, t in enumerate(self.static)
                       if isinstance(t, torch.Tensor) and not isinstance(t, torch.nn.Parameter)]
        self.constants = [(i, v) for i, v in enumerate(self.static)
                          if not isinstance(v, torch.Tensor)]
        static_tensors = [t for t in self.static if isinstance(t, torch.Tensor)]
        versions = [_version(t) for t in static_tensors]
        self.graph, self.outputs = capture_graph(lambda: function(*self.static))
        if [_version(t) for t in static_tensors] != versions:
            raise NotReplayable("the graph writes to its inputs")
        storages = {t.untyped_storage().data_ptr() for t in self.static
                    if isinstance(t, torch.Tensor)}
        leaves = tree_leaves(self.outputs)
        if any(isinstance(o, torch.Tensor) and o.untyped_storage().data_ptr() in storages
               for o in leaves):
            raise NotReplayable("an output is a view of an input")
        self.flat = isinstance(self.outputs, tuple | list) and \
            all(isinstance(o, torch.Tensor) for o in self.outputs)

    def _fits(self, args: tuple[Any, ...]) -> bool:
        import torch

        if len(args) != len(self.static):
            return False
        for i, static, shape, stride, dtype in self.kept:
            arg = args[i]
            if arg is not static and not (
                    isinstance(arg, torch.Tensor) and arg.data_ptr() == static.data_ptr()
                    and arg.shape == shape and arg.stride() == stride and arg.dtype == dtype):
                return False
        for i, _, shape, dtype, device in self.copied:
            arg = args[i]
            if not isinstance(arg, torch.Tensor) or arg.shape != shape or arg.dtype != dtype \
                    or arg.device != device:
                return False
        for i, value in self.constants:
            if isinstance(args[i], torch.Tensor) or args[i] != value:
                return False
        if torch.is_grad_enabled() and any(isinstance(a, torch.Tensor) and a.requires_grad
                                           for a in args):
            return False
        return not torch.cuda.is_current_stream_capturing()

    def __call__(self, *args: Any) -> Any:
        import torch

        if not self._fits(args):
            return self.function(*args)
        for i, static, *_ in self.copied:
            static.copy_(args[i])
        self.graph.replay()
        if self.flat:
            return type(self.outputs)(o.clone() for o in self.outputs)
        if isinstance(self.outputs, torch.Tensor):
            return self.outputs.clone()
        from torch.utils._pytree import tree_map_only

        return tree_map_only(torch.Tensor, torch.Tensor.clone, self.outputs)


__all__ = ["GraphReplay", "NotReplayable"]
