"""writewatch's pytest plugin: announces test boundaries to writewatch.

writewatch loads it through PYTEST_PLUGINS and PYTHONPATH; nobody installs
it. It speaks writewatch's test-boundary protocol (docs/protocol.md): each
announcement is an open() of a path under /dev/null/.writewatch/, which
always fails (/dev/null is not a directory) and which writewatch sees in
the kernel, in order with the writes of this process and the processes it
starts.

It never changes a test's outcome: every announcement swallows every
error, and the hooks only wrap pytest's own.
"""

import functools
import os

import pytest

_PREFIX = "/dev/null/.writewatch/1/"
_FLAGS = os.O_WRONLY | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)


def _quote(value):
    from urllib.parse import quote

    return quote(str(value), safe="")


# The longest announcement made: the kernel reads no more than 4096
# bytes of a path.
_MAX_PATH = 4000


def _path(verb, fields):
    """The announcement's path; a list value repeats its field."""
    parts = []
    for k, v in fields.items():
        for value in v if isinstance(v, list) else [v]:
            if value not in (None, ""):
                parts.append("%s=%s" % (k, _quote(value)))
    return _PREFIX + verb + "?runner=pytest&" + "&".join(parts)


def _open(path):
    if len(path.encode("utf-8", "surrogateescape")) > _MAX_PATH:
        return
    fd = os.open(path, _FLAGS, 0o600)
    os.close(fd)  # never happens: the open cannot succeed


def _announce(verb, **fields):
    try:
        _open(_path(verb, fields))
    except BaseException:
        pass


def _where(item):
    try:
        path = str(getattr(item, "path", None) or item.fspath)
        line = item.location[1]
        return item.location[0], path, (line + 1 if line is not None else "")
    except BaseException:
        return "", "", ""


def _fixtures(item):
    """The fixtures the item uses, comma-separated, as many as fit in
    1,500 bytes: a test that reads what the setup of one of its own
    fixtures wrote, set up in an earlier test, reads no other test's
    write."""
    try:
        names, size = [], 0
        for name in getattr(item, "fixturenames", ()):
            size += len(name) + 1
            if size > 1500:
                break
            names.append(name)
        return ",".join(names)
    except BaseException:
        return ""


def _announce_plan(items):
    """Announces the tests the session will run, in order: a plan
    announcement per run of items of one suite, as many ids as fit, each
    with the total. An id too long for any announcement is left out: the
    plan then does not add up, and writewatch says it cannot tell which
    tests did not run rather than guess."""
    try:
        total = len(items)
        suite, ids, size = None, [], 0
        for item in items:
            where = _where(item)[0]
            part = len("&id=" + _quote(item.nodeid))
            if ids and (where != suite or size + part > _MAX_PATH):
                _announce("plan", total=total, suite=suite, id=ids)
                ids = []
            if not ids:
                suite, size = where, len(_path("plan", {"total": total, "suite": where}))
            ids.append(item.nodeid)
            size += part
        if ids or total == 0:
            _announce("plan", total=total, suite=suite, id=ids)
    except BaseException:
        pass


class _Phase:
    """Announces one runtest phase of an item around pytest's own hook."""

    def __init__(self, item, phase):
        self.item, self.phase = item, phase

    def __enter__(self):
        try:
            suite, path, line = _where(self.item)
            self.suite = suite
            fixtures = _fixtures(self.item) if self.phase == "setup" else ""
            _announce("begin", suite=suite, id=self.item.nodeid, phase=self.phase, file=path, line=line, fixtures=fixtures)
            self.item.config._writewatch_current = (self.item, self.phase)
        except BaseException:
            pass
        return self

    def __exit__(self, *exc):
        try:
            self.item.config._writewatch_current = None
            _announce("end", suite=getattr(self, "suite", ""), phase="session")
        except BaseException:
            pass
        return False


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_setup(item):
    with _Phase(item, "setup"):
        yield


# The methods of a unittest.TestCase that run inside pytest's call phase,
# around the test method, announced as phases of their own.
_FRAMES = ("setUp", "tearDown")


