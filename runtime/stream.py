"""Streams with priorities, and events for ordering and timing.

cuSync runs producer and consumer kernels on separate streams; the producer's stream gets the
higher priority so its blocks are dispatched first when both have work queued.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from tilesync.runtime.device import get_device
from tilesync.runtime.errors import SpinTimeoutError, TilesyncRuntimeError, check

# The first timed-out spin of a run: (report, kernel, block), or None.
TimedOutWait = Callable[[], "tuple[str, str, tuple[int, int, int]] | None"]


def priority_range() -> tuple[int, int]:
    """(least, greatest) stream priority; greatest is numerically lower (H200: 0, -5)."""
    from cuda.bindings import driver

    get_device()
    least, greatest = check(driver.cuCtxGetStreamPriorityRange(), "cuCtxGetStreamPriorityRange")
    return int(least), int(greatest)


class Stream:
    """A non-blocking stream (it does not synchronize with the legacy default stream).

    priority=None takes the default (least) priority; lower numbers are higher priorities and
    must lie within priority_range().
    """

    def __init__(self, priority: int | None = None):
        from cuda.bindings import driver

        get_device()
        least, greatest = priority_range()
        if priority is None:
            priority = least
        if not greatest <= priority <= least:
            raise ValueError(
                f"stream priority {priority} outside the device's range "
                f"[{greatest} (highest), {least} (lowest)]"
            )
        flags = driver.CUstream_flags.CU_STREAM_NON_BLOCKING
        self.handle = check(
            driver.cuStreamCreateWithPriority(flags, priority), "cuStreamCreateWithPriority"
        )

    @classmethod
    def highest_priority(cls) -> Stream:
        return cls(priority_range()[1])

    @property
    def priority(self) -> int:
        """The priority the driver reports for this stream."""
        from cuda.bindings import driver

        return int(check(driver.cuStreamGetPriority(self.handle), "cuStreamGetPriority"))

    def synchronize(self) -> None:
        """Wait for the stream's work; a device-side trap raises TilesyncRuntimeError here."""
        from cuda.bindings import driver

        check(driver.cuStreamSynchronize(self.handle), "cuStreamSynchronize")

    def wait_event(self, event: Event) -> None:
        """Make later work on this stream wait until `event` has completed (no host wait)."""
        from cuda.bindings import driver

        check(driver.cuStreamWaitEvent(self.handle, event.handle, 0), "cuStreamWaitEvent")

    def record(self, event: Event | None = None) -> Event:
        event = event or Event()
        event.record(self)
        return event

    def __cuda_stream__(self) -> tuple[int, int]:
        """The CUDA stream protocol (cuda.core, CuPy, torch interop): (version, handle)."""
        return (0, int(self.handle))

    def close(self) -> None:
        handle, self.handle = getattr(self, "handle", None), None
        if handle is None:
            return
        try:
            from cuda.bindings import driver

            driver.cuStreamDestroy(handle)
        except Exception:  # interpreter shutdown
            pass

    def __del__(self) -> None:
        self.close()

    def __repr__(self) -> str:
        handle = 0 if self.handle is None else int(self.handle)
        return f"Stream(0x{handle:x})"


def _stream_handle(stream: Any) -> Any:
    from tilesync.runtime.launch import stream_handle

    return stream_handle(stream)


class Event:
    """A CUDA event; timing=False makes a cheaper event for ordering only."""

    def __init__(self, timing: bool = True):
        from cuda.bindings import driver

        get_device()
        flags = driver.CUevent_flags.CU_EVENT_DEFAULT
        if not timing:
            flags = driver.CUevent_flags.CU_EVENT_DISABLE_TIMING
        self.handle = check(driver.cuEventCreate(flags), "cuEventCreate")

    def record(self, stream: Any = None) -> Event:
        from cuda.bindings import driver

        check(driver.cuEventRecord(self.handle, _stream_handle(stream)), "cuEventRecord")
        return self

    def synchronize(self) -> None:
        from cuda.bindings import driver

        check(driver.cuEventSynchronize(self.handle), "cuEventSynchronize")

    def query(self) -> bool:
        """True once all work captured by the event has completed."""
        from cuda.bindings import driver

        (result,) = driver.cuEventQuery(self.handle)
        if result == driver.CUresult.CUDA_ERROR_NOT_READY:
            return False
        check((result,), "cuEventQuery")
        return True

    def close(self) -> None:
        handle, self.handle = getattr(self, "handle", None), None
        if handle is None:
            return
        try:
            from cuda.bindings import driver

            driver.cuEventDestroy(handle)
        except Exception:  # interpreter shutdown
            pass

    def __del__(self) -> None:
        self.close()


