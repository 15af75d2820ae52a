"""Shared pieces of the backends that load a model from a local folder (hf, hf-asr, hf-tts,
diffusers; vllm uses the helpers): it imports no backend module, only the protocol (``base``)
and the device helpers (``devices``).

Checks that fail before any request (a folder without its marker file, a package that is not
installed, a device this machine lacks), the identity of what answers (the folder's digest, the
device: see ``devices``), per-request sampling seeds, and the base class ``LocalTorchBackend``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any, ClassVar

from pydantic import Field, field_validator

from benchc.compiler.errors import BackendError, Problem
from benchc.compiler.identity import folder_digest, installed_version
from benchc.compiler.identity import request_seed as identity_seed
from benchc.compiler.spec.models import Generation

from .base import Backend, BackendOptions, BackendSpec, Request
from .devices import TorchDtype, device_identity, private_rng, torch_device

__all__ = [  # device_identity, private_rng, torch_device: also read from here (runtime/score/clip_embed.py)
    "BatchedTorchOptions", "LocalTorchBackend", "LocalTorchOptions", "device_identity", "first_line",
    "model_digest", "model_folder", "module_available", "package_version", "private_rng", "request_seed",
    "require_module", "torch_device",
]


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


def model_digest(path: str) -> str:
    """Digest of a model folder: every file in it, by the one folder recipe (compiler.identity)."""
    return folder_digest(Path(path))


def request_seed(request: Request, base: int | None) -> int:
    """A sampling seed from the request's content and sample index, never from its batch; a
    request's own seed (a compile-time model step's variant) replaces the base. (The recipe's
    name says ``hf``: it seeds the hf, hf-tts, diffusers and vllm backends alike.)"""
    seed = request.seed if request.seed is not None else (base or 0)
    return identity_seed("hf-sample-seed", seed, request.prompt, request.system, request.media, request.sample)


def first_line(exc: BaseException) -> str:
    """The first line of an exception's message (transformers' messages run long)."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


DEVICE = re.compile(r"(cpu|cuda)(:[0-9]+)?")


class LocalTorchOptions(BackendOptions):
    """The options of every local torch backend: where it runs and in which precision."""

    device: str = Field("cpu", description="torch device: cpu, cuda or cuda:N, one this machine has")
    dtype: TorchDtype = Field("float32", description="the precision the weights are loaded and run in")

    @field_validator("device")
    @classmethod
    def _torch_device(cls, value: str) -> str:
        """The form only; whether this machine has the device is checked when the backend is
        built (``torch_device``)."""
        if not DEVICE.fullmatch(value):
            raise ValueError("a torch device: cpu, cuda or cuda:N")
        return value


class BatchedTorchOptions(LocalTorchOptions):
    """A local torch backend that runs its requests in batches of ``batch_size``."""

    batch_size: int = Field(8, ge=1, description="requests per batch")


class LocalTorchBackend(Backend):
    """A backend whose target is a local model folder run with torch: options, folder, device and
    dtype are checked when it is built; weights load in ``prepare()`` (or the first batch), so a
    fingerprint, which needs only the folder's digest, costs no load."""

    target_is_path = True
    Options: ClassVar[type[BackendOptions]] = LocalTorchOptions
    opts: LocalTorchOptions
    MARKER: ClassVar[str] = "config.json"
    USAGE: ClassVar[str] = "NAME:/path/to/model (a folder saved with save_pretrained)"
    NEEDS_TORCH: ClassVar[str] = "backend {name!r} needs torch"
    """The message (before the import error) when torch cannot be imported."""

    def __init__(self, spec: BackendSpec, generation: Generation) -> None:
        super().__init__(spec, generation)
        self.check_packages()
        self.path = model_folder(self.name, spec.target, self.MARKER, self.USAGE)
        self.dtype_name = self.opts.dtype
        self.torch = self._import_torch()
        try:
            self.device = torch_device(self.torch, self.opts.device)
        except ValueError as exc:
            raise self.bad_option("device", self.opts.device, str(exc)) from None
        self._loaded = False

    def check_packages(self) -> None:
        """Fail before any request when a package the backend needs is missing (override)."""

    def _import_torch(self) -> Any:
        try:
            import torch
        except ImportError as exc:
            raise BackendError(Problem(f"{self.NEEDS_TORCH.format(name=self.name)}: {exc}")) from None
        return torch

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
