import os
import subprocess
import sys

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


# A DAG as write_rule_graph reads it: rules hashed by their name, as snakemake's are, and
# snakemake's own formatting of a rule graph.
_RULE_GRAPH = """
import sys
import snakemake.api  # snakemake.dag alone is a circular import
from snakemake.dag import DAG
from fairforge.records import write_rule_graph

class Rule:
    def __init__(self, name):
        self.name = name
    def __hash__(self):
        return hash(self.name)
    def __eq__(self, other):
        return self.name == other.name
    def __str__(self):
        return self.name

class Job:
    def __init__(self, rule):
        self.rule = rule

class Dag:
    _dot = DAG._dot
    def __init__(self, edges):
        self.rules = [Rule(n) for n in sorted({n for e in edges for n in e})]
        rule = {r.name: r for r in self.rules}
        self.jobs = [Job(r) for r in self.rules]
        self.dependencies = {
            job: [Job(rule[a]) for a, b in edges if b == job.rule.name] for job in self.jobs
        }

edges = [(f"shard_{i}", "gather") for i in range(12)] + [("gather", "table"), ("pairs", "table")]
write_rule_graph(sys.argv[1], Dag(edges))
"""


def test_the_rule_graph_file_is_the_same_whatever_the_hash_seed(tmp_path):
    """Rules hash by name, and str hashes change with each process: the record must not
    keep their set order (two runs of one workflow wrote two files)."""
    written = []
    for seed in ("1", "2", "3"):
        out = tmp_path / f"rulegraph_{seed}.dot"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-c", _RULE_GRAPH, str(out)], env=env, check=True)
        written.append(out.read_text())
    assert written[0] == written[1] == written[2]
    assert written[0].count(" -> ") == 14 and "gather" in written[0]
