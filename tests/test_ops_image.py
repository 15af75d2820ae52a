"""The image perturbation ops: image.corrupt (MMCBench's 29 corruptions), image.grayscale,
image.resize and image.style_transfer (MM-R3's restyle).

Golden digests pin every corruption x severity on a fixed 64 x 64 input, so a library upgrade
that changes pixels fails here. To change one, bump the op's version and update the digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from benchc.compiler.cas import ContentStore
from benchc.compiler.errors import BenchcError, OpError
from benchc.compiler.media import image_identity, load_image, put_image
from benchc.compiler.ops import OPS, OpContext
from benchc.compiler.ops.image_corrupt import CORRUPTIONS, LEVELS
from benchc.compiler.seeds import rng_for
from benchc.compiler.sources.scenes import make_scene
from benchc.compiler.values import Record, Value
from conftest import ROOT

INPUT = "43d4ea8aceb08b90df7fdbe0092e9591dc895aae6e23191513343db925eeb7d1"
CORRUPTED = {  # image.corrupt 1.1.0 (pixels as in 1.0.0) on INPUT, seed rng_for(1)
    ("gaussian_noise", "light"): "b39656006645ed739bf65f9867b9c364570ebafc1bf3da199786dc66e5e1acf1",
    ("gaussian_noise", "heavy"): "c5f9afac470eab8d398a8d1c61f31c0f8d9381a549400976108e0b34cf50f7a1",
    ("shot_noise", "light"): "a724498db292f1168113fa180e5aa48dab0b9f22acd7b337e12ab37232292b1c",
    ("shot_noise", "heavy"): "514405554407ccb78a9b8195962a4bd7ae95c47e9d7058c6f8d4a9140240bce1",
    ("impulse_noise", "light"): "68833c22590633f5ec309522bcbf06af69f2260b7853bcafc38481fbf3b016f7",
    ("impulse_noise", "heavy"): "464ad42b21a99af16ef3e4d151ff34b3be610606f1e36ed6b861bfaf177517e3",
    ("speckle_noise", "light"): "b8a64caabd667e61f783ca1c648d2ec6b616af7ad281b11ea5945c78faecabc2",
    ("speckle_noise", "heavy"): "278c5541e9c29cedb85af34b50e12250fa00a3e346cdc80bc37dc9644c7beaa6",
    ("defocus_blur", "light"): "480d66cc3338069474020ede33ec349db684f2b04a35b1254179721cf4eb3690",
    ("defocus_blur", "heavy"): "35aa236fd6c5eb20df976b0ec0132c3b53217e8b55ce1e59f2a5b5d7c245797f",
    ("glass_blur", "light"): "3ed3f3bbf1afe77d977414995d1de3395ad2f57f409a83b53d8fc169fafadb1b",
    ("glass_blur", "heavy"): "98289b5fd4fadb0f601f2fcf5cb9f41e19a6aca72d52bb3da4f20205ce5839ab",
    ("motion_blur", "light"): "c93462a4703dc62e796ca6e60afc76f4eda1470d462b988054f893b0c65a5c12",
    ("motion_blur", "heavy"): "94197f88c35693d3500cbff48906e7e7fafc6e7a2ebb806d91025f4ed9620369",
    ("zoom_blur", "light"): "25bc242f2057ad73f661e8c6009ff0e209dfafe5cdd5f24bb4a1c54b8e55090f",
    ("zoom_blur", "heavy"): "62de634554dd84ec9faa28535d47c072d481347c3ff063b3958f6fc61532cd2a",
    ("gaussian_blur", "light"): "67df8fdd75628bcf945ef0ed6a7908fb7c6552304e8ed4bb05aaa9a373d893e1",
    ("gaussian_blur", "heavy"): "458e6c2b4d157a8637982c345d6abd67b58d018e2211c097bae6a2a9edcdb55e",
    ("snow", "light"): "8255ac0bd845b80bd517f1fdf20b26b4f7167e8cf06f98fc94352a1aeb867761",
    ("snow", "heavy"): "4bd1e32cb87deaf35670dd3bc9fa6398483a3377033ed1993637e364d6bf5610",
    ("frost", "light"): "28d51133eed7620170f878823fa6795b31bb401a02cbeb0af925938a7e335eea",
    ("frost", "heavy"): "d1c3bb7f6fafb3cf8cc4913160cbfb23e8314ad8662f7d53d5ee8b1ff3cdecc9",
    ("fog", "light"): "516f60271f8b5d6cdb68c00b20d20f97f503d0d97302c863f8232b23ec9b9006",
    ("fog", "heavy"): "5ba31f4631cea89e9e3365f0165dcf68e6e101b165fdb100143f252d8778cb80",
    ("brightness", "light"): "48715df9440abfe40b466fa74e9465c12bf9479559b378cb6d99c6ce5554bb4a",
    ("brightness", "heavy"): "dda22d549104cd62a718d02027a89ebe9287ae9b4194dc365ed58800c14315be",
    ("contrast", "light"): "5058d75f5bd4279eae9a62204d72cd07c361d7101b77ed5d92ed48497eb5cb4a",
    ("contrast", "heavy"): "de82cafe54dcc35ac43f93d4e01abec61c6caf7356b2a1d5b9f27907a9723ac0",
    ("pixelate", "light"): "f9b0cd5e252fd5da27c5b500cc824fbbdeb1d300f86f0187e2aca9fd1a4d704f",
    ("pixelate", "heavy"): "486f6e3d8a33e51f0172af56bb59f5a74986de913d19e902c3523e66e668febc",
    ("jpeg_compression", "light"): "b139730b931e46bfd6244d0549a4a0bd509921fcfc0aa634f31034bcff46765f",
    ("jpeg_compression", "heavy"): "c8c74823d3f25c1f5f6793f723e91df52a464038237194bd9793dda10ecb4c65",
    ("spatter", "light"): "c056a7b53362f18617bde3885f48ade3e2d40eeea6a4abcbda979d81b599028f",
    ("spatter", "heavy"): "cea7e9c5182ba9866782bfbeacf252c527f4ea1744918c09e351a87450441546",
    ("saturate", "light"): "24f45b8c0ac7c9cfba431fc07d8c5afb8b83dc9e94919160e2382dfa57c17cd6",
    ("saturate", "heavy"): "2e1b0378b858c0d320f4f60022858b9ae1d08df0e52ccafd52c749962b130029",
    ("elastic_transform", "light"): "92d171a6e057655516053b4745a0b3877d70e9c24e5e57ed3a63856c848b75bb",
    ("elastic_transform", "heavy"): "ce419d159129156b86aca1ad8682bb3a9a2af7a28ad39993fe6272338e68d95c",
    ("gamma_contrast", "light"): "5c2c9198b784e1992954b268ad35a20b9bb38fd1081f536f1d53cd3ea8823bdb",
    ("gamma_contrast", "heavy"): "54be75519709cc7767d144f5cf1bb9251199058439cbddad9b155f55a80ab529",
    ("cutout", "light"): "23d398e986496215c96c512bc86e6393596e5dcda25d989f746df1c060304f00",
    ("cutout", "heavy"): "6df28ab2a2a4722f51fa5bab312f3d2ffcda2ca44e80be32a8c3d85b322e8ca0",
    ("salt_and_pepper", "light"): "1fa9b710e9eae2b0d69378162a1c09d8d5a406cf0799dccb361f0717e512bc8f",
    ("salt_and_pepper", "heavy"): "8c6c9c370317a5764c9267eee7e7996fcd433ece4ecb8da84c6838fb57c10938",
    ("coarse_dropout", "light"): "1b38c4f9086a62597e2549f008c519728b4011dfdc17e9f36dfe8bc6c3b24f86",
    ("coarse_dropout", "heavy"): "bc5ab920f881ca566ac564ec0a7c3472a59a66e887331bc0cb1a0e3f7c5c3574",
    ("scale", "light"): "7e995571869cb3bd86801f3d6ca7ee4744ad25fc9e2c9dfe3088d3bc3c94c3db",
    ("scale", "heavy"): "db49e5722dd572ccb638e2e3a1548cd0ce9b1d6710933fe7714fcea5e9bffdf1",
    ("rotate", "light"): "ee6e00aed785e722bb33e8422309387fa0fbe52e7583c9ec77c01eec6dc774ac",
    ("rotate", "heavy"): "85571e35cbc920e304e25b7fcf3a78d6a3c6b24325f9f6a7926b30ee56c44ada",
    ("shear", "light"): "6630da8a778cb972818e20e7983a6390f5f580d20046fc2cd7c250f352bbc551",
    ("shear", "heavy"): "96ff71548b7a104d13e090ec6bfa1770ab75a42e09c911acb23099e8ea30c80b",
    ("piecewise_affine", "light"): "2aac0595f45beaef2e696fc8683452a3802191fd43b782b2f9012020f98b5022",
    ("piecewise_affine", "heavy"): "05dcf6d2341f83f6d873cd1702e89faee499f85f3682b5a3b98744f9d0a6dd16",
    ("jigsaw", "light"): "eb1cefb952652ebf04094728d909a167dd41f741c8c14e34cf7f7c3df567e7f0",
    ("jigsaw", "heavy"): "957a0d5fd5b9b3dde34d3215c244323a3cfc4b925ec3e5f3fff2efe4896964fd",
    ("canny", "light"): "bd149cb544e85f8c0aec3a8bde61386476717a8e4bfc2d2e93ca39853c6426fc",
    ("canny", "heavy"): "234bf084a0cd6ec05f197f3cd9c23b2db69f046290eb7ea067a7739bea7f23ca",
}
# Corruptions that draw nothing: the same output for every seed.
DETERMINISTIC = {"defocus_blur", "zoom_blur", "gaussian_blur", "brightness", "contrast", "pixelate",
                 "jpeg_compression", "saturate", "canny"}


def small_scene() -> Image.Image:
    return make_scene(0, 3).image.resize((64, 64), Image.Resampling.LANCZOS)


def run_op(store: ContentStore, image: Image.Image, op_name: str, seed: int = 1,
           roots: tuple[Path, ...] = (), **params: object) -> tuple[Image.Image, dict]:
    op = OPS.get(op_name)
    ctx = OpContext(Record("r", {}), rng_for(seed), store, data_roots=roots)
    out = op.apply(Value("image", media=put_image(store, image)), op.Params(**params), ctx)
    return load_image(store, out.value.media), out.attrs


@pytest.fixture
def store(tmp_path: Path) -> ContentStore:
    return ContentStore(tmp_path / "store")


# --- image.corrupt ----------------------------------------------------------------------------

def test_every_corruption_has_light_and_heavy_levels() -> None:
    assert len(CORRUPTIONS) == len(set(CORRUPTIONS)) == 29
    assert set(LEVELS) == set(CORRUPTIONS)
    assert set(CORRUPTED) == {(c, s) for c in CORRUPTIONS for s in ("light", "heavy")}


def test_input_is_pinned() -> None:
    assert image_identity(small_scene()) == INPUT


@pytest.mark.parametrize("corruption,severity", CORRUPTED, ids=[f"{c}-{s}" for c, s in CORRUPTED])
def test_corruption_output_is_pinned(store: ContentStore, corruption: str, severity: str) -> None:
    assert OPS.get("image.corrupt").version == "1.1.0"
    out, _ = run_op(store, small_scene(), "image.corrupt", corruption=corruption, severity=severity)
    assert (out.mode, out.size) == ("RGB", (64, 64))
    assert image_identity(out) == CORRUPTED[(corruption, severity)]


@pytest.mark.parametrize("corruption", CORRUPTIONS)
def test_seed_changes_only_random_corruptions(store: ContentStore, corruption: str) -> None:
    outputs = [run_op(store, small_scene(), "image.corrupt", seed, corruption=corruption,
                      severity="heavy")[0] for seed in range(1, 5)]
    digests = {image_identity(out) for out in outputs}
    # Four seeds: a corruption that only draws a direction may repeat one, never all four.
    assert (len(digests) == 1) == (corruption in DETERMINISTIC)


def test_sizes_are_kept_on_a_non_square_image(store: ContentStore) -> None:
    image = make_scene(0, 5).image.resize((80, 48), Image.Resampling.LANCZOS)
    for corruption in CORRUPTIONS:
        out, _ = run_op(store, image, "image.corrupt", corruption=corruption, severity="heavy")
        assert (out.mode, out.size) == ("RGB", (80, 48)), corruption


def test_global_rngs_are_left_as_they_were(store: ContentStore) -> None:
    np.random.seed(3)
    expected = np.random.rand()
    np.random.seed(3)
    for corruption in ("glass_blur", "impulse_noise", "fog", "cutout"):
        run_op(store, small_scene(), "image.corrupt", corruption=corruption, severity="light")
    assert np.random.rand() == expected


DIGEST_SCRIPT = """
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from test_ops_image import CORRUPTED, run_op, small_scene
from benchc.compiler.cas import ContentStore
from benchc.compiler.media import image_identity
store = ContentStore(Path(sys.argv[1]))
print(json.dumps([[c, s, image_identity(run_op(store, small_scene(), "image.corrupt", corruption=c,
                                                  severity=s)[0])] for c, s in CORRUPTED]))
