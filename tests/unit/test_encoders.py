"""Face encoders: registry, dlib ResNet with its chip fallback, ONNX ArcFace on a tiny exported
model, margin heads, and training / checkpoint round trips of the trainable encoders."""

import math
import subprocess
import sys
import warnings

import cv2
import numpy as np
import pytest
import torch

from fairforge.encoders import (
    ENCODERS,
    EncoderError,
    FaceEncoder,
    create_encoder,
    list_encoders,
)
from fairforge.encoders.base import ArchSpec, arch_spec, trainable_encoders
from fairforge.encoders.heads import ArcFaceHead, NPCFaceHead
from fairforge.registry import DuplicateName, UnknownName
from fairforge.seeding import rng_for
from fairforge.training.encoder import train_encoder, train_encoder_on_faces


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    # tiny CPU workloads on a shared machine: extra threads only add contention
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _unit_rows(emb, dim, n):
    assert emb.dtype == np.float32 and emb.shape == (n, dim)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)


def test_registry_lists_every_encoder_and_rejects_unknown_names():
    assert set(list_encoders()) >= {"dlib_resnet", "onnx_arcface", *trainable_encoders()}
    with pytest.raises(UnknownName, match="dlib_resnet"):
        create_encoder("no_such_encoder")
    assert trainable_encoders() == [
        "attentionnet",
        "hrnet",
        "mobilefacenet",
        "repvgg",
        "resnest",
        "resnet",
        "resnet152",
    ]
    with pytest.raises(DuplicateName, match="twice"):
        ENCODERS.register("dlib_resnet")(type("Again", (FaceEncoder,), {}))


# --------------------------------------------------------------------------- dlib


@pytest.fixture(scope="module")
def dlib_encoder():
    return create_encoder("dlib_resnet")


@pytest.fixture(scope="module")
def face_crops():
    from fairforge.sources.synthetic import render_face, sample_subject, sample_view

    crops = []
    for sid, tone, gender in (("s1", "tone1", "female"), ("s2", "tone4", "male")):
        subject = sample_subject(7, sid, tone, gender)
        for j in range(2):
            img = render_face(subject, sample_view(7, f"{sid}_{j}"), 400)
            crops.append(cv2.resize(img[60:340, 60:340], (150, 150), interpolation=cv2.INTER_AREA))
    return crops


