"""A plain (not editable) install carries everything the package reads at run time.

The development checkout runs from ``src/`` next to every data file, so a file missing from
the package data only shows once somebody installs a wheel. This test installs the package
into a bare folder and runs it from there, away from the repository.
"""

import os
import shutil
import subprocess
import sys

# What a source distribution of the package holds; copied so the build leaves nothing in the
# checkout (setuptools writes build/ and *.egg-info next to pyproject.toml).
PROJECT_FILES = ("pyproject.toml", "README.md", "LICENSE", "src")


def test_plain_install_runs_cli_and_validates_config(repo_root, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    for name in PROJECT_FILES:
        source = repo_root / name
        if source.is_dir():
            shutil.copytree(
                source, project / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
            )
        else:
            shutil.copy2(source, project / name)
    target = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(project),
        ],
        check=True,
        cwd=tmp_path,
    )
    shutil.rmtree(project)

    away = tmp_path / "elsewhere"
    away.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}

    def run(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, *args], cwd=away, env=env, text=True, capture_output=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert run("-m", "fairforge", "--help").strip()
    checked = run(
        "-c",
        (
            "import fairforge, yaml\n"
            "from fairforge.config import validate_config\n"
            f"config = yaml.safe_load(open({str(repo_root / 'config.yaml')!r}))\n"
            "validate_config(config)\n"
            "print(fairforge.__file__)\n"
            "print(config['training']['batch_size'])\n"
        ),
    )
    imported_from, batch_size = checked.split()
    assert imported_from.startswith(str(target))
    assert int(batch_size) > 0
