"""pymongo_python.py -- the bench scripts' interpreter rule: PyMongo is Debian's python3-pymongo
(scripts/install-deps.sh), importable from /usr/bin/python3, the interpreter tests/e2e/CMakeLists.txt
registers the Python tests with and bench/run.sh and bench/repl_insns.sh start bench scripts with.  A
python3 found first on PATH (a pyenv or venv one) may not have it.

require() is called by a bench script before it imports pymongo: under an interpreter that can import
`bson` and `pymongo` it returns; otherwise it runs the same script again under /usr/bin/python3 (same
arguments, same open files) when that one can, and else exits with status 2 and a message saying what
is missing and where it comes from.  It never installs anything.
"""
import os
import subprocess
import sys

SYSTEM_PYTHON = "/usr/bin/python3"
_GUARD = "TAMGA_BENCH_PYMONGO_REEXEC"   # set on the re-run: never loops


def _has_pymongo():
    try:
        import bson  # noqa: F401
        import pymongo  # noqa: F401
    except ImportError:
        return False
    return True


def require():
    if _has_pymongo():
        return
    script = os.path.basename(sys.argv[0]) or "bench script"
    here = os.path.realpath(sys.executable or "")
    if (os.environ.get(_GUARD) != "1" and os.access(SYSTEM_PYTHON, os.X_OK)
            and os.path.realpath(SYSTEM_PYTHON) != here
            and subprocess.run([SYSTEM_PYTHON, "-c", "import bson, pymongo"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL).returncode == 0):
        sys.stdout.flush()
        sys.stderr.flush()
        os.environ[_GUARD] = "1"
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(sys.argv[0])] + sys.argv[1:])
    if here == os.path.realpath(SYSTEM_PYTHON):
        msg = "PyMongo is not importable from %s" % SYSTEM_PYTHON
    else:
        msg = "PyMongo is importable neither from %s (%s) nor from %s" % (sys.executable, here, SYSTEM_PYTHON)
    sys.stderr.write("%s: %s: install Debian's python3-pymongo (scripts/install-deps.sh)\n" % (script, msg))
    sys.exit(2)