"""


@pytest.mark.slow
def test_corruptions_are_the_same_in_a_fresh_process(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    done = subprocess.run([sys.executable, "-c", DIGEST_SCRIPT, str(tmp_path), str(ROOT / "tests")],
                          env=env, capture_output=True, text=True, timeout=300, check=True)
    assert {(c, s): d for c, s, d in json.loads(done.stdout)} == CORRUPTED


def test_example_spec_sweeps_every_corruption() -> None:
    spec = tomllib.loads((ROOT / "specs/examples/image_corruptions.toml").read_text())
    corrupt = next(n for n in spec["node"] if n["op"] == "image.corrupt")
    assert corrupt["params"]["corruption"]["grid"] == list(CORRUPTIONS)
    assert corrupt["params"]["severity"]["grid"] == ["light", "heavy"]


# --- image.grayscale and image.resize ---------------------------------------------------------

# image.grayscale 1.0.0 on small_scene()
GRAY = "11bd7c99ac42f5e94266610fa57bfa61f4ffb7f131c4613ee4f67035e8c948c5"
RESIZED = {  # image.resize 1.0.0 on make_scene(0, 3) cropped to 96 x 64
    ("shorter_side", 32): ((48, 32), "b5506445677406ee9c1ffa550a142f2b91db16e2132a61411e12c4be2e3590eb"),
    ("square", 40): ((40, 40), "35d53cf2e5659bc388ee435f7bd5e411352c75dc357252c562312b4b90ebd510"),
}


def test_grayscale_is_pinned_and_three_channel(store: ContentStore) -> None:
    out, attrs = run_op(store, small_scene(), "image.grayscale")
    pixels = np.asarray(out)
    assert out.mode == "RGB" and (pixels == pixels[..., :1]).all()
    assert attrs == {"style": "grayscale"}
    assert image_identity(out) == GRAY


@pytest.mark.parametrize("mode,size", RESIZED, ids=[m for m, _ in RESIZED])
def test_resize_is_pinned(store: ContentStore, mode: str, size: int) -> None:
    image = make_scene(0, 3).image.crop((0, 0, 96, 64))
    out, _ = run_op(store, image, "image.resize", size=size, mode=mode)
    expected_size, expected = RESIZED[(mode, size)]
    assert out.size == expected_size and image_identity(out) == expected


def test_resize_keeps_portrait_aspect(store: ContentStore) -> None:
    out, _ = run_op(store, make_scene(0, 3).image.crop((0, 0, 64, 96)), "image.resize", size=32)
    assert out.size == (32, 48)


# --- image.style_transfer ---------------------------------------------------------------------

# image.style_transfer 1.0.0 on small_scene(), with the weights below, under benchc's portable math
# paths (benchc/mathpaths.py: oneDNN at SSE4.1, torch's default kernels). Before them the pixels
# were those of the CPU's own paths: 8348bdc2... on the machine that recorded it, c95a9d9a... on an
# AMD EPYC with AVX2 (2026-12-04).
STYLED = "059298c28c6eedbe3172031e8d7df78de009f357eb78b4cc0e636478e7d4c304"


@pytest.fixture
def weights(tmp_path: Path) -> tuple[Path, str]:
    """A TransformerNet state dict in the old fast_neural_style format, with the InstanceNorm
    running_mean/running_var keys the op must drop. The values come from numpy rather than from
    torch's initialiser, so that only the op's arithmetic is pinned; the last layer is scaled
    and shifted so that the output spans [0, 255] like a trained network's."""
    import torch

    from benchc.compiler.ops._transformer_net import TransformerNet

    torch.manual_seed(0)
    state = TransformerNet().state_dict()
    rng = np.random.default_rng(0)
    for name, tensor in state.items():
        shape = tuple(tensor.shape)
        if name.endswith("conv2d.weight"):
            values = rng.normal(0, 1 / np.sqrt(np.prod(shape[1:])), shape)
        else:  # InstanceNorm scales near 1; biases near 0
            values = rng.normal(1.0 if re.search(r"in\d\.weight$", name) else 0.0, 0.1, shape)
        state[name] = torch.from_numpy(values.astype(np.float32))
    state["deconv3.conv2d.weight"] *= 60
    state["deconv3.conv2d.bias"] += 128
    for norm in ("in1", "in5", "res1.in1", "res5.in2"):
        channels = state[f"{norm}.weight"].shape[0]
        state[f"{norm}.running_mean"] = torch.zeros(channels)
        state[f"{norm}.running_var"] = torch.ones(channels)
    path = tmp_path / "roots" / "candy.pth"
    path.parent.mkdir()
    torch.save(state, path)
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def test_style_transfer_is_pinned(store: ContentStore, weights: tuple[Path, str]) -> None:
    path, sha = weights
    out, attrs = run_op(store, small_scene(), "image.style_transfer", roots=(path.parent,),
                        weights="candy.pth", sha256=sha, style="candy")
    assert (out.mode, out.size) == ("RGB", (64, 64)) and attrs == {"style": "candy"}
    assert np.asarray(out).std() > 5  # a real image, not a constant
    assert image_identity(out) == STYLED


