"""A pytest suite with the habits writewatch exists to catch.

Each test writes where it should not in its own way; test_clean writes
only under tmp_path.
"""

import os
import pathlib
import subprocess


def test_fixture_writes_root(seeded_db):
    assert seeded_db.read_text() == "seed\n"


def test_writes_home_config():
    config = pathlib.Path(os.environ["HOME"]) / ".config" / "app"
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text("theme = 'test'\n")


def test_subprocess_writes_parent_dir():
    subprocess.run(["sh", "-c", "echo > ../x"], check=True)


def test_clean(tmp_path):
    (tmp_path / "ok.txt").write_text("fine\n")
