#!/usr/bin/python3
"""qstats_wire.py -- the profiler / $queryStats overhead through the wire, by instructions.

Starts TAMGAD (a Release build) under callgrind on a random local port, loads 10 000 documents through
PyMongo, then counts tamgad's instructions over N finds by _id in four phases: off, on, off, on ("on":
profiler level 1 with slowms 100 and internalQueryStatsRateLimit -1, i.e. $queryStats on every query).
Each phase is bracketed by callgrind_control -z / -d, so setup never counts.  Prints the instructions per
find of each phase and the overhead of "on" over "off".  Usage: bench/qstats_wire.py build-bench/tamgad [N]
"""
import glob, os, random, re, shutil, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pymongo_python  # noqa: E402
pymongo_python.require()   # Debian's PyMongo: /usr/bin/python3, whatever python3 ran this
import pymongo  # noqa: E402

if len(sys.argv) < 2:
    sys.exit("usage: bench/qstats_wire.py build-bench/tamgad [N]")
tamgad = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
work = tempfile.mkdtemp(prefix="qsw-")
os.mkdir(work + "/db")
port = random.randint(30000, 60000)
out = work + "/cg.out"
proc = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, tamgad,
                         "--port", str(port), "--bind_ip", "127.0.0.1", "--dbpath", work + "/db",
                         "--nounixsocket"], stdout=open(work + "/log", "w"), stderr=subprocess.STDOUT)
try:
    cl = pymongo.MongoClient("127.0.0.1", port, serverSelectionTimeoutMS=60000)
    db = cl.bench
    db.c.drop()
    db.c.insert_many([{"_id": i, "v": i, "s": "x" * 20} for i in range(10000)])
    ids = [random.randrange(10000) for _ in range(n)]

    def phase(on, label):
        db.command("profile", 1 if on else 0, slowms=100)
        cl.admin.command("setParameter", 1, internalQueryStatsRateLimit=-1 if on else 0)
        for k in ids[:50]:     # warm: the shape's entry exists before counting
            db.c.find_one({"_id": k})
        subprocess.run(["callgrind_control", "-z", str(proc.pid)], check=True, stdout=subprocess.DEVNULL)
        for k in ids:
            db.c.find_one({"_id": k})
        subprocess.run(["callgrind_control", "-d", label, str(proc.pid)], check=True, stdout=subprocess.DEVNULL)
        time.sleep(0.5)
        files = sorted(glob.glob(out + ".*"), key=os.path.getmtime)
        with open(files[-1]) as f:
            m = re.search(r"^summary: (\d+)", f.read(), re.M)
        return int(m.group(1)) / n

    res = [(lbl, phase(lbl.startswith("on"), lbl)) for lbl in ("off1", "on1", "off2", "on2")]
    for lbl, v in res:
        print("%-5s %8.0f instructions/find" % (lbl, v))
    off = (res[0][1] + res[2][1]) / 2
    on = (res[1][1] + res[3][1]) / 2
    print("off %.0f on %.0f overhead %+.0f (%+.1f%%)" % (off, on, on - off, 100 * (on - off) / off))
finally:
    proc.terminate()
    proc.wait(60)
    if not os.environ.get("KEEP"): shutil.rmtree(work, ignore_errors=True)
    else: print(work)
