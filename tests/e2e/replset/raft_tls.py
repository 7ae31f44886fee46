"""raft_tls.py -- TLS between replica-set members and keyFile rollover
(issue 24): three tamgad members on 127.0.0.1 under --tlsMode requireTLS.

- a throw-away CA, a member certificate (--tlsCertificateKeyFile) and a
  separate cluster certificate (--tlsClusterFile) made with the openssl CLI
  in the test's temp folder; a second CA and a certificate of its own for
  a rogue member;
- key rollover: the members hold YAML-array key files [old, new], [new,
  old] and [new] -- every pair shares a key, no pair the same first key --
  and the set still forms (each member authenticates with its first key,
  falls back to its second, accepts any of its own);
- initiation through the localhost exception over TLS, a user, majority
  writes through PyMongo's replica-set URI with TLS, every member's data
  equal; kill -9 of the primary: a new primary, retryable majority writes
  go on, the old member back catches up (data equal);
- the Raft port speaks TLS only: a connector that sends libraft's preamble
  then clear bytes is dropped; one that starts TLS with a certificate of
  the set's CA completes the handshake; one with the rogue CA's
  certificate is refused;
- a member whose certificate comes from another CA stays out: rs.add()
  fails (the primary refuses its certificate) and the set keeps working;
- clusterAuthMode: mongod's startup refusals;
- mongosh over TLS with the user's credentials: rs.status() and a
  majority write;
- a rolling move to TLS: one member under preferTLS (connects out with
  TLS, accepts both), two under allowTLS (connect out in clear, accept
  both): w: 3 writes and a stepdown, so Raft runs both ways through the
  relay's TLS and clear paths.

usage: raft_tls.py path/to/tamgad [path/to/mongosh]
"""
import os
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import time

from pymongo import MongoClient, WriteConcern
from pymongo.errors import PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, Member, coll_hash, free_ports  # noqa: E402