def test_style_transfer_keeps_sizes_that_are_not_multiples_of_four(
        store: ContentStore, weights: tuple[Path, str]) -> None:
    path, sha = weights
    out, _ = run_op(store, make_scene(0, 3).image.resize((66, 50)), "image.style_transfer",
                    roots=(path.parent,), weights="candy.pth", sha256=sha, style="candy")
    assert out.size == (66, 50)


def test_style_transfer_refuses_other_weights(store: ContentStore,
                                              weights: tuple[Path, str]) -> None:
    path, sha = weights
    with pytest.raises(OpError) as err:
        run_op(store, small_scene(), "image.style_transfer", roots=(path.parent,),
               weights="candy.pth", sha256="0" * 64, style="candy")
    problem = err.value.problems[0]
    assert problem.key == "params.sha256" and sha in problem.message and "0" * 64 in problem.message


def test_style_transfer_refuses_a_file_that_is_not_a_state_dict(store: ContentStore,
                                                                tmp_path: Path) -> None:
    (tmp_path / "junk.pth").write_bytes(b"not a checkpoint")
    sha = hashlib.sha256(b"not a checkpoint").hexdigest()
    with pytest.raises(OpError) as err:
        run_op(store, small_scene(), "image.style_transfer", roots=(tmp_path,),
               weights="junk.pth", sha256=sha, style="junk")
    assert err.value.problems[0].key == "params.weights"