def test_jobs_that_embed_with_dlib_or_rank_do_not_import_torch():
    """A dlib embedding job, the forgery quality card, the ranking study and the config check
    of a plan with trained encoders do not pay torch's seconds of import; the trainable
    encoders' networks (the backbones' deferred modules) import it."""
    probe = (
        "import sys\n"
        "from fairforge.encoders import create_encoder\n"
        "import fairforge.ranking, fairforge.tables.forgery_quality\n"
        "create_encoder('dlib_resnet')\n"
        "from fairforge.encoders.base import arch_spec, trainable_encoders\n"
        "assert 'mobilefacenet' in trainable_encoders() and arch_spec('hrnet').input_size\n"
        "print('torch' in sys.modules)\n"
        "from fairforge.encoders.base import BACKBONES\n"
        "BACKBONES.get('mobilefacenet')\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_dlib_resnet_gives_unit_128d_embeddings_on_faces_and_on_any_image(dlib_encoder, face_crops):
    noise = rng_for(0, "noise").integers(0, 256, (37, 23, 3), dtype=np.uint8)
    tiny = np.full((8, 8, 3), 120, dtype=np.uint8)
    images = face_crops + [noise, tiny]
    emb = dlib_encoder.embed(images)
    _unit_rows(emb, 128, len(images))
    _, detected = dlib_encoder.chips_for(images)
    np.testing.assert_array_equal(detected, [True] * 4 + [False, False])
    before = len(dlib_encoder.fallbacks)
    dlib_encoder.embed(images)
    assert dlib_encoder.fallbacks[before:] == [False] * 4 + [True, True]
    # batching does not mix images up; different faces give different embeddings
    one_by_one = np.concatenate([dlib_encoder.embed([img]) for img in images[:3]])
    np.testing.assert_allclose(emb[:3], one_by_one, atol=1e-5)
    assert emb[0] @ emb[2] < 0.9999 and emb[0] @ emb[1] < 0.9999
    assert dlib_encoder.dim == 128 and dlib_encoder.input_size == 150


def test_dlib_fallback_box_calibrated_on_near_crops_matches_detection(face_crops):
    # the crops are loose (face box ~64% of the side, low in the crop): the whole-crop box
    # misframes the face, the box calibrated on near crops gives the detector's chip back
    enc = create_encoder("dlib_resnet")
    blind = create_encoder("dlib_resnet", detect=False)
    detected_chips, detected = enc.chips_for(face_crops)
    assert detected.all()

    def chip_error():
        chips, fell_back = blind.chips_for(face_crops)
        assert not fell_back.any()
        return np.mean(
            [np.abs(a.astype(int) - b.astype(int)).mean() for a, b in zip(chips, detected_chips)]
        )

    whole_crop = chip_error()
    box = blind.calibrate_fallback(face_crops)
    assert box is not None and blind.fallback_box == box and blind._detector is None
    x0, y0, x1, y1 = box
    assert 0.1 < x0 < x1 < 0.9 and 0.5 < x1 - x0 < 0.8 and y0 > 0.1
    calibrated = chip_error()
    assert calibrated < 10 < whole_crop
    emb_blind, emb_det = blind.embed(face_crops), enc.embed(face_crops)
    assert (np.sum(emb_blind * emb_det, axis=1) > 0.97).all()
    noise = rng_for(1, "noise").integers(0, 256, (60, 60, 3), dtype=np.uint8)
    assert blind.calibrate_fallback([noise]) is None and blind.fallback_box == box
    with pytest.raises(EncoderError, match="fallback_box"):
        create_encoder("dlib_resnet", fallback_box=(0.5, 0, 0.4, 1))


def test_embed_rejects_non_rgb_input(dlib_encoder):
    with pytest.raises(EncoderError):
        dlib_encoder.embed([np.zeros((20, 20), dtype=np.uint8)])
    with pytest.raises(EncoderError):
        dlib_encoder.embed(np.zeros((20, 20, 3), dtype=np.uint8))  # one image, not a batch


# --------------------------------------------------------------------------- ONNX


def _export(model, path, dynamic=True):
    kwargs = {"dynamic_axes": {"data": {0: "n"}, "fc1": {0: "n"}}} if dynamic else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (torch.zeros(1, 3, 112, 112),),
            str(path),
            input_names=["data"],
            output_names=["fc1"],
            dynamo=False,
            **kwargs,
        )


@pytest.fixture(scope="module")
def tiny_arcface(tmp_path_factory):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = torch.nn.Sequential(
            torch.nn.Conv2d(3, 4, 8, stride=8),
            torch.nn.Flatten(),
            torch.nn.Linear(4 * 14 * 14, 512),
        ).eval()
    path = tmp_path_factory.mktemp("onnx") / "tiny.onnx"
    _export(model, path)
    return model, path


def test_onnx_arcface_matches_the_model_with_insightface_preprocessing(tiny_arcface, tmp_path):
    model, path = tiny_arcface
    enc = create_encoder("onnx_arcface", model_path=path, threads=1)
    assert enc.dim == 512 and enc.input_size == 112
    rng = rng_for(0, "onnx")
    images = [rng.integers(0, 256, (112, 112, 3), dtype=np.uint8) for _ in range(3)]
    images.append(rng.integers(0, 256, (150, 130, 3), dtype=np.uint8))  # resized to 112
    emb = enc.embed(images)
    _unit_rows(emb, 512, 4)
    x = (np.stack(images[:3]).astype(np.float32) - 127.5) / 127.5
    with torch.no_grad():
        ref = model(torch.from_numpy(x).permute(0, 3, 1, 2)).numpy()
    ref /= np.linalg.norm(ref, axis=1, keepdims=True)
    np.testing.assert_allclose(emb[:3], ref, atol=1e-4)
    # an export with a fixed batch of one is run image by image, same numbers
    fixed = tmp_path / "fixed.onnx"
    _export(model, fixed, dynamic=False)
    fixed_enc = create_encoder("onnx_arcface", model_path=fixed, threads=1)
    np.testing.assert_allclose(fixed_enc.embed(images), emb, atol=1e-5)


def test_onnx_arcface_missing_model_names_the_expected_path(tmp_path):
    missing = tmp_path / "models" / "w600k_r50.onnx"
    with pytest.raises(EncoderError, match="w600k_r50.onnx") as err:
        create_encoder("onnx_arcface", model_path=missing)
    assert str(missing) in str(err.value)


# --------------------------------------------------------------------------- margin heads


