"""The shared base of the suite's test classes, as unittest suites have
one: its setUp writes the file each test reads into the working
directory, its tearDown removes it."""

import os
import unittest


class ReportCase(unittest.TestCase):
    def setUp(self):
        self.got = "report_%s.txt" % self._testMethodName
        with open(self.got, "w") as f:
            f.write("expected\n")

    def tearDown(self):
        os.remove(self.got)
