"""A form of a graph that replays a CUDA graph: one launch from the host for the whole graph.

    GraphReplay(function, example_inputs)    called like `function`

Around a launch-bound model the host's time is most of a call (bench torch: eager PyTorch
7x slower than its own CUDA graph on LlamaMLP), so each form of a graph is also offered
captured (graph_choice measures both). A call that fits (see below) replays, at no more
device time than the graph itself where it can:

* inputs in place: a capture reads the tensors at the addresses it was captured on, so a call
  whose inputs lie where an earlier call's did (the same tensors, or the caching allocator's
  same blocks) replays that capture without copying them; up to ADDRESS_CAPTURES such
  captures are made as new addresses come;
* outputs handed over: a call returns the capture's own output buffers (aliases), and the
  capture is replayed again only once nothing outside holds them; while they are held (`y =
  model(x)` holds the last call's `y` through the next call), another capture at the same
  addresses takes the call;
* past that, the capture made at construction: the call's inputs copied into its own buffers,
  replayed, its outputs cloned (it never hands its buffers out, so it is always free).

Each capture has its own memory pool: in a shared one a later capture's outputs could lie in
an earlier one's intermediates, which its replay overwrites while the outputs are handed out.
Parameters are read in place. A call it cannot replay runs `function` itself: other shapes,
strides, dtypes or constants, another parameter tensor, autograd recording (an input or a
parameter of `function` that requires grad, with grad on: records_autograd), or a capture
already under way (a CUDA graph of the whole model, which then holds `function`'s launches).
A graph that writes to its inputs or returns a view of one is not captured (NotReplayable).
"""

from __future__ import annotations

from typing import Any

from tilesync.frontend.torch.ops import kernel_moves

ADDRESS_CAPTURES = 4
"""Captures on a form's callers' own input addresses, at most (each keeps its pool: its
intermediates and outputs). A loop `y = model(x)` on fresh x takes four: x alternates between
two blocks, y between two captures of each."""


class NotReplayable(Exception):
    """Why a form cannot be replayed from a CUDA graph, in one line."""


def _version(tensor: Any) -> int | None:
    try:
        return tensor._version
    except Exception:  # inference tensors keep no version counter
        return None


def _holders(tensor: Any) -> int | None:
    """How many tensors hold `tensor`'s storage (None where torch does not say)."""
    import torch

    use_count = getattr(torch._C, "_storage_Use_Count", None)
    return None if use_count is None else use_count(tensor.untyped_storage()._cdata)


class _Capture:
    """One CUDA graph of the form and its output buffers, with how many tensors held each
    buffer's storage when the capture was made (all of them this object's own)."""

    def __init__(self, function: Any, args: list[Any]):
        import torch
        from torch.utils._pytree import tree_leaves

        from tilesync.frontend.torch.cost import capture_graph

        with torch.no_grad():  # a replay records no autograd (GraphReplay.records_autograd)
            self.graph, self.outputs = capture_graph(lambda: function(*args))
        self.leaves = [o for o in tree_leaves(self.outputs) if _is_tensor(o)]
        self.own = [_holders(o) for o in self.leaves]

    def free(self) -> bool:
        """Nothing outside this capture holds its outputs: a replay overwrites no one's."""
        return all(own is not None and _holders(o) <= own  # fewer: the function let go too
                   for o, own in zip(self.leaves, self.own, strict=True))

    def results(self, hand_over: bool) -> Any:
        """The outputs, as aliases of the buffers (`hand_over`) or as clones."""
        import torch
        from torch.utils._pytree import tree_map_only

        take = torch.Tensor.detach if hand_over else torch.Tensor.clone
        if isinstance(self.outputs, torch.Tensor):
            return take(self.outputs)
        if isinstance(self.outputs, tuple | list) and all(_is_tensor(o) for o in self.outputs):
            return type(self.outputs)(take(o) for o in self.outputs)
        return tree_map_only(torch.Tensor, take, self.outputs)


def _is_tensor(value: Any) -> bool:
    import torch

    return isinstance(value, torch.Tensor)