def _testcase(item):
    """The unittest.TestCase instance item runs, or None."""
    import unittest

    for name in ("_testcase", "instance"):
        try:
            case = getattr(item, name, None)
        except BaseException:
            continue
        if isinstance(case, unittest.TestCase):
            return case
    return None


def _framed(item, name, method, path, line):
    """method, announced as phase name of item's test, at path and line;
    the phase before it is announced again when it returns or raises."""

    @functools.wraps(method)
    def run(*args, **kwargs):
        current, suite = None, ""
        try:
            current = getattr(item.config, "_writewatch_current", None)
            suite = _where(item)[0]
            _announce("begin", suite=suite, id=item.nodeid, phase=name, file=path, line=line)
        except BaseException:
            pass
        try:
            return method(*args, **kwargs)
        finally:
            try:
                if current is not None:
                    outer, phase = current
                    suite, opath, oline = _where(outer)
                    _announce("begin", suite=suite, id=outer.nodeid, phase=phase, file=opath, line=oline)
                else:
                    _announce("end", suite=suite, phase="session")
            except BaseException:
                pass

    return run


def _announce_frames(item):
    """Makes a unittest test's own setUp and tearDown announce themselves:
    unittest runs them inside pytest's call phase, where a write they make
    would be the test method's. Only the instance is changed, and only for
    methods its class defines (not unittest.TestCase's own, which write
    nothing)."""
    try:
        import unittest

        case = _testcase(item)
        if case is None:
            return
        for name in _FRAMES:
            defined = getattr(type(case), name, None)
            if defined is None or defined is getattr(unittest.TestCase, name) or name in vars(case):
                continue
            code = getattr(defined, "__code__", None)
            path = code.co_filename if code is not None else ""
            line = code.co_firstlineno if code is not None else ""
            setattr(case, name, _framed(item, name, getattr(case, name), path, line))
    except BaseException:
        pass


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_call(item):
    with _Phase(item, "call"):
        _announce_frames(item)
        yield


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_teardown(item, nextitem):
    with _Phase(item, "teardown"):
        yield


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_fixture_setup(fixturedef, request):
    current = None
    try:
        current = getattr(request.config, "_writewatch_current", None)
        if current is not None:
            item, phase = current
            suite, path, line = _where(item)
            _announce("begin", suite=suite, id=item.nodeid, phase=phase, fixture=fixturedef.argname, file=path, line=line)
    except BaseException:
        current = None
    try:
        yield
    finally:
        try:
            if current is not None:
                item, phase = current
                suite, path, line = _where(item)
                _announce("begin", suite=suite, id=item.nodeid, phase=phase, file=path, line=line)
        except BaseException:
            pass


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_collection(session):
    _announce("end", phase="collect")
    try:
        yield
    finally:
        _announce("end", phase="session")


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    # The items left once -k, -m and the other plugins have deselected:
    # those the session runs, in order.
    _announce_plan(list(getattr(session, "items", ()) or ()))


def pytest_sessionstart(session):
    _announce("end", phase="session")


def pytest_runtest_logreport(report):
    try:
        outcome = None
        if report.when == "call" or (report.when == "setup" and not report.passed):
            outcome = report.outcome
        elif report.when == "teardown" and report.failed:
            outcome = "failed"
        if outcome is None:
            return
        message = ""
        if report.failed:
            # The assertion's message first (what JUnit shows as the
            # failure's message), then the traceback.
            text = str(getattr(report, "longreprtext", "") or "")
            crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", "")
            message = (str(crash) + "\n\n" + text) if crash else text
        elif report.skipped:
            try:
                message = str(report.longrepr[2])
            except BaseException:
                message = ""
        suite, line = report.location[0], report.location[1]
        _announce(
            "result",
            suite=suite,
            id=report.nodeid,
            outcome=outcome,
            seconds="%.6f" % getattr(report, "duration", 0.0),
            message=message[:1500],
        )
    except BaseException:
        pass