TAMGAD = sys.argv[1]
MONGOSH = sys.argv[2] if len(sys.argv) > 2 and os.path.exists(sys.argv[2]) else None
RAFT_PORT_OFFSET = 1000
checks = 0


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def run(*args):
    r = subprocess.run(list(args), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise AssertionError("%s failed:\n%s" % (args[:3], r.stdout.decode()))


def make_ca(d, name):
    key, crt = os.path.join(d, name + ".key"), os.path.join(d, name + ".pem")
    run("openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", crt, "-days", "2", "-subj", "/O=Tamga Test/CN=" + name)
    return key, crt


def make_cert(d, name, ca, subj, san="IP:127.0.0.1,DNS:localhost", multivalue=False, membership=None):
    """membership: the mongoClusterMembership extension's value (mongod's
    net.tls.clusterAuthX509.extensionValue), a DER UTF8String."""
    key, csr, crt, ext = (os.path.join(d, name + s) for s in (".key", ".csr", ".crt", ".ext"))
    with open(ext, "w") as f:
        f.write("subjectAltName=%s\n"
                "extendedKeyUsage=serverAuth,clientAuth\n" % san)
        if membership is not None:
            f.write("1.3.6.1.4.1.34601.2.1.2=ASN1:UTF8String:%s\n" % membership)
    run("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", key, "-out", csr, "-subj", subj, *(["-multivalue-rdn"] if multivalue else []))
    run("openssl", "x509", "-req", "-in", csr, "-CA", ca[1], "-CAkey", ca[0], "-CAcreateserial",
        "-out", crt, "-days", "2", "-extfile", ext)
    pem = os.path.join(d, name + ".pem")
    with open(pem, "w") as f:
        f.write(open(crt).read() + open(key).read())
    return pem


def write_key(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
    return path


CLIENT_PEM = None   # the clients' certificate (a CA file makes mongod require one)


def tls_kw(ca):
    return {"tls": True, "tlsCAFile": ca, "tlsCertificateKeyFile": CLIENT_PEM}


def wait_primary(members, ca, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        for m in members:
            if m.proc is None:
                continue
            try:
                with m.client(serverSelectionTimeoutMS=500, **tls_kw(ca)) as c:
                    if c.admin.command("hello").get("isWritablePrimary"):
                        return m
            except PyMongoError:
                pass
        time.sleep(0.1)
    raise AssertionError("no primary within %ss" % timeout)


def wait_equal(members, ca, n, timeout=30):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        counts, hashes = [], []
        for m in members:
            try:
                with m.client(username="admin", password="pw", authSource="admin", **tls_kw(ca)) as c:
                    counts.append(c.t.c.count_documents({}))
                    hashes.append(coll_hash(c, "t", "c"))
            except PyMongoError as e:
                counts.append(str(e))
        if counts == [n] * len(members) and len(set(hashes)) == 1:
            check(True, "every member holds %d documents" % n)
            return
        last = counts
        time.sleep(0.3)
    raise AssertionError("members differ: %r (want %d)" % (last, n))


def raft_preamble(raft_id, address):
    a = address.encode() + b"\0"
    a += b"\0" * ((8 - len(a) % 8) % 8)
    return struct.pack("<QQQ", 1, raft_id, len(a)) + a


def closed_soon(sock, timeout=8, silent=False):
    """The peer closes: recv gives b'' (or a reset) within timeout; with
    silent, at once (3 s: less than the keyFile handshake's 5 s timeout)
    and without a byte (without TLS the keyFile handshake would answer)."""
    sock.settimeout(3 if silent else timeout)
    got = 0
    try:
        while True:
            b = sock.recv(4096)
            if not b:
                return not silent or got == 0
            got += len(b)
    except socket.timeout:
        return False
    except (ConnectionResetError, ssl.SSLError, OSError):
        return not silent or got == 0


def raft_port_checks(m, ca, member_pem, rogue_pem):
    host, port = "127.0.0.1", m.port + RAFT_PORT_OFFSET
    me = "127.0.0.1:%d" % (free_ports(1)[0])
    # clear bytes after libraft's preamble: dropped under requireTLS
    s = socket.create_connection((host, port), timeout=5)
    s.sendall(raft_preamble(99, me) + b"TMGRAFT1" + b"\0" * 40)
    check(closed_soon(s, silent=True), "a plaintext Raft connector is dropped at once, answered nothing")
    s.close()
    # TLS with a certificate of the set's CA: the handshake completes
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(ca)
    ctx.check_hostname = True
    ctx.load_cert_chain(member_pem)
    s = socket.create_connection((host, port), timeout=5)
    s.sendall(raft_preamble(99, me))
    t = ctx.wrap_socket(s, server_hostname="127.0.0.1")
    check(t.version() in ("TLSv1.2", "TLSv1.3"), "the Raft port completes a TLS handshake: %s" % t.version())
    check(t.getpeercert() is not None, "and presents a certificate the set's CA verifies")
    t.close()
    # TLS with the rogue CA's certificate: refused (at the handshake, or at
    # the first read under TLS 1.3)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    ctx.load_cert_chain(rogue_pem)
    s = socket.create_connection((host, port), timeout=5)
    s.sendall(raft_preamble(99, me))
    try:
        t = ctx.wrap_socket(s, server_hostname="127.0.0.1")
        t.sendall(b"TMGRAFT1" + b"\0" * 40)
        check(closed_soon(t), "a Raft connector with another CA's certificate is dropped")
        t.close()
    except (ssl.SSLError, ConnectionResetError, OSError):
        check(True, "a Raft connector with another CA's certificate fails the handshake")
        s.close()


def startup_refusals(tmp, member_pem, ca):
    port = free_ports(1)[0]
    db = os.path.join(tmp, "refusals-db")
    os.makedirs(db, exist_ok=True)
    base = [TAMGAD, "--port", str(port), "--bind_ip", "127.0.0.1", "--dbpath", db, "--nounixsocket",
            "--replSet", "rs0"]
    tlsopts = ["--tlsCertificateKeyFile", member_pem, "--tlsCAFile", ca]
    cases = [
        (["--clusterAuthMode", "nope"], "Invalid clusterAuthMode 'nope'"),
        (["--clusterAuthMode", "sendKeyFile"], "need to enable TLS via the tlsMode flag"),
        (["--clusterAuthMode", "x509"], "need to enable TLS via the tlsMode flag"),
        (["--clusterAuthMode", "x509", "--tlsMode", "allowTLS"] + tlsopts,
         "cannot have x.509 cluster authentication in allowTLS mode"),
        (["--clusterAuthMode", "sendX509", "--tlsMode", "allowTLS"] + tlsopts,
         "cannot have x.509 cluster authentication in allowTLS mode"),
        (["--clusterAuthMode", "x509", "--tlsMode", "requireTLS", "--tlsCertificateKeyFile", member_pem],
         "--clusterAuthMode x509 needs --tlsCAFile"),
        # net.tls.clusterAuthX509 (mongod's refusals)
        (["--tlsMode", "requireTLS", "--tlsClusterAuthX509ExtensionValue", "x"] + tlsopts,
         "net.tls.clusterAuthX509.extensionValue requires a clusterAuthMode which allows for usage of X509"),
        (["--tlsMode", "requireTLS", "--tlsClusterAuthX509Attributes", "O=Tamga"] + tlsopts,
         "Cannot set clusterAuthX509.attributes when clusterAuthMode does not allow X.509"),
        (["--clusterAuthMode", "x509", "--tlsMode", "requireTLS", "--tlsClusterAuthX509ExtensionValue", "x",
          "--tlsClusterAuthX509Attributes", "O=Tamga"] + tlsopts,
         "net.tls.clusterAuthX509.attributes is not allowed when net.tls.clusterAuthX509.extensionValue is specified"),
        (["--clusterAuthMode", "x509", "--tlsMode", "requireTLS", "--tlsClusterAuthX509Attributes",
          "O=Tamga, title=member"] + tlsopts,
         "The server's outgoing certificate's DN does not contain the attributes specified in "
         "tlsClusterAuthX509Attributes"),
        (["--tlsMode", "requireTLS", "--tlsCertificateKeyFile", member_pem, "--tlsClusterFile",
          os.path.join(tmp, "missing.pem")], "cannot read certificate file"),
        (["--tlsMode", "requireTLS", "--tlsCertificateKeyFile", member_pem, "--tlsClusterCAFile", ca],
         "Specifying a tlsClusterCAFile requires a tlsCAFile also be specified"),
    ]
    # key files: mongod takes two keys at most; YAML it cannot read as
    # strings or sequences of strings
    keycases = [("- a2V5QUFBQUFB\n- a2V5QkJCQkJC\n- a2V5Q0NDQ0ND\n",
                 "Only two keys are supported in the security key file"),
                ("key: a2V5QUFBQUFB\n", "Only strings and sequences are supported for YAML key files"),
                ("- a2V5QUFBQUFB\n- abc\n", "Security key size is out range")]
    runs = [(extra, want, 2) for extra, want in cases]
    for i, (text, want) in enumerate(keycases):
        kf = write_key(os.path.join(tmp, "bad-%d.key" % i), text)
        runs.append((["--keyFile", kf], want + "\x00Unable to acquire security key[s]", 1))
    # every refusal comes before the storage is opened: all at once
    procs = [(extra, want, code, subprocess.Popen(base + extra, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
             for extra, want, code in runs]
    for extra, want, code, proc in procs:
        out = proc.communicate(timeout=60)[0].decode("utf-8", "replace")
        check(proc.returncode == code, "%s: exit %d (want %d)\n%s" % (extra, proc.returncode, code, out))
        for w in want.split("\x00"):
            check(w in out, "%s: %r not in\n%s" % (extra, w, out))


def main():
    tmp = tempfile.mkdtemp(prefix="tamga-tls-", dir=os.environ.get("TMPDIR", "/tmp"))
    try:
        t0 = time.time()
        ca = make_ca(tmp, "ca")
        member_pem = make_cert(tmp, "member", ca, "/O=Tamga/OU=rs0/CN=localhost")
        cluster_pem = make_cert(tmp, "cluster", ca, "/O=Tamga/OU=rs0/CN=cluster")
        other_ca = make_ca(tmp, "otherca")
        rogue_pem = make_cert(tmp, "rogue", other_ca, "/O=Tamga/OU=rs0/CN=localhost")
        wrongname_pem = make_cert(tmp, "wrongname", ca, "/O=Tamga/OU=rs0/CN=elsewhere.invalid",
                                  san="DNS:elsewhere.invalid")
        global CLIENT_PEM
        CLIENT_PEM = make_cert(tmp, "client", ca, "/O=Tamga/OU=clients/CN=admin")
        old, new = "b2xkLWtleS0xMjM0NTY3ODkw", "bmV3LWtleS1hYmNkZWZnaGlq"
        keys = [write_key(os.path.join(tmp, "k0"), "- %s\n- %s\n" % (old, new)),
                write_key(os.path.join(tmp, "k1"), "# rollover\n-   %s\n-\n  %s\n" % (new, old)),
                write_key(os.path.join(tmp, "k2"), "- %s\n" % new)]
        startup_refusals(tmp, member_pem, ca[1])
        run_set(tmp, ca[1], member_pem, cluster_pem, rogue_pem, other_ca[1], keys, wrongname_pem)
        run_mixed(ca[1], member_pem)
        print("raft_tls: %d checks passed in %.1f s" % (checks, time.time() - t0))
    finally:
        subprocess.call(["rm", "-rf", tmp])


def add_refused(uri, host, what, want):
    """replSetReconfig adding host fails (its certificate is refused), the
    set keeps its three members."""
    with MongoClient(uri, serverSelectionTimeoutMS=20000) as c:
        cfg = c.admin.command("replSetGetConfig")["config"]
        cfg["version"] += 1
        cfg["members"].append({"_id": 7, "host": host})
        err = None
        try:
            c.admin.command("replSetReconfig", cfg)
        except PyMongoError as e:
            err = str(e)
        check(err is not None and want in err, "rs.add of %s is refused (%r): %s" % (what, want, err))
        cfg = c.admin.command("replSetGetConfig")["config"]
        check(len(cfg["members"]) == 3, "the set still has three members")


def run_set(tmp, ca, member_pem, cluster_pem, rogue_pem, other_ca, keys, wrongname_pem):
    common = ["--tlsMode", "requireTLS", "--tlsCertificateKeyFile", member_pem, "--tlsCAFile", ca,
              "--tlsClusterFile", cluster_pem]
    cl = Cluster(TAMGAD, extra=common)
    for m, k in zip(cl.members, keys):
        m.extra = common + ["--keyFile", k, "--clusterAuthMode", "keyFile"]
    with cl:
        m0, m1, m2 = cl.members
        with m0.client(**tls_kw(ca)) as c:
            check(c.admin.command("replSetInitiate", cl.config(election_ms=2000))["ok"] == 1, "initiate over TLS")
        p = wait_primary(cl.members, ca)
        with p.client(**tls_kw(ca)) as c:
            c.admin.command("createUser", "admin", pwd="pw", roles=["root"])
        uri = ("mongodb://admin:pw@%s/?replicaSet=rs0&authSource=admin&tls=true&tlsCAFile=%s"
               "&tlsCertificateKeyFile=%s" % (",".join(m.host for m in cl.members), ca, CLIENT_PEM))
        with MongoClient(uri, serverSelectionTimeoutMS=20000) as c:
            coll = c.t.get_collection("c", write_concern=WriteConcern("majority", wtimeout=20000))
            for i in range(40):
                coll.insert_one({"_id": i, "v": "x" * 20})
            st = c.admin.command("replSetGetStatus")
            healthy = [r for r in st["members"] if r["health"] == 1]
            check(len(healthy) == 3, "three healthy members over TLS with rolled keys: %r" % st["members"])
        wait_equal(cl.members, ca, 40)

        raft_port_checks(m0, ca, member_pem, rogue_pem)

        # failover: kill -9 of the primary
        p = wait_primary(cl.members, ca)
        p.kill9()
        t = time.time()
        rest = [m for m in cl.members if m is not p]
        q = wait_primary(rest, ca, timeout=20)
        check(q is not p, "a new primary after kill -9 (%.1f s)" % (time.time() - t))
        with MongoClient(uri, serverSelectionTimeoutMS=20000, retryWrites=True) as c:
            coll = c.t.get_collection("c", write_concern=WriteConcern("majority", wtimeout=20000))
            for i in range(40, 60):
                coll.insert_one({"_id": i, "v": "y"})
        p.start()
        wait_equal(cl.members, ca, 60)

        # a member with a certificate of another CA stays out
        rogue_port = free_ports(1)[0]
        rogue = Member(TAMGAD, rogue_port, os.path.join(cl.dir, "rogue"), "rs0",
                       ["--tlsMode", "requireTLS", "--tlsCertificateKeyFile", rogue_pem, "--tlsCAFile", other_ca,
                        "--keyFile", keys[2]])
        rogue.start()
        try:
            add_refused(uri, rogue.host, "a member with another CA's certificate",
                        "SSL peer certificate validation failed")
            with MongoClient(uri, serverSelectionTimeoutMS=20000) as c:
                coll = c.t.get_collection("c", write_concern=WriteConcern("majority", wtimeout=20000))
                coll.insert_one({"_id": 60, "v": "z"})
            with rogue.client(tls=True, tlsCAFile=other_ca, tlsCertificateKeyFile=rogue_pem) as c:
                try:
                    c.admin.command("replSetGetStatus")
                    code = 0
                except PyMongoError as e:
                    code = getattr(e, "code", None)
                check(code == 94, "the rogue member never got the set's configuration (94): %r" % code)
        finally:
            rogue.stop()
        wait_equal(cl.members, ca, 61)

        # a member whose certificate (the set's CA) names another host:
        # hostname verification refuses it
        other = Member(TAMGAD, free_ports(1)[0], os.path.join(cl.dir, "wrongname"), "rs0",
                       ["--tlsMode", "requireTLS", "--tlsCertificateKeyFile", wrongname_pem, "--tlsCAFile", ca,
                        "--keyFile", keys[2]])
        other.start()
        try:
            add_refused(uri, other.host, "a member whose certificate names another host", "mismatch")
        finally:
            other.stop()

        # a member of the set restarted with another CA's certificate: the
        # others show it unhealthy with OpenSSL's reason, keep writing
        m2.stop()
        saved = m2.extra
        m2.extra = ["--tlsMode", "requireTLS", "--tlsCertificateKeyFile", rogue_pem, "--tlsCAFile", other_ca,
                    "--keyFile", keys[2]]
        m2.start()
        deadline, row = time.time() + 20, None
        while time.time() < deadline:
            p = wait_primary([m0, m1], ca)
            with p.client(username="admin", password="pw", authSource="admin", **tls_kw(ca)) as c:
                st = c.admin.command("replSetGetStatus")
            row = [r for r in st["members"] if r["name"] == m2.host][0]
            if row["health"] == 0 and "certificate" in row.get("lastHeartbeatMessage", ""):
                break
            time.sleep(0.5)
        check(row["health"] == 0 and "SSL peer certificate validation failed" in row.get("lastHeartbeatMessage", ""),
              "rs.status() shows the member's certificate refused: %r" % row)
        with MongoClient(uri, serverSelectionTimeoutMS=20000) as c:
            coll = c.t.get_collection("c", write_concern=WriteConcern("majority", wtimeout=20000))
            coll.insert_one({"_id": 61, "v": "w"})
        m2.stop()
        m2.extra = saved
        m2.start()
        wait_equal(cl.members, ca, 62)

        if MONGOSH:
            r = subprocess.run([MONGOSH, "--quiet", uri, "--eval",
                                "db.getSiblingDB('t').c.insertOne({_id: 100}, {writeConcern: {w: 'majority'}});"
                                "print(JSON.stringify({n: rs.status().members.length,"
                                " c: db.getSiblingDB('t').c.countDocuments({})}))"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
            out = r.stdout.decode("utf-8", "replace")
            check(r.returncode == 0 and '{"n":3,"c":63}' in out, "mongosh over TLS: %s" % out)
            wait_equal(cl.members, ca, 63)


def run_mixed(ca, member_pem):
    common = ["--tlsCertificateKeyFile", member_pem, "--tlsCAFile", ca,
              "--tlsAllowConnectionsWithoutCertificates"]
    cl = Cluster(TAMGAD, extra=common)
    for m, mode in zip(cl.members, ["preferTLS", "allowTLS", "allowTLS"]):
        m.extra = common + ["--tlsMode", mode]
    with cl:
        with cl.members[0].client() as c:
            check(c.admin.command("replSetInitiate", cl.config(election_ms=2000))["ok"] == 1, "mixed initiate")
        for rnd in range(2):
            p = cl.wait_primary(30)
            with p.client() as c:
                coll = c.t.get_collection("m", write_concern=WriteConcern(3, wtimeout=20000))
                for i in range(10):
                    coll.insert_one({"_id": rnd * 10 + i})
                check(coll.count_documents({}) == (rnd + 1) * 10, "w: 3 writes in a mixed allow/prefer set")
                if rnd == 0:
                    try:
                        c.admin.command("replSetStepDown", 10)
                    except PyMongoError:
                        pass   # the connection closes with the stepdown
                    deadline = time.time() + 20
                    while time.time() < deadline and cl.wait_primary(20) is p:
                        time.sleep(0.2)
        # both listeners take TLS too: the allowTLS member's Raft port
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(ca)
        ctx.load_cert_chain(CLIENT_PEM)
        s = socket.create_connection(("127.0.0.1", cl.members[1].port + RAFT_PORT_OFFSET), timeout=5)
        s.sendall(raft_preamble(99, "127.0.0.1:1"))
        t = ctx.wrap_socket(s, server_hostname="127.0.0.1")
        check(t.version() is not None, "an allowTLS member's Raft port completes a TLS handshake")
        t.close()


if __name__ == "__main__":
    main()
