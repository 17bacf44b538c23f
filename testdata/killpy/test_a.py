"""A pytest suite one of whose tests writes outside the allowlist: under
--enforce, pytest is killed there, and the tests after it never run."""

import os
import pathlib


def test_first():
    pass


def test_save():
    pathlib.Path(os.environ["WW_KILL_TARGET"]).write_text("theme = 'test'\n")


def test_after():
    pass


def test_deselected():
    pass