class GraphReplay:
    def __init__(self, function: Any, inputs: list[Any]):
        import torch

        tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
        if not tensors or not all(t.is_cuda for t in tensors):
            raise NotReplayable("inputs off the GPU")
        if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            raise NotReplayable("autograd records the graph")
        self.function = function
        # a GraphModule reads its parameters as attributes, not arguments
        parameters = getattr(function, "parameters", None)
        self.parameters = list(parameters()) if callable(parameters) else []
        self.static = [t.clone() if isinstance(t, torch.Tensor)
                       and not isinstance(t, torch.nn.Parameter) else t for t in inputs]
        # what a call checks, slot by slot: parameters read in place (the same tensor, or
        # one at its address and of its layout), inputs (of the same shape, strides, dtype
        # and device), constants (equal)
        self.kept = [(i, t, t.shape, t.stride(), t.dtype) for i, t in enumerate(self.static)
                     if isinstance(t, torch.nn.Parameter)]
        self.copied = [(i, t, t.shape, t.stride(), t.dtype, t.device)
                       for i, t in enumerate(self.static)
                       if isinstance(t, torch.Tensor) and not isinstance(t, torch.nn.Parameter)]
        self.constants = [(i, v) for i, v in enumerate(self.static)
                          if not isinstance(v, torch.Tensor)]
        static_tensors = [t for t in self.static if isinstance(t, torch.Tensor)]
        versions = [_version(t) for t in static_tensors]
        self.kernels = kernel_moves()
        self.copying = _Capture(function, self.static)
        if [_version(t) for t in static_tensors] != versions:
            raise NotReplayable("the graph writes to its inputs")
        storages = {t.untyped_storage().data_ptr() for t in self.static
                    if isinstance(t, torch.Tensor)}
        if any(o.untyped_storage().data_ptr() in storages for o in self.copying.leaves):
            raise NotReplayable("an output is a view of an input")
        # input addresses -> their captures; none where torch does not count storage holders
        self.in_place: dict[tuple, list[_Capture]] = {}
        self.hands_over = all(own is not None for own in self.copying.own)

    @property
    def graph(self) -> Any:
        """The capture made at construction (copied inputs)."""
        return self.copying.graph

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
        for i, _, shape, stride, dtype, device in self.copied:
            arg = args[i]
            if not isinstance(arg, torch.Tensor) or arg.shape != shape or arg.dtype != dtype \
                    or arg.device != device or arg.stride() != stride:
                return False
        for i, value in self.constants:
            if isinstance(args[i], torch.Tensor) or args[i] != value:
                return False
        if self.records_autograd(args):
            return False
        return not torch.cuda.is_current_stream_capturing()

    def records_autograd(self, args: tuple[Any, ...]) -> bool:
        """Whether a call on `args` is recorded for backward (an argument or a parameter of the
        function requires grad, and grad is on): a replay's outputs would have no history, so
        such a call runs the function itself."""
        import torch

        return torch.is_grad_enabled() and (
            any(isinstance(a, torch.Tensor) and a.requires_grad for a in args)
            or any(p.requires_grad for p in self.parameters))

    def _in_place_capture(self, args: tuple[Any, ...]) -> _Capture | None:
        """A free capture on `args`' own addresses, made now if there is room; None if not."""
        key = tuple(args[i].data_ptr() for i, *_ in self.copied)
        captures = self.in_place.setdefault(key, [])
        for capture in captures:
            if capture.free():
                return capture
        if not self.hands_over or sum(map(len, self.in_place.values())) >= ADDRESS_CAPTURES:
            return None
        captures.append(_Capture(self.function, list(args)))
        return captures[-1]

    def _capture_again(self) -> None:
        """Drop the captures made before a pipeline moved to its full kernels (they replay the
        fast tier's) and capture the copying form on the kernels that run now."""
        self.kernels = kernel_moves()
        self.in_place = {}
        self.copying = _Capture(self.function, self.static)

    def __call__(self, *args: Any) -> Any:
        if not self._fits(args):
            return self.function(*args)
        if self.kernels != kernel_moves():
            self._capture_again()
        capture = self._in_place_capture(args)
        if capture is not None:
            capture.graph.replay()
            return capture.results(hand_over=True)
        for i, static, *_ in self.copied:
            static.copy_(args[i])
        self.copying.graph.replay()
        return self.copying.results(hand_over=False)


__all__ = ["ADDRESS_CAPTURES", "GraphReplay", "NotReplayable"]
