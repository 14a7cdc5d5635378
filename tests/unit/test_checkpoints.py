"""Reading released weight files (fairforge.checkpoints) and naming the release files an
official forgery backend needs (fairforge.forgery.releases)."""

import pytest
import torch
from torch import nn

from fairforge.checkpoints import CheckpointMismatch, load_exact, read_state_dict
from fairforge.forgery.releases import ReleaseFile, ReleaseFileError, check_release_files


def test_a_dataparallel_checkpoint_in_a_container_loads_exactly(tmp_path):
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
    path = tmp_path / "net.pth"
    torch.save({"state_dict": {f"module.{k}": v for k, v in net.state_dict().items()}}, path)
    other = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4))
    load_exact(other, read_state_dict(path, "test net"), "test net")
    for a, b in zip(net.state_dict().values(), other.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_mismatched_keys_and_shapes_are_listed(tmp_path):
    state = nn.Sequential(nn.Conv2d(3, 4, 3)).state_dict()
    state["extra.weight"] = torch.zeros(1)
    with pytest.raises(CheckpointMismatch) as err:
        load_exact(nn.Sequential(nn.Conv2d(3, 5, 3), nn.ReLU(), nn.Conv2d(5, 2, 1)), state, "x")
    text = str(err.value)
    assert "2.weight" in text and "0.weight (4, 3, 3, 3)≠(5, 3, 3, 3)" in text
    assert "extra.weight" in text


def test_a_pickled_module_is_refused_with_the_conversion_hint(tmp_path):
    path = tmp_path / "whole.pth"
    torch.save(nn.Linear(2, 2), path)
    with pytest.raises(CheckpointMismatch, match="converted to its state_dict once"):
        read_state_dict(path, "whole model")
    with pytest.raises(FileNotFoundError, match=str(tmp_path / "absent.pth")):
        read_state_dict(tmp_path / "absent.pth", "absent weights")


def test_release_files_name_the_option_file_and_release(tmp_path):
    spec = ReleaseFile("generator", "latest_net_G.pth", "github.com/x/y", "the generator")
    with pytest.raises(ReleaseFileError, match="forgery.options.m.generator.*latest_net_G"):
        check_release_files("m", "official", [spec], {})
    with pytest.raises(ReleaseFileError, match="github.com/x/y.*nowhere.pth"):
        check_release_files("m", "official", [spec], {"generator": str(tmp_path / "nowhere.pth")})
    (tmp_path / "g.pth").write_bytes(b"x")
    assert check_release_files("m", "official", [spec], {"generator": str(tmp_path / "g.pth")}) == {
        "generator": str(tmp_path / "g.pth")
    }
