"""Text-to-image with a diffusers pipeline from a local folder: ``diffusers:/models/sd-turbo``.

The folder is one saved with ``save_pretrained`` (a ``model_index.json`` and a subfolder per
component); ``AutoPipelineForText2Image`` loads it with ``local_files_only=True`` (Stable
Diffusion, SDXL, Flux and the other pipelines diffusers maps to text-to-image). diffusers is an
optional package: without it the backend fails when it is built, before any request, with one
BackendError saying what to install.

Each request's prompt becomes one image, returned as PNG bytes (``Response(kind="image")``,
encoded by ``compiler.media.png_bytes``, the compile cache's encoder). Prompts run in batches,
each with its own CPU ``torch.Generator`` seeded from the request's content and
``generation.seed`` (as the hf backend seeds sampled requests), so an image depends on its
request, not on its place in a batch. Options: ``batch_size`` (4), ``steps`` (30 inference
steps), ``guidance`` (7.5, classifier-free guidance scale), ``width`` and ``height`` (pixels;
default: the pipeline's own size), ``device``, ``dtype``.

What enters the fingerprint: the folder's digest (every weight, config, scheduler and tokenizer
file of every component), the diffusers, transformers and torch versions, dtype and device (with
the GPU model on CUDA), the sampling settings (steps, guidance, size, the seed base) and the batch
size: a batch's prompts go through the UNet together, and another batch size changes the shapes
of its matrix products, hence their rounding (a step's rounding carries through the later steps).
A text-to-image stage's request key holds no generation settings, so the seed base is in the
fingerprint.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from benchc.compiler.errors import BackendError, Problem
from benchc.compiler.media import png_bytes
from benchc.compiler.spec.models import Generation

from .base import BACKENDS, BackendSpec, MediaLoader, Request, Response
from .devices import private_rng
from .local_model import BatchedTorchOptions, LocalTorchBackend, package_version, request_seed, require_module

INSTALL_HINT = "pip install diffusers==0.39.0 (the newest release that installs beside transformers 4.57)"


class DiffusersOptions(BatchedTorchOptions):
    batch_size: int = Field(4, ge=1, description="prompts per batch")
    steps: int = Field(30, ge=1, description="inference steps")
    guidance: float = Field(7.5, ge=0.0, description="classifier-free guidance scale")
    width: int | None = Field(None, ge=8, multiple_of=8, description="image width in pixels "
                                                                    "(default: the pipeline's)")
    height: int | None = Field(None, ge=8, multiple_of=8, description="image height in pixels "
                                                                     "(default: the pipeline's)")


@BACKENDS.add("diffusers")
class DiffusersTextToImage(LocalTorchBackend):
    """Text-to-image with a diffusers pipeline, from a local folder."""

    tasks = frozenset({"text-to-image"})
    target_help = "/path/to/pipeline (saved with DiffusionPipeline.save_pretrained)"
    Options = DiffusersOptions
    opts: DiffusersOptions
    MARKER = "model_index.json"
    USAGE = "diffusers:/path/to/pipeline (a folder saved with DiffusionPipeline.save_pretrained)"

    def __init__(self, spec: BackendSpec, generation: Generation) -> None:
        super().__init__(spec, generation)
        self.batch_size = self.opts.batch_size
        self.steps = self.opts.steps
        self.guidance = self.opts.guidance
        self.width = self.opts.width
        self.height = self.opts.height

    def check_packages(self) -> None:
        require_module(self.name, "diffusers", INSTALL_HINT)

    def fingerprint(self) -> dict[str, Any]:
        return {**self.base_fingerprint(), "diffusers": package_version("diffusers"),
                "transformers": package_version("transformers"),
                "sampling": {"steps": self.steps, "guidance": self.guidance, "width": self.width,
                             "height": self.height, "seed": self.generation.seed},
                "batch_size": self.batch_size}

    def _load(self) -> None:
        try:
            from diffusers import AutoPipelineForText2Image
            from diffusers.utils import logging as diffusers_logging
        except ImportError as exc:
            raise BackendError(Problem(f"diffusers cannot be imported: {exc}", hint=INSTALL_HINT)) from None
        diffusers_logging.disable_progress_bar()  # benchc shows its own progress
        hint = "is it a text-to-image pipeline (Stable Diffusion, SDXL, Flux, ...) saved with save_pretrained?"
        try:
            pipe = AutoPipelineForText2Image.from_pretrained(self.path, local_files_only=True,
                                                             torch_dtype=self.dtype)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise self.load_failed(exc, hint) from None
        pipe.set_progress_bar_config(disable=True)
        self.pipe = pipe.to(self.device)

    def run_batch(self, requests: list[Request], load_media: MediaLoader) -> list[Response]:
        self.prepare()
        torch = self.torch
        generators = [torch.Generator("cpu").manual_seed(request_seed(r, self.generation.seed)) for r in requests]
        with torch.inference_mode(), private_rng(torch, self.device):
            images = self.pipe(prompt=[r.prompt for r in requests], generator=generators,
                               output_type="pil", **self._call_kwargs()).images
        return [Response("image", data=png_bytes(image.convert("RGB"))) for image in images]

    def _call_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"num_inference_steps": self.steps, "guidance_scale": self.guidance}
        if self.width is not None:
            kwargs["width"] = self.width
        if self.height is not None:
            kwargs["height"] = self.height
        return kwargs

