"""unittest-style tests, run by pytest, whose writes are in the shared
setUp of their base class, not in the test methods."""

import unittest

from reportbase import ReportCase


class TestSummary(ReportCase):
    def test_header(self):
        with open(self.got) as f:
            self.assertEqual(f.read(), "expected\n")

    def test_footer(self):
        with open(self.got) as f:
            self.assertTrue(f.read().endswith("\n"))


class TestBrokenSetUp(unittest.TestCase):
    def setUp(self):
        raise RuntimeError("setUp fails")

    def test_never_runs(self):
        pass
