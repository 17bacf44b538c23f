"""An XlsxWriter-like suite: each test writes its file into the working
directory, and its tearDown removes it again."""

import os
import unittest


def _case(n):
    class Case(unittest.TestCase):
        def setUp(self):
            self.got = "chart%03d_%05d.xlsx" % (n, os.getpid())  # a pid of 5 digits at least, like a temp name

        def tearDown(self):
            os.remove(self.got)

        def test_create_file(self):
            with open(self.got, "w") as f:
                f.write("x")

    Case.__name__ = Case.__qualname__ = "TestChart%03d" % n
    return Case


for _n in range(150):
    globals()["TestChart%03d" % _n] = _case(_n)