def elapsed_ms(start: Event, end: Event) -> float:
    """Milliseconds between two recorded events; waits for `end` first."""
    from cuda.bindings import driver

    end.synchronize()
    return float(check(driver.cuEventElapsedTime(start.handle, end.handle), "cuEventElapsedTime"))


def stream_wait_event(stream: Any, event: Event) -> None:
    """Make later work on `stream` (any stream-like object) wait for `event`."""
    from cuda.bindings import driver

    check(driver.cuStreamWaitEvent(_stream_handle(stream), event.handle, 0), "cuStreamWaitEvent")


def stream_key(stream: Any) -> int:
    """`stream` (as stream_handle takes it) as its raw handle: what tells two streams apart."""
    return stream if type(stream) is int else int(_stream_handle(stream))


class RunOrder:
    """Keeps the runs of one program one after another whatever streams they are enqueued on:
    they share the program's device state (semaphores counted per epoch, queue tickets), so a
    run that overlapped the one before could take that run's posts or entries for its own.

    A run on another stream than the last run's waits for the last run's end (an event); on the
    same stream, stream order does it and nothing is enqueued. A run recorded into a graph (a
    stream capture) takes no part: it runs nothing now, and replays are ordered where they are
    launched."""

    def __init__(self) -> None:
        self._end: Event | None = None  # the last run's end
        self._stream: int | None = None  # the stream it ended on (stream_key)
        self._own: Event | None = None  # recorded again at each end that brings none

    def begin(self, stream: Any) -> None:
        """Make `stream`'s next work wait for the last run (unless it ran on `stream`)."""
        if self._end is not None and stream_key(stream) != self._stream:
            stream_wait_event(stream, self._end)

    def end(self, stream: Any, event: Event | None = None) -> None:
        """A run's last work is on `stream`: `event`, already recorded after it, or else the
        order's own event, recorded here."""
        if event is None:
            self._own = self._own or Event(timing=False)
            event = self._own.record(stream)
        self._end, self._stream = event, stream_key(stream)

    def synchronize(self) -> None:
        """Wait for the last run (and so for every run before it)."""
        if self._end is not None:
            self._end.synchronize()


__all__ = ["Event", "RunOrder", "Stream", "elapsed_ms", "is_capturing", "priority_range",
           "relaxed_capture_mode", "stream_key", "stream_wait_event"]


def capture_graph(stream: Stream, record: Callable[[], None]) -> tuple[Any, Any]:
    """(graph, instantiated graph) of what `record` enqueues, captured from `stream` (global
    mode: the streams it forks to through events join the graph)."""
    from cuda.bindings import driver

    check(driver.cuStreamBeginCapture(
        stream.handle, driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_GLOBAL),
        "cuStreamBeginCapture")
    try:
        record()
    finally:
        graph = check(driver.cuStreamEndCapture(stream.handle), "cuStreamEndCapture")
    return graph, check(driver.cuGraphInstantiate(graph, 0), "cuGraphInstantiate")


def is_capturing(stream: Any) -> bool:
    """Whether `stream` (a Stream, or a foreign stream's raw handle) is being captured into a
    graph: what it is given is recorded, not run."""
    from cuda.bindings import driver

    status = check(driver.cuStreamIsCapturing(_stream_handle(stream)), "cuStreamIsCapturing")
    return status != driver.CUstreamCaptureStatus.CU_STREAM_CAPTURE_STATUS_NONE


@contextmanager
def relaxed_capture_mode() -> Iterator[None]:
    """Lets this thread load a module while a capture is under way, which a capture begun in
    global mode (torch.cuda.graph's default) otherwise refuses; calls that would conflict with
    the capture (a synchronize, an event query) are refused still."""
    from cuda.bindings import driver

    previous = check(driver.cuThreadExchangeStreamCaptureMode(
        driver.CUstreamCaptureMode.CU_STREAM_CAPTURE_MODE_RELAXED),
        "cuThreadExchangeStreamCaptureMode")
    try:
        yield
    finally:
        check(driver.cuThreadExchangeStreamCaptureMode(previous),
              "cuThreadExchangeStreamCaptureMode")


def synchronize_streams(streams: Iterable[Stream | RunOrder], timed_out_wait: TimedOutWait
                        ) -> None:
    """Wait for every stream (and run order); a fault after a timed-out spin raises
    SpinTimeoutError naming the spin's kernel and block (what `timed_out_wait` read from the
    debug record)."""
    try:
        for stream in streams:
            stream.synchronize()
    except TilesyncRuntimeError as err:
        timeout = timed_out_wait()
        if timeout is not None:
            text, kernel, block = timeout
            raise SpinTimeoutError(f"{text} ({err.error_name})", err.error_name, err.call,
                                   kernel, block) from err
        raise
