"""maskgan ``backend: official``: MaskGAN's released generator and the BiSeNet face parser
compute the authors' functions, proven without the weights. tests/helpers/maskgan_reference.py and
tests/helpers/bisenet_reference.py restate the authors' modules and pre-processing; random weights
saved in the releases' layouts (state dicts in PyTorch's legacy format, as in 2019) load
through fairforge's loaders and give the same outputs (max |diff| <= 1e-5)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch
from PIL import Image

import bisenet_reference as bref
import maskgan_reference as mref
from fairforge.checkpoints import CheckpointMismatch
from fairforge.config import ConfigError, validate_config
from fairforge.forgery import ForgeryError, create_method
from fairforge.forgery.base import interocular
from fairforge.forgery.maskgan import fairfd_edit
from fairforge.forgery.nets import bisenet, maskgan
from fairforge.forgery.parsing import CELEBAMASK_LABELS
from fairforge.forgery.releases import ReleaseFileError
from official_support import photographs

CROP = 256  # official_support.photographs
SIZE = 64  # the generator's load_size in these tests (the release's is 512)


@pytest.fixture(scope="module")
def astronaut():
    """scikit-image's astronaut, aligned by the faces stage (256 px)."""
    face = photographs()[1]
    return face.crop, face.landmarks


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return mref.random_release(tmp_path_factory.mktemp("maskgan_release"))


def test_label_orders_are_the_authors():
    """MaskGAN's maps: CelebAMask-HQ's g_mask.py order, the demo's drawing modes; the
    parser's outputs: face-parsing.PyTorch's prepropess_data.py order."""
    assert CELEBAMASK_LABELS == ("background", *mref.LABEL_LIST)
    assert CELEBAMASK_LABELS[1:] == tuple(mref.DEMO_MODES[1:])
    assert bisenet.CLASSES == ("background", *bref.ATTS)
    assert maskgan.LABEL_NC == len(CELEBAMASK_LABELS) == len(bisenet.CLASSES) == 19


def test_release_layouts_are_the_authors():
    """At the release's sizes (the demo's options; BiSeNet(19)): the same keys and shapes
    (on the meta device: nothing is allocated)."""
    with torch.device("meta"):
        pairs = [
            (mref.define_G(), maskgan.MaskGANGenerator()),
            (bref.BiSeNet(19), bisenet.BiSeNet()),
        ]
    for theirs, ours in pairs:
        shapes = {k: tuple(v.shape) for k, v in theirs.state_dict().items()}
        assert shapes == {k: tuple(v.shape) for k, v in ours.state_dict().items()}
    # the parser's ResNet-18 backbone is inside its checkpoint: every entry of the ImageNet
    # ResNet-18 the authors initialise it from (less the classifier), under cp.resnet
    import torchvision

    with torch.device("meta"):
        imagenet = torchvision.models.resnet18().state_dict()
    backbone = {
        k[len("cp.resnet.") :]: tuple(v) for k, v in shapes.items() if k.startswith("cp.resnet.")
    }
    assert backbone == {k: tuple(v.shape) for k, v in imagenet.items() if not k.startswith("fc.")}
    generator = pairs[0][1]
    assert sum(p.numel() for p in generator.parameters()) == 89_718_979 - 2 * 2 * 4 * 1024
    assert generator.enc_style.model_last[1].out_channels == 4 * 2 * 2 * 1024  # AdaIN params


def test_generator_is_the_demo_s(tmp_path):
    """The release file loads through fairforge; the generator and fairforge's input and
    output conversions give the demo's ``edit`` result."""
    theirs = mref.random_generator(3)
    path = tmp_path / "latest_net_G.pth"
    mref.save_release(theirs.state_dict(), path)
    ours = maskgan.load_generator(path, "test generator", **mref.SMALL)
    rng = np.random.default_rng(0)
    label = rng.integers(0, 19, (2, SIZE, SIZE))
    label_ref = rng.integers(0, 19, (2, SIZE, SIZE))
    image = torch.rand(2, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(1)) * 2 - 1
    with torch.no_grad():
        expected = theirs(*mref.encode_input_test(torch.from_numpy(label)[:, None],
                                                   torch.from_numpy(label_ref)[:, None]), image)  # fmt: skip
        got = ours(
            maskgan.one_hot(torch.from_numpy(label)),
            maskgan.one_hot(torch.from_numpy(label_ref)),
            image,
        )
    assert expected.std() > 0.1
    assert (got - expected).abs().max() <= 1e-5
    # a batch is each image alone (instance statistics, per-image AdaIN parameters)
    with torch.no_grad():
        one = ours(
            maskgan.one_hot(torch.from_numpy(label[1:])),
            maskgan.one_hot(torch.from_numpy(label_ref[1:])),
            image[1:],
        )
    assert (one - got[1:]).abs().max() <= 1e-5


