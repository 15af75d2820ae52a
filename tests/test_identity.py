"""One recipe per identity concept (compiler/identity.py), each pinned: a folder's digest, an
installed version and a request's sampling seed. A change here moves keys and fingerprints: a
new recipe, said in the README's format table, never an edit of these values."""

from __future__ import annotations

import subprocess
from pathlib import Path

from benchc.compiler.identity import NOT_INSTALLED, folder_digest, installed_version, request_seed
from benchc.compiler.ops.base import library_versions
from benchc.runtime.backends import hf, local_model, openai_compat
from benchc.runtime.backends.base import Request


def _folder(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "config.json").write_text('{"a": 1}\n')
    (root / "sub" / "weights.bin").write_bytes(b"\x00\x01\x02")
    return root


def test_folder_digest_is_pinned_and_is_the_sha256sum_recipe(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "model")
    assert folder_digest(folder) == "b2b4306bffe979836afeef0364f66ddee88b272d32a34adbe78ebbefb441d769"
    shell = subprocess.run("find -L . -type f -printf '%P\\n' | LC_ALL=C sort | xargs -d '\\n' sha256sum | sha256sum",
                           shell=True, cwd=folder, capture_output=True, text=True, check=True).stdout.split()[0]
    assert folder_digest(folder) == shell


def test_every_file_of_a_model_folder_is_in_its_digest(tmp_path: Path) -> None:
    """A file of any kind (custom code, .pt weights, a tokenizer's .tiktoken) moves the backends'
    model digest: no changed file can be served a stale answer."""
    folder = _folder(tmp_path / "model")
    before = hf.model_digest(str(folder))
    (folder / "modeling_custom.py").write_text("x = 1\n")
    after = hf.model_digest(str(folder))
    assert before != after == folder_digest(folder)


def test_installed_version_has_one_sentinel() -> None:
    assert installed_version("benchc-no-such-distribution") == NOT_INSTALLED == "not installed"
    assert local_model.package_version("benchc-no-such-distribution") == NOT_INSTALLED
    assert library_versions(["benchc-no-such-distribution"]) == {"benchc-no-such-distribution": NOT_INSTALLED}
    assert installed_version("numpy") == __import__("numpy").__version__


def test_request_seeds_follow_the_seed_recipe_and_are_pinned() -> None:
    assert request_seed("hf-sample-seed", 5, "What is shown?", None, [("image", "ab" * 32)], 1) == 2849815029414241373
    assert request_seed("openai-sample-seed", 5, "What is shown?", "Be brief.", [], 0, bits=31) == 592947758
    request = Request(key="i", task="generate", prompt="What is shown?", media=(("image", "ab" * 32),), sample=1)
    assert hf.request_seed(request, 5) == 2849815029414241373
    other = Request(key="j", task="generate", prompt="What is shown?", system="Be brief.")
    assert openai_compat.request_seed(other, 5) == 592947758
