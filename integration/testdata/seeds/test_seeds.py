"""The seeds' habits, in pytest: a test that overwrites the user's config
in $HOME and reads it back, one that litters the repository root, a clean
one, and one that fails."""

import os
import pathlib


def test_saves_config():
    d = pathlib.Path(os.environ["HOME"]) / ".config" / "seedapp"
    d.mkdir(parents=True, exist_ok=True)
    (d / "config.toml").write_text('theme = "py"\nsize = 12\n')
    assert (d / "config.toml").read_text() == 'theme = "py"\nsize = 12\n'


def test_litters_root():
    pathlib.Path("py-output.txt").write_text("debug\n")


def test_clean(tmp_path):
    (tmp_path / "ok").write_text("")


def test_fails():
    assert False, "this test fails, with or without writewatch"