def _head_case(head_cls, **kw):
    head = head_cls(2, 3, scale=64.0, margin=0.5, **kw)
    angles = torch.tensor([0.0, 1.2, 2.0])  # class directions in the plane
    with torch.no_grad():
        head.weight.copy_(torch.stack([torch.cos(angles), torch.sin(angles)], 1))
    emb = torch.tensor([[math.cos(0.9), math.sin(0.9)]]) * 3.0  # norm is ignored
    return head, emb, torch.tensor([0])


def test_arcface_head_adds_the_angular_margin_to_the_target_only():
    head, emb, label = _head_case(ArcFaceHead)
    logits = head(emb, label)[0]
    # θ to the classes: 0.9, 0.3, 1.1
    expected = 64 * torch.tensor([math.cos(0.9 + 0.5), math.cos(0.3), math.cos(1.1)])
    torch.testing.assert_close(logits, expected)


def test_npcface_head_emphasises_hard_negatives_and_widens_the_margin():
    head, emb, label = _head_case(NPCFaceHead, m0=0.4, m1=0.2, t=1.1, a=0.2)
    logits = head(emb, label)[0]
    # cos(θ_y + m) = cos(1.4) ≈ 0.17: class 1 (cos 0.3 ≈ 0.955) and class 2 (cos 1.1 ≈ 0.454)
    # are both hard negatives; the positive margin is m0 + m1 * mean of their cosines
    hard = [math.cos(0.3), math.cos(1.1)]
    m_i = 0.4 + 0.2 * sum(hard) / 2
    expected = 64 * torch.tensor([math.cos(0.9 + m_i), 1.1 * hard[0] + 0.2, 1.1 * hard[1] + 0.2])
    torch.testing.assert_close(logits, expected)
    # past 90 degrees from its class the positive keeps cos θ_y, as in the authors' code
    away = torch.tensor([[math.cos(2.2), math.sin(2.2)]])
    assert float(head(away, label)[0, 0]) == pytest.approx(64 * math.cos(2.2), abs=1e-4)


# --------------------------------------------------------------------------- training


def _identity_images(n_ids=3, per_id=4, size=32):
    rng = rng_for(0, "train-encoder")
    images, labels = [], []
    for c in range(n_ids):
        base = cv2.resize(
            rng.integers(0, 256, (4, 4, 3), dtype=np.uint8),
            (size, size),
            interpolation=cv2.INTER_NEAREST,
        )
        for _ in range(per_id):
            noisy = base.astype(np.int16) + rng.integers(-25, 26, base.shape)
            images.append(np.clip(noisy, 0, 255).astype(np.uint8))
            labels.append(f"id{c}")
    return images, labels


# Adam at a small rate: six steps on three identities drive the loss down (the paper's SGD at
# lr 0.1 is tested on its own below).
ADAM = {"optimizer": "adam", "lr": 1e-3, "weight_decay": 5e-4, "val_fraction": 0.0}


@pytest.mark.parametrize("head", ["arcface", "npcface"])
def test_mobilefacenet_training_lowers_the_loss_and_round_trips(tmp_path, head):
    images, labels = _identity_images()
    ckpt = tmp_path / "mfn.pt"
    trained = train_encoder(
        images,
        labels,
        "mobilefacenet",
        epochs=10,
        out_path=ckpt,
        head=head,
        input_size=32,
        embedding_dim=64,
        batch_size=12,
        max_steps=6,
        seed=1,
        device="cpu",
        **ADAM,
    )
    losses = trained.losses
    assert len(losses) == 6 and all(np.isfinite(losses))
    assert np.mean(losses[-2:]) < 0.5 * losses[0]
    payload = torch.load(ckpt, map_location="cpu", weights_only=True)
    assert payload["config"]["arch"] == "mobilefacenet" and payload["config"]["head"] == head
    assert payload["classes"] == ["id0", "id1", "id2"]
    enc = create_encoder("mobilefacenet", checkpoint=ckpt, device="cpu")
    assert (enc.dim, enc.input_size) == (64, 32)
    emb = enc.embed(images[:5] + [np.zeros((50, 70, 3), dtype=np.uint8)])
    _unit_rows(emb, 64, 6)
    with pytest.raises(EncoderError, match="mobilefacenet"):
        create_encoder("resnet", checkpoint=ckpt)
    # weights of another network under the same name (an older version) name the file
    payload = torch.load(ckpt, weights_only=True)
    payload["state_dict"].pop(next(iter(payload["state_dict"])))
    torch.save(payload, tmp_path / "old.pt")
    with pytest.raises(EncoderError, match="old.pt: its weights do not fit"):
        create_encoder("mobilefacenet", checkpoint=tmp_path / "old.pt")
    # same seed, same weights
    again = train_encoder(
        images,
        labels,
        "mobilefacenet",
        epochs=10,
        head=head,
        input_size=32,
        embedding_dim=64,
        batch_size=12,
        max_steps=6,
        seed=1,
        device="cpu",
        **ADAM,
    )
    assert again.losses == losses