def test_parser_is_the_authors(tmp_path, astronaut):
    """79999_iter.pth loads through fairforge; on a real crop, test.py's class scores and
    parsing, converted to MaskGAN's label order by name."""
    theirs = bref.random_bisenet(seed=2)
    path = tmp_path / "79999_iter.pth"
    mref.save_release(theirs.state_dict(), path)
    parser = bisenet.FaceParser(path, "test parser")
    crop, _ = astronaut
    scores, parsing = bref.reference_parse(theirs, Image.fromarray(crop))
    with torch.no_grad():
        ours = parser.net(bisenet.preprocess(crop))
    assert scores.std() > 0.1 and len(np.unique(parsing)) > 1
    assert (ours - scores).abs().max() <= 1e-5
    names = ["background", *bref.ATTS]
    expected = np.array([CELEBAMASK_LABELS.index(names[k]) for k in parsing.ravel()], np.uint8)
    assert np.array_equal(parser(crop), expected.reshape(parsing.shape))


@pytest.fixture(scope="module")
def reference_nets():
    """The authors' modules with random_release's weights."""
    return bref.random_face_parser(0), mref.random_generator(0)


def _reference_fake(nets, crop, lm, seed):
    """The authors' parser and demo on FairFD's edit: what the official backend must give."""
    parser, generator = nets
    _, parsing = bref.reference_parse(parser, Image.fromarray(crop))
    names = ["background", *bref.ATTS]
    labels = np.vectorize(lambda k: CELEBAMASK_LABELS.index(names[k]))(parsing).astype(np.uint8)
    labels = np.asarray(Image.fromarray(labels).resize((SIZE, SIZE), Image.NEAREST))
    edited, edits = fairfd_edit(labels, interocular(lm) * SIZE / CROP, np.random.default_rng(seed))
    as_read = lambda m: np.dstack([m] * 3)  # noqa: E731  (cv2.imread of a label PNG)
    out = mref.demo_edit(
        generator, as_read(labels), as_read(edited), Image.fromarray(crop), SIZE, "train"
    )
    return cv2.resize(out, (CROP, CROP), interpolation=cv2.INTER_CUBIC), edits


def test_labels_are_encoded_as_the_generator_learned_them():
    """The demo's float32 label scaling truncates four labels (the restated demo shows it);
    fairforge's one-hot encoding is exact, as the training data loader's."""
    labels = np.tile(np.arange(19, dtype=np.uint8), (4, 1))
    as_read = Image.fromarray(np.dstack([labels] * 3))
    demo = mref.get_transform(19, Image.NEAREST, normalize=False, normalize_mask=True)(as_read)
    moved = {
        CELEBAMASK_LABELS[k]: CELEBAMASK_LABELS[int(v)]
        for k, v in enumerate(demo[0, 0])
        if int(v) != k
    }
    assert moved == {"r_brow": "l_brow", "hair": "l_lip", "hat": "hair", "ear_r": "hat"}
    train = mref.get_transform(19, Image.NEAREST, normalize=False)(as_read) * 255.0
    assert (train[0].long().numpy() == labels).all()
    ours = maskgan.one_hot(torch.from_numpy(labels)[None])
    assert (ours.argmax(1)[0].numpy() == labels).all() and (ours.sum(1) == 1).all()


def test_official_maskgan_is_the_demo_on_fairfd_s_edit(release, reference_nets, astronaut):
    crop, lm = astronaut
    method = create_method("maskgan", "official", **release)
    for seed in range(2):
        res = method(crop, lm, None, None, np.random.default_rng(seed))
        expected, edits = _reference_fake(reference_nets, crop, lm, seed)
        assert res.extra["edits"] == edits and res.extra["parts"] == sorted(edits)
        diff = np.abs(res.image.astype(int) - expected.astype(int))
        assert diff.max() <= 1 and (diff == 0).mean() > 0.999  # truncation to uint8 at 1e-6
        assert (res.mask == 255).all()  # the demo's output is the whole image
        again = method(crop, lm, None, None, np.random.default_rng(seed))
        assert np.array_equal(again.image, res.image)


