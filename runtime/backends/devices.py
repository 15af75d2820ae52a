"""Torch device, dtype and RNG helpers the local model backends share (a leaf module: it imports
no backend and no torch; each function takes the ``torch`` module its caller imported).

The device a backend runs on enters its fingerprint through ``device_identity``: another GPU runs
other kernels, so its answers may differ in the last bits. ``private_rng`` keeps a backend's
seeding (and the random initial weights drawn while a model is built) away from the caller's
global torch RNG.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

TorchDtype = Literal["float32", "float16", "bfloat16"]
"""The ``dtype`` option's values for the backends that load weights with torch."""


def torch_device(torch: Any, name: str) -> Any:
    """A torch device present on this machine; ValueError (with what is expected) otherwise."""
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ValueError("a torch device such as cpu, cuda or cuda:1") from None
    if device.type not in ("cpu", "cuda"):
        raise ValueError("cpu or cuda[:N]")
    if device.type == "cuda" and not (torch.cuda.is_available()
                                      and (device.index or 0) < torch.cuda.device_count()):
        raise ValueError("a CUDA device present on this machine (or cpu)")
    return device


def device_identity(torch: Any, device: Any) -> str:
    """The device type, plus the GPU model on CUDA (another GPU runs other kernels)."""
    if device.type == "cuda":
        return f"cuda:{torch.cuda.get_device_name(device)}"
    return str(device.type)


@contextmanager
def private_rng(torch: Any, device: Any, seed: int | None = None) -> Iterator[None]:
    """Run a block under its own torch RNG state (seeded when ``seed`` is given); the caller's
    CPU and CUDA RNG states are restored afterwards."""
    forked = [device.index or 0] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=forked):
        if seed is not None:
            torch.manual_seed(seed)
        yield


def to_device(torch: Any, value: Any, device: Any, dtype: Any) -> Any:
    """``value`` moved to ``device`` when it is a tensor, a floating-point one (pixel values,
    audio features) also cast to ``dtype``; anything else as it is."""
    if not isinstance(value, torch.Tensor):
        return value
    if value.is_floating_point():
        return value.to(device, dtype=dtype)
    return value.to(device)


def release_memory(torch: Any, device: Any) -> None:
    """Hand the CUDA caching allocator's free blocks back (after an out-of-memory error)."""
    if device.type == "cuda":
        torch.cuda.empty_cache()