SMALL = {"attentionnet": "attention56_small", "resnet152": "ir_se152_small"}


@pytest.mark.parametrize(
    "arch", ["resnet", "resnet152", "attentionnet", "resnest", "repvgg", "hrnet"]
)
def test_timm_encoders_train_a_step_and_embed(tmp_path, arch):
    size = 64 if arch == "hrnet" else 32  # HRNet fuses branches down to stride 32
    images, labels = _identity_images(size=size)
    ckpt = tmp_path / f"{arch}.pt"
    trained = train_encoder(
        images,
        labels,
        arch,
        epochs=1,
        out_path=ckpt,
        input_size=size,
        embedding_dim=32,
        batch_size=6,
        max_steps=2,
        device="cpu",
        # the full Attention-56 and IR-SE-152 are 81M and 71M parameters; the same
        # networks at a quarter width
        backbone=SMALL.get(arch),
        **ADAM,
    )
    assert len(trained.losses) == 2 and all(np.isfinite(trained.losses))
    enc = create_encoder(arch, checkpoint=ckpt, device="cpu")
    _unit_rows(enc.embed(images[:3]), 32, 3)
    if arch not in SMALL:
        assert enc.config["backbone"] == arch_spec(arch).backbone


def _n_params(net):
    return sum(p.numel() for p in net.parameters())


def test_attention_modules_enhance_the_trunk_with_a_soft_mask():
    from fairforge.encoders.attentionnet import AttentionModule, AttentionNet

    module = AttentionModule(8, depth=3).eval()
    x = torch.randn(2, 8, 16, 16)
    with torch.no_grad():
        first = module.first(x)
        mask = module.mask(first, module.trunk(first))
    assert mask.shape == x.shape and mask.min() >= 0 and mask.max() <= 1
    assert module(x).shape == x.shape
    # FaceX-Zoo's Attention-56 (its 98.96M also counts 17.83M of unused projections)
    full = AttentionNet()
    assert _n_params(full) == 81_138_880
    assert sum(isinstance(m, AttentionModule) for m in full.modules()) == 3
    assert [m.depth for m in full.modules() if isinstance(m, AttentionModule)] == [3, 2, 1]
    # 7x7 stride-2 stem, 7x7 map before the linear layer at 112 px
    assert full.features[0].kernel_size == (7, 7) and full.features[0].stride == (2, 2)
    assert full.output[1].in_features == 2048 * 7 * 7 and full.output[1].bias is None
    deeper = AttentionNet(64, 32, modules=(1, 2, 3), width=0.125)
    assert sum(isinstance(m, AttentionModule) for m in deeper.modules()) == 6
    assert deeper.eval()(torch.randn(2, 3, 32, 32)).shape == (2, 64)


def test_resnet152_is_the_face_recognition_ir_se_152():
    from fairforge.encoders.iresnet import IR_NETS, IResNet, IRUnit, SqueezeExcite

    assert arch_spec("resnet152") == ArchSpec("ir_se152", 112, 512)
    full = IResNet()  # depth 152, SE units, 512-d, 112 px: FaceX-Zoo's 71.14M
    assert _n_params(full) == 71_148_736
    assert _n_params(IResNet(se=False)) == 70_737_600
    units = [m for m in full.body if isinstance(m, IRUnit)]
    assert len(units) == 3 + 8 + 36 + 3 and IR_NETS["ir152"][0] == (3, 8, 36, 3)
    assert all(isinstance(u.residual[-1], SqueezeExcite) for u in units)
    # BN - conv - PReLU - conv(stride) - BN; the stride is in the second convolution
    first = units[0].residual
    kinds = [type(m).__name__ for m in first][:5]
    assert kinds == ["BatchNorm2d", "Conv2d", "PReLU", "Conv2d", "BatchNorm2d"]
    assert first[1].stride == (1, 1) and first[3].stride == (2, 2)
    # BN - dropout - flatten - linear(512 x 7 x 7) - BN
    assert [type(m).__name__ for m in full.output] == [
        "BatchNorm2d", "Dropout", "Flatten", "Linear", "BatchNorm1d"
    ]  # fmt: skip
    assert full.output[3].in_features == 512 * 7 * 7
    with torch.no_grad():
        assert full.eval()(torch.randn(1, 3, 112, 112)).shape == (1, 512)
    with pytest.raises(ValueError, match="divisible by 16"):
        IResNet(input_size=100)


