"""Shared pieces of the backends that load a model from a local folder with torch.

Checks that fail before any request (a folder without its marker file, a package that is not
installed, a device this machine lacks), the device identity that enters fingerprints (another GPU
runs other kernels, so its answers may differ in the last bits), and the RNG handling that keeps a
backend's seeding from touching the caller's global torch RNG.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from benchc.compiler.errors import BackendError, Problem
from benchc.compiler.identity import installed_version
from benchc.compiler.spec.models import Generation

from .base import Backend, BackendSpec
from .hf import model_digest


def module_available(name: str) -> bool:
    """Whether ``import name`` can find the package, without importing it (cheap)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def require_module(backend: str, module: str, hint: str) -> None:
    """A clear BackendError, before any request, when an optional package is missing."""
    if not module_available(module):
        raise BackendError(Problem(f"backend {backend!r} needs the Python package {module!r}, which is "
                                   "not installed", hint=hint))


def package_version(name: str) -> str:
    """An installed distribution's version, or "not installed" (compiler.identity's one recipe)."""
    return installed_version(name)


def model_folder(backend: str, target: str, marker: str, usage: str) -> Path:
    """The model folder a backend's target names; it must hold ``marker`` (e.g. config.json)."""
    path = Path(target)
    if not target or not (path / marker).is_file():
        raise BackendError(Problem(f"{backend}: no model folder with {marker} at {target!r}", hint=usage))
    return path


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


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (transformers' messages run long)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class LocalTorchBackend(Backend):
    """A backend whose target is a local model folder run with torch: options, folder, device and
    dtype are checked when it is built; weights load in ``prepare()`` (or the first batch), so a
    fingerprint, which needs only the folder's digest, costs no load."""

    target_is_path = True
    MARKER: ClassVar[str] = "config.json"
    USAGE: ClassVar[str] = "NAME:/path/to/model (a folder saved with save_pretrained)"
    OPTIONS: ClassVar[frozenset[str]] = frozenset({"device", "dtype"})
    DTYPES: ClassVar[tuple[str, ...]] = ("float32", "float16", "bfloat16")

    def __init__(self, spec: BackendSpec, generation: Generation) -> None:
        super().__init__(spec, generation)
        self.check_options(set(self.OPTIONS))
        self.check_packages()
        self.path = model_folder(self.name, spec.target, self.MARKER, self.USAGE)
        self.dtype_name = self.choice_option("dtype", "float32", self.DTYPES)
        try:
            import torch
        except ImportError as exc:
            raise BackendError(Problem(f"backend {self.name!r} needs torch: {exc}")) from None
        self.torch = torch
        name = self.option("device", "cpu")
        try:
            self.device = torch_device(torch, name)
        except ValueError as exc:
            raise self.bad_option("device", name, str(exc)) from None
        self._loaded = False

    def check_packages(self) -> None:
        """Fail before any request when a package the backend needs is missing (override)."""

    @property
    def dtype(self) -> Any:
        return getattr(self.torch, self.dtype_name)

    def prepare(self) -> None:
        if not self._loaded:
            # Building a model draws initial weights from the global RNG before the real ones
            # load: a private RNG leaves the caller's alone (loading may happen mid-run).
            with private_rng(self.torch, self.torch.device("cpu")):
                self._load()
            self._loaded = True

    def _load(self) -> None:
        raise NotImplementedError

    def base_fingerprint(self) -> dict[str, Any]:
        """What every local torch backend's answers depend on (see the module docstrings)."""
        return {"backend": self.name, "model": model_digest(str(self.path)),
                "torch": package_version("torch"), "dtype": self.dtype_name,
                "device": device_identity(self.torch, self.device)}

    def load_failed(self, exc: BaseException, hint: str) -> BackendError:
        return BackendError(Problem(f"{self.name}: cannot load {self.path}: {first_line(exc)}", hint=hint))
