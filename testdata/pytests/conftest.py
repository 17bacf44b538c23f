"""Fixtures of the pytest sample: one of them litters the project root."""

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parent


@pytest.fixture
def seeded_db():
    """Writes its database into the project root at setup."""
    path = ROOT / "fixture-db.sqlite"
    path.write_text("seed\n")
    yield path