def test_style_transfer_weights_stay_inside_the_data_roots(store: ContentStore,
                                                           weights: tuple[Path, str]) -> None:
    path, sha = weights
    with pytest.raises(BenchcError) as err:
        run_op(store, small_scene(), "image.style_transfer", roots=(path.parent / "sub",),
               weights="../candy.pth", sha256=sha, style="candy")
    problem = err.value.problems[0]
    assert problem.key == "params.weights" and "escapes" in problem.message


def test_style_transfer_in_a_compiled_spec(tmp_path: Path, weights: tuple[Path, str]) -> None:
    from benchc import api

    path, sha = weights
    spec = path.parent / "styled.toml"
    spec.write_text(f"""
[benchmark]
name = "test/styled"
version = "1.0.0"

[source]
loader = "scenes"
images = 1
size = 64

[sample]
per = "image_id"

[[node]]
id = "styled"
op = "image.style_transfer"
input = "image"
params = {{ weights = "candy.pth", sha256 = "{sha}", style = "candy" }}

[[node]]
id = "gray"
op = "image.grayscale"
input = "image"

[prompt]
template = "Please describe the place in the image in two sentences."
""")
    result = api.compile(spec, tmp_path / "out", cache_dir=tmp_path / "cache")
    rows = api.read_manifest(tmp_path / "out").items().to_dicts()
    assert sorted(json.loads(r["attrs"])["style"] for r in rows) == ["candy", "grayscale"]
    assert result.lock["ops"] == {"image.style_transfer": "1.0.0", "image.grayscale": "1.0.0"}