def test_a_shallow_ir_resnet_trains_a_step_with_the_papers_head():
    from fairforge.encoders.iresnet import IResNet

    torch.manual_seed(0)
    net = IResNet(units=(1, 1, 1, 1), embedding_dim=16, input_size=32, width=0.125)
    head = NPCFaceHead(16, 3)
    opt = torch.optim.SGD([*net.parameters(), *head.parameters()], lr=0.1, momentum=0.9)
    x, y = torch.randn(6, 3, 32, 32), torch.tensor([0, 1, 2, 0, 1, 2])
    before = {k: v.clone() for k, v in net.state_dict().items()}
    loss = torch.nn.functional.cross_entropy(head(net(x), y), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    assert torch.isfinite(loss)
    changed = [k for k, v in net.state_dict().items() if not torch.equal(v, before[k])]
    assert any(k.startswith("stem.") for k in changed) and any("residual" in k for k in changed)


def test_the_papers_recipe_is_the_default_and_early_stopping_keeps_the_best_epoch():
    images, labels = _identity_images(n_ids=3, per_id=10)
    seen = {}
    real_sgd = torch.optim.SGD

    def spy(params, **kw):
        seen.update(kw)
        return real_sgd(params, **kw)

    mp = pytest.MonkeyPatch()
    mp.setattr(torch.optim, "SGD", spy)
    try:
        trained = train_encoder(
            images, labels, "mobilefacenet", epochs=40, input_size=32, embedding_dim=16,
            batch_size=8, patience=2, device="cpu", lr=1.0, milestones=(100,),
        )  # fmt: skip
    finally:
        mp.undo()
    assert seen == {"lr": 1.0, "momentum": 0.9, "weight_decay": 1e-8}
    assert trained.config["head"] == "npcface" and trained.config["optimizer"] == "sgd"
    # one held-out image of each identity (10%); at lr 1 the held-out loss soon stops
    # improving and training stops `patience` epochs after the best one
    cfg = trained.config
    assert cfg["epochs_run"] < 40 and cfg["epochs_run"] - cfg["best_epoch"] == 2
    from fairforge.training.encoder import PAPER_RECIPE

    assert PAPER_RECIPE["milestones"] == (5, 25, 68) and PAPER_RECIPE["batch_size"] == 64


def _crop_rows(folder, images, labels) -> list[dict]:
    """Faces-table rows of ``images`` written under ``folder``: id2 is the test split, the
    others train; one unusable row."""
    from fairforge.images import write_image

    rows = []
    for i, (img, label) in enumerate(zip(images, labels)):
        write_image(folder / f"crops/{i}.png", img)
        rows.append(
            {
                "image_id": f"im{i:02d}",
                "subject_id": label,
                "crop_path": f"crops/{i}.png",
                "split": "test" if label == "id2" else "train",
                "ok": True,
            }
        )
    rows.append(
        {"image_id": "im99", "subject_id": "id9", "crop_path": None, "split": "train", "ok": False}
    )
    return rows


def test_train_encoder_on_faces_uses_the_train_split_crops(tmp_path):
    import pandas as pd

    images, labels = _identity_images()
    rows = _crop_rows(tmp_path, images, labels)
    trained = train_encoder_on_faces(
        pd.DataFrame(rows),
        tmp_path,
        "mobilefacenet",
        tmp_path / "mfn.pt",
        input_size=32,
        embedding_dim=16,
        max_steps=1,
        device="cpu",
    )
    assert trained.classes == ["id0", "id1"] and len(trained.losses) == 1
    assert (tmp_path / "mfn.pt").is_file()

    # far-trained: the crops are degraded (seeded per image) before training, so the first
    # loss differs from the near one while the same seed repeats it exactly
    def far(seed):
        return train_encoder_on_faces(
            pd.DataFrame(rows),
            tmp_path,
            "mobilefacenet",
            None,
            far=True,
            distance=5,
            seed=seed,
            input_size=32,
            embedding_dim=16,
            max_steps=1,
            device="cpu",
        ).losses

    assert far(0) == far(0) and far(0) != trained.losses
    with pytest.raises(ValueError, match="no usable face crops in split 'val'"):
        train_encoder_on_faces(pd.DataFrame(rows), tmp_path, "mobilefacenet", None, split="val")


def test_far_trained_encoders_learn_from_the_degradation_the_ranking_uses(tmp_path):
    """With the learned degradation, a far-trained encoder's crops come from the near-to-far
    generator, each exactly the far view the ranking makes of it (same seed), not from the
    classical chain."""
    import cv2
    import pandas as pd

    from fairforge.encoders.crops import far_view
    from fairforge.images import write_image
    from fairforge.perturb.learned_degradation import cached_generator
    from fairforge.training.degradation import HighToLowConfig, train_high_to_low

    images, labels = _identity_images()
    rows = pd.DataFrame(_crop_rows(tmp_path, images, labels))
    for i, img in enumerate(images[:4]):
        write_image(tmp_path / "near" / f"{i}.png", img)
        far = cv2.resize(img, (16, 16), interpolation=cv2.INTER_AREA)
        write_image(tmp_path / "far" / f"{i}.png", far)
    gen = train_high_to_low(
        tmp_path / "near", tmp_path / "far", tmp_path / "g.pt", steps=1, batch_size=2,
        device="cpu", config=HighToLowConfig(channels=8),
    ).checkpoint  # fmt: skip
    fit = dict(input_size=32, embedding_dim=16, max_steps=2, seed=4, device="cpu")

    def far_trained(**degradation):
        return train_encoder_on_faces(
            rows, tmp_path, "mobilefacenet", None, far=True, distance=2, **degradation, **fit
        ).losses

    learned = far_trained(degradation="learned", generator=gen)
    train = rows[rows["ok"] & (rows["split"] == "train")].sort_values("image_id")
    views = [
        far_view(images[int(i[2:])], i, 2, 4, 32, generator=cached_generator(gen))
        for i in train["image_id"]
    ]
    assert views[0].shape == (32, 32, 3)
    direct = train_encoder(views, train["subject_id"].tolist(), "mobilefacenet", **fit)
    assert learned == direct.losses
    assert learned != far_trained()  # the classical chain
    # near-trained encoders never read the generator
    near = train_encoder_on_faces(rows, tmp_path, "mobilefacenet", None, **fit).losses
    assert (
        near
        == train_encoder_on_faces(
            rows, tmp_path, "mobilefacenet", None, degradation="learned", generator=gen, **fit
        ).losses
    )
    with pytest.raises(ValueError, match="learned needs a near-to-far generator"):
        far_trained(degradation="learned")


def test_trainable_encoder_needs_a_checkpoint():
    with pytest.raises(EncoderError, match="checkpoint"):
        create_encoder("mobilefacenet")


def test_networks_and_margin_heads_are_found_by_their_registries():
    from fairforge.encoders.base import BACKBONES
    from fairforge.encoders.embedding_net import TimmEmbeddingNet, build_embedding_net
    from fairforge.encoders.heads import MARGIN_HEADS
    from fairforge.encoders.mobilefacenet import MobileFaceNet

    assert {"mobilefacenet", "ir_se152", "attention56"} <= set(BACKBONES.names())
    assert BACKBONES.metadata("ir_se152") == {"family": "iresnet"}
    net, config = build_embedding_net("mobilefacenet", 16, None, 32)
    assert isinstance(net, MobileFaceNet) and config["backbone"] == "mobilefacenet"
    net, config = build_embedding_net("resnet", 16, None, 32)  # not registered: timm's
    assert isinstance(net, TimmEmbeddingNet) and config["backbone"] == "resnet10t"
    assert MARGIN_HEADS.names() == ["arcface", "npcface"]
    images, labels = _identity_images()
    for bad, message in (({"head": "cosface"}, "margin head 'cosface'"),
                         ({"optimizer": "rmsprop"}, "optimizer 'rmsprop'")):  # fmt: skip
        with pytest.raises(EncoderError, match=message):
            train_encoder(images, labels, "mobilefacenet", epochs=1, device="cpu", **bad)
