"""Semaphore arrays in device memory, reused across launches through an epoch counter.

A producer stage owns one zero-initialized int32 per semaphore. Each launch k (k = 1, 2, ...)
adds `posts` to a semaphore, so after launch k it holds k × posts, and a wait of launch k
succeeds at value >= k × posts. No memset is needed between launches or CUDA graph replays
(the epoch is the launch count). The host only counts launches.
"""

from __future__ import annotations

from typing import Any

import numpy as np

INT32_MAX = (1 << 31) - 1


class SemaphoreOverflowError(OverflowError):
    """The next epoch's expected value would not fit in an int32 semaphore."""


class SemaphoreArray:
    """`count` int32 semaphores plus the host-side epoch (launch count).

    `max_posts` is the largest number of posts any one semaphore receives per launch (a
    RowSync semaphore gets one post per tile of its row); it bounds the values the device
    reaches, which must stay within int32 because waits compare signed values.
    `buffer` is for tests: any object with ptr, fill_bytes() and to_numpy().
    """

    def __init__(self, count: int, max_posts: int = 1, *, buffer: Any = None):
        if count <= 0:
            raise ValueError(f"semaphore count must be positive, got {count}")
        if max_posts <= 0:
            raise ValueError(f"max_posts must be positive, got {max_posts}")
        self.count = count
        self.max_posts = max_posts
        if buffer is None:
            from tilesync.runtime.buffers import DeviceBuffer

            buffer = DeviceBuffer.zeros((count,), np.int32)
        else:
            buffer.fill_bytes(0)
        self.buffer = buffer
        self.epoch = 0

    @property
    def ptr(self) -> int:
        """Device address of semaphore 0, the kernel argument."""
        return self.buffer.ptr

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """Lets a SemaphoreArray be passed straight to `launch` as a 'ptr' argument."""
        return {
            "shape": (self.count,),
            "typestr": "<i4",
            "data": (self.ptr, False),
            "strides": None,
            "version": 3,
            "stream": None,
        }

    @property
    def max_epoch(self) -> int:
        """The last epoch whose values (epoch × max_posts) fit in an int32."""
        return INT32_MAX // self.max_posts

    def next_epoch(self) -> int:
        """Advance to the next launch and return its epoch (1, 2, 3, ...).

        Pass it to the kernels of that launch: waits compare value >= epoch × posts.
        Raises SemaphoreOverflowError, without advancing, when the semaphores could overflow.
        """
        epoch = self.epoch + 1
        if epoch > self.max_epoch:
            raise SemaphoreOverflowError(
                f"semaphore epoch {epoch} × {self.max_posts} posts exceeds int32 "
                f"({INT32_MAX}); call reset() after synchronizing the stages that use it"
            )
        self.epoch = epoch
        return epoch

    def expected(self, posts: int, epoch: int | None = None) -> int:
        """The value a semaphore with `posts` posts per launch holds once `epoch` is done."""
        if not 0 < posts <= self.max_posts:
            raise ValueError(f"posts must be in 1..{self.max_posts}, got {posts}")
        return (self.epoch if epoch is None else epoch) * posts

    def reset(self) -> None:
        """Zero the semaphores (synchronous memset) and restart at epoch 0.

        Only call it when no kernel using the semaphores is running.
        """
        self.buffer.fill_bytes(0)
        self.epoch = 0

    def to_numpy(self) -> np.ndarray:
        """Current values, for debugging a stuck wait (synchronize first)."""
        return self.buffer.to_numpy()

    def __repr__(self) -> str:
        return f"SemaphoreArray(count={self.count}, max_posts={self.max_posts}, epoch={self.epoch})"


__all__ = ["INT32_MAX", "SemaphoreArray", "SemaphoreOverflowError"]