def test_pasting_only_the_edited_parts(release, astronaut):
    crop, lm = astronaut
    whole = create_method("maskgan", "official", **release)
    parts = create_method("maskgan", "official", **{**release, "paste": "edited"})
    for seed in range(2):
        a = whole(crop, lm, None, None, np.random.default_rng(seed))
        b = parts(crop, lm, None, None, np.random.default_rng(seed))
        inside = b.mask > 0
        assert 0 < inside.mean() < 0.9
        assert np.array_equal(b.image[~inside], crop[~inside])
        # inside it, the generator's image blended over the crop, the generator's alone
        # away from the region's edge
        lo = np.minimum(a.image, crop).astype(int) - 1
        hi = np.maximum(a.image, crop).astype(int) + 1
        assert ((b.image >= lo) & (b.image <= hi)).all()
        same = (np.abs(b.image.astype(int) - a.image.astype(int)) <= 1).all(2)
        assert same[inside].mean() > 0.3


def test_the_classical_backend_with_the_released_parser_draws_the_same_edit(release):
    """Same crop, map and seed: the two backends edit the same parts by the same radii."""
    crop, lm = template_face_at(SIZE)
    official = create_method("maskgan", "official", **release)
    classical = create_method("maskgan", parser_path=release["parser_path"])
    for seed in range(2):
        a = official(crop, lm, None, None, np.random.default_rng(seed))
        b = classical(crop, lm, None, None, np.random.default_rng(seed))
        assert a.extra["edits"] == b.extra["edits"] and b.extra["parser"] == "bisenet"


def template_face_at(size):
    from fairforge.forgery.template import template_face

    return template_face(size, seed=1)


def test_missing_and_wrong_release_files(tmp_path, release):
    with pytest.raises(
        ReleaseFileError,
        match=r"forgery\.options\.maskgan\.generator_path.*latest_net_G\.pth.*CelebAMask-HQ",
    ):
        create_method("maskgan", "official", parser_path=release["parser_path"])
    with pytest.raises(
        ReleaseFileError, match=r"parser_path.*79999_iter\.pth.*face-parsing\.PyTorch.*nowhere"
    ):
        create_method(
            "maskgan", "official", **{**release, "parser_path": str(tmp_path / "nowhere.pth")}
        )
    # the parser's file where the generator's belongs: its keys are listed
    swapped = {**release, "generator_path": release["parser_path"]}
    with pytest.raises(CheckpointMismatch) as err:
        create_method("maskgan", "official", **swapped)
    text = str(err.value)
    assert "maskgan backend 'official'" in text and "latest_net_G.pth" in text
    assert "CelebAMask-HQ" in text and "enc_label" in text and "conv_out16" in text
    # a generator trained with other options: shapes listed
    with pytest.raises(CheckpointMismatch, match=r"shape mismatches.*model\.1\.weight"):
        create_method("maskgan", "official", **{**release, "ngf": 8})
    # not a state dict at all
    junk = tmp_path / "latest_net_G.pth"
    junk.write_text("not a checkpoint")
    with pytest.raises(CheckpointMismatch, match="weights_only"):
        create_method("maskgan", "official", **{**release, "generator_path": str(junk)})
    with pytest.raises(ValueError, match="paste"):
        create_method("maskgan", "official", **{**release, "paste": "face"})


def test_the_config_check_names_the_release_before_any_job(release):
    methods = ["faceswap", "maskgan"]  # the default detector trains on faceswap
    config = {"forgery": {"methods": methods, "backends": {"maskgan": "official"}}}
    with pytest.raises(
        ConfigError, match=r"forgery\.options\.maskgan.*generator_path.*latest_net_G\.pth"
    ):
        validate_config(config)
    config["forgery"]["options"] = {"maskgan": release}
    validate_config(config)
    # the classical backend checks its optional parser file too
    classical = {
        "forgery": {"methods": ["maskgan"], "options": {"maskgan": {"parser_path": "/no/such.pth"}}}
    }
    with pytest.raises(ConfigError, match=r"79999_iter\.pth.*/no/such\.pth"):
        validate_config(classical)


def test_a_face_the_parser_does_not_find_is_a_failure(tmp_path, release, astronaut):
    """A parsing with no skin (this parser never scores skin highest) is no face: the
    method raises ForgeryError, which the shard records as a failed row with its reason."""
    path = tmp_path / "79999_iter.pth"
    mref.save_release(bref.random_face_parser(0, skin=-1e3).state_dict(), path)
    method = create_method("maskgan", "official", **{**release, "parser_path": str(path)})
    crop, lm = astronaut
    with pytest.raises(ForgeryError, match="no skin"):
        method(crop, lm, None, None, np.random.default_rng(0))
