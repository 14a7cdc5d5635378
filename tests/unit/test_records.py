import yaml

from fairforge.config import validate_config
from fairforge.records import config_hash, write_run_records


def test_run_records_name_versions_commit_and_config(tmp_path, repo_root):
    config = validate_config({})
    write_run_records(tmp_path, repo_root, config)
    versions = yaml.safe_load((tmp_path / "versions.yml").read_text())
    assert versions["packages"]["torch"] == "2.14.1"
    assert versions["config_sha256_16"] == config_hash(config)
    assert versions["git_commit"] != ""
    assert yaml.safe_load((tmp_path / "config.resolved.yaml").read_text()) == config


def test_config_hash_changes_with_the_config():
    assert config_hash({"a": 1}) != config_hash({"a": 2})
    assert config_hash({"a": 1, "b": 2}) == config_hash({"b": 2, "a": 1})
