"""raft_x509.py -- x.509 authentication (issue 24): members under
--clusterAuthMode x509 and clients with MONGODB-X509, on three tamgad
members on 127.0.0.1 under --tlsMode requireTLS, no key file anywhere.

- one throw-away CA (the openssl CLI, raft_tls.py's helpers): member
  certificates O=Tamga/OU=rs0 (server and cluster files), a certificate of
  another organisation (O=Other/OU=rs0) from the same CA, client
  certificates O=Tamga/OU=clients, one with a comma in its CN (RFC 2253
  escaping) and one with a multi-valued RDN;
- the set forms with x.509 member authentication only (every member's wire
  calls authenticate as __system with its cluster certificate; the Raft
  port takes member certificates only): initiate, majority writes, three
  healthy members, equal data;
- a member with the other organisation's certificate stays out: rs.add()
  is refused and the set keeps its three members and keeps writing;
- `$external` users named by their subject; PyMongo (MONGODB-X509, which
  authenticates speculatively in hello) and mongosh (--authenticationMechanism
  MONGODB-X509 --authenticationDatabase '$external') log in, write, read
  connectionStatus (the subject as the user), and currentOp;
- mongod's errors: a `user` that is not the certificate's subject -> 18,
  a certificate without a user -> 11 UserNotFound, another database ->
  17, createUser with a password on $external or with a member-like
  subject -> 2;
- setParameter clusterAuthMode: getParameter shows x509, a step down is
  5579202; the rolling upgrade sendKeyFile -> sendX509 -> x509 of a keyFile
  set by setParameter on every member, w: 3 writes and a stepdown at each
  step;
- a standalone under --keyFile (clusterAuthMode keyFile): a client with a
  member certificate is refused (18: enforceUserClusterSeparation), the
  reason in the log only (raft_tls.py checks the startup refusals of
  --clusterAuthMode and net.tls.clusterAuthX509.*);
- net.tls.clusterAuthX509.attributes: a set of two members of different
  organisations recognised by "OU=rs0, title=member"; a certificate
  without title=member (same O and OU) is no member (authenticate, the
  Raft port, rs.add() refused);
- net.tls.clusterAuthX509.extensionValue: the mongoClusterMembership
  extension makes a member whatever the subject; the server's own O/OU
  without it, or another value, do not; a member that is also a user is
  refused (18);
- setParameter tlsClusterAuthX509Override: the override's extension value
  makes a member beside the configured one, getParameter shows it, it is
  startup only, both fields at once refuse to start.

usage: raft_x509.py path/to/tamgad [path/to/mongosh]
"""
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import time

from pymongo import MongoClient, WriteConcern
from pymongo.errors import OperationFailure, PyMongoError

sys.path.insert(0, os.path.dirname(__file__))
from raft_cluster import Cluster, Member, coll_hash, free_ports  # noqa: E402
from raft_tls import closed_soon, make_ca, make_cert, raft_preamble, write_key  # noqa: E402

TAMGAD = sys.argv[1]
MONGOSH = sys.argv[2] if len(sys.argv) > 2 and os.path.exists(sys.argv[2]) else None
checks = 0
ca_pair = None   # the CA's (key, certificate) for make_cert

CLIENT_SUBJECT = "CN=app\\, one,OU=clients,O=Tamga"
# -subj "/O=Tamga/OU=clients+CN=multi": DER sorts the RDN's SET (CN's
# shorter encoding first) and mongod reads a name's entries backwards
MULTI_SUBJECT = "OU=clients+CN=multi,O=Tamga"


def check(cond, what):
    global checks
    if not cond:
        raise AssertionError(what)
    checks += 1


def x509_client(m_or_hosts, ca, pem, **kw):
    kw.setdefault("serverSelectionTimeoutMS", 20000)
    if isinstance(m_or_hosts, Member):
        return MongoClient(m_or_hosts.host, directConnection=True, tls=True, tlsCAFile=ca,
                           tlsCertificateKeyFile=pem, **kw)
    return MongoClient(m_or_hosts, tls=True, tlsCAFile=ca, tlsCertificateKeyFile=pem, **kw)


def wait_primary(members, ca, pem, timeout=40):
    deadline = time.time() + timeout
    while time.time() < deadline:
        for m in members:
            try:
                with x509_client(m, ca, pem, serverSelectionTimeoutMS=500) as c:
                    if c.admin.command("hello").get("isWritablePrimary"):
                        return m
            except PyMongoError:
                pass
        time.sleep(0.1)
    raise AssertionError("no primary within %ss" % timeout)


def command_error(fn):
    try:
        fn()
    except OperationFailure as e:
        return e.code, e.details.get("errmsg", "")
    return None, None


def run_set(tmp, ca, member_pem, cluster_pem, client_pem, multi_pem, other_pem):
    common = ["--tlsMode", "requireTLS", "--tlsCertificateKeyFile", member_pem, "--tlsCAFile", ca,
              "--tlsClusterFile", cluster_pem, "--clusterAuthMode", "x509"]
    cl = Cluster(TAMGAD, extra=common)
    with cl:
        m0 = cl.members[0]
        # the localhost exception over TLS (any certificate of the CA)
        with x509_client(m0, ca, client_pem) as c:
            check(c.admin.command("replSetInitiate", cl.config(election_ms=2000))["ok"] == 1, "initiate (x509)")
        p = wait_primary(cl.members, ca, client_pem)
        with x509_client(p, ca, client_pem) as c:
            c.admin.command("createUser", "admin", pwd="pw", roles=["root"])
        hosts = ",".join(m.host for m in cl.members)
        admin_uri = "mongodb://admin:pw@%s/?replicaSet=rs0&authSource=admin" % hosts
        with x509_client(admin_uri, ca, client_pem) as c:
            ext = c.get_database("$external")
            ext.command("createUser", CLIENT_SUBJECT, roles=[{"role": "readWrite", "db": "t"},
                                                              {"role": "clusterMonitor", "db": "admin"}])
            # mongod's createUser rules on $external
            code, msg = command_error(lambda: ext.command("createUser", "CN=x,OU=clients,O=Tamga", pwd="p",
                                                          roles=[]))
            check(code == 2 and "Cannot set the password for users defined on the '$external' database" in msg,
                  "createUser with a pwd on $external: %r %r" % (code, msg))
            code, msg = command_error(lambda: ext.command("createUser", "CN=intruder,OU=rs0,O=Tamga", roles=[]))
            check(code == 2 and "would be recognized as an internal cluster member" in msg,
                  "createUser with a member subject: %r %r" % (code, msg))
            info = ext.command("usersInfo", CLIENT_SUBJECT)["users"][0]
            check(info["user"] == CLIENT_SUBJECT and info["mechanisms"] == ["external"],
                  "usersInfo of the $external user: %r" % info)
            coll = c.t.get_collection("c", write_concern=WriteConcern("majority", wtimeout=20000))
            for i in range(30):
                coll.insert_one({"_id": i})
            st = c.admin.command("replSetGetStatus")
            healthy = [r for r in st["members"] if r["health"] == 1]
            check(len(healthy) == 3, "three healthy members with x.509 member authentication: %r" % st["members"])
            check(c.admin.command("getParameter", 1, clusterAuthMode=1)["clusterAuthMode"] == "x509",
                  "getParameter clusterAuthMode")
            code, msg = command_error(lambda: c.admin.command("setParameter", 1, clusterAuthMode="sendX509"))
            check(code == 5579202 and "from 'x509' to 'sendX509'" in msg, "clusterAuthMode down: %r %r" % (code, msg))
        deadline = time.time() + 30
        while True:
            hashes = []
            for m in cl.members:
                with x509_client(m, ca, client_pem, username="admin", password="pw", authSource="admin") as c:
                    hashes.append((c.t.c.count_documents({}), coll_hash(c, "t", "c")))
            if len(set(hashes)) == 1 and hashes[0][0] == 30:
                check(True, "every member holds the 30 documents")
                break
            check(time.time() < deadline, "members differ: %r" % hashes)
            time.sleep(0.3)

        # PyMongo with MONGODB-X509 (speculative authentication in hello)
        x509_uri = ("mongodb://%s/?replicaSet=rs0&authMechanism=MONGODB-X509&authSource=%%24external" % hosts)
        with x509_client(x509_uri, ca, client_pem) as c:
            coll = c.t.get_collection("c", write_concern=WriteConcern("majority", wtimeout=20000))
            coll.insert_one({"_id": "pymongo"})
            st = c.t.command("connectionStatus")["authInfo"]
            check(st["authenticatedUsers"] == [{"user": CLIENT_SUBJECT, "db": "$external"}],
                  "connectionStatus names the subject: %r" % st)
            ops = c.admin.command("currentOp", {"$ownOps": True})["inprog"]
            mine = [o for o in ops if o.get("command", {}).get("currentOp")]
            check(mine and mine[0].get("effectiveUsers") == [{"user": CLIENT_SUBJECT, "db": "$external"}],
                  "currentOp shows the subject: %r" % mine)
            code, _ = command_error(lambda: c.admin.command("createUser", "x", pwd="y", roles=[]))
            check(code == 13, "the x.509 user holds only its roles (13): %r" % code)
        p = wait_primary(cl.members, ca, client_pem)
        logged = open(p.log, "rb").read().decode("utf-8", "replace")
        check('"speculative":true,"principalName":"%s"' % CLIENT_SUBJECT.replace("\\", "\\\\") in logged,
              "the primary logged a speculative MONGODB-X509 login")

        # the authenticate command's answers
        with x509_client(p, ca, client_pem) as c:
            ext = c.get_database("$external")
            code, msg = command_error(lambda: ext.command("authenticate", 1, mechanism="MONGODB-X509",
                                                          user="CN=someone,OU=clients,O=Tamga"))
            check(code == 18 and msg == "Authentication failed.", "a user that is not the subject: %r %r" % (code, msg))
            code, msg = command_error(lambda: ext.command("authenticate", 1, mechanism="MONGODB-X509", bogus=1))
            check(code == 40415 and "authenticate.bogus" in msg, "authenticate is strict: %r %r" % (code, msg))
            code, msg = command_error(lambda: c.t.command("authenticate", 1, mechanism="MONGODB-X509"))
            check(code == 17 and "must always use the $external database" in msg, "another database: %r" % code)
            r = ext.command("authenticate", 1, mechanism="MONGODB-X509", user=CLIENT_SUBJECT)
            check(r["user"] == CLIENT_SUBJECT and r["dbname"] == "$external", "authenticate with the user: %r" % r)
            check(c.t.command("connectionStatus")["authInfo"]["authenticatedUsers"][0]["user"] == CLIENT_SUBJECT,
                  "logged in by the authenticate command")
        with x509_client(p, ca, multi_pem) as c:
            code, msg = command_error(lambda: c.get_database("$external").command("authenticate", 1,
                                                                                  mechanism="MONGODB-X509"))
            check(code == 11 and msg == 'Could not find user "%s" for db "$external"' % MULTI_SUBJECT,
                  "a certificate without a user (multi-valued RDN subject): %r %r" % (code, msg))
        with x509_client(admin_uri, ca, client_pem) as c:
            c.get_database("$external").command("createUser", MULTI_SUBJECT, roles=[{"role": "read", "db": "t"}])
        with x509_client(p, ca, multi_pem) as c:
            r = c.get_database("$external").command("authenticate", 1, mechanism="MONGODB-X509")
            check(r["user"] == MULTI_SUBJECT, "the multi-valued RDN's user logs in: %r" % r)

        if MONGOSH:
            r = subprocess.run([MONGOSH, "--quiet", "--tls", "--tlsCAFile", ca, "--tlsCertificateKeyFile", client_pem,
                                "--authenticationMechanism", "MONGODB-X509", "--authenticationDatabase", "$external",
                                "mongodb://%s/?replicaSet=rs0" % hosts, "--eval",
                                "db.getSiblingDB('t').c.insertOne({_id: 'mongosh'}, {writeConcern: {w: 'majority'}});"
                                "const s = db.runCommand({connectionStatus: 1}).authInfo.authenticatedUsers[0];"
                                "print(JSON.stringify({u: s.user, d: s.db,"
                                " c: db.getSiblingDB('t').c.countDocuments({})}))"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
            out = r.stdout.decode("utf-8", "replace")
            want = '{"u":"CN=app\\\\, one,OU=clients,O=Tamga","d":"$external","c":32}'
            check(r.returncode == 0 and want in out, "mongosh with MONGODB-X509: %s" % out)

        raft_port_checks(cl.members[1], ca, cluster_pem, other_pem)

        # a member with another organisation's certificate stays out
        other = Member(TAMGAD, free_ports(1)[0], os.path.join(cl.dir, "other"), "rs0",
                       ["--tlsMode", "requireTLS", "--tlsCertificateKeyFile", other_pem, "--tlsCAFile", ca,
                        "--clusterAuthMode", "x509"])
        other.start()
        try:
            with x509_client(admin_uri, ca, client_pem) as c:
                cfg = c.admin.command("replSetGetConfig")["config"]
                cfg["version"] += 1
                cfg["members"].append({"_id": 7, "host": other.host})
                code, msg = command_error(lambda: c.admin.command("replSetReconfig", cfg))
                check(code is not None and "Authentication failed" in msg,
                      "rs.add of another organisation's member is refused: %r %r" % (code, msg))
                check(len(c.admin.command("replSetGetConfig")["config"]["members"]) == 3, "still three members")
                coll = c.t.get_collection("c", write_concern=WriteConcern("majority", wtimeout=20000))
                coll.insert_one({"_id": "after"})
        finally:
            other.stop()


def whoami(m, ca, pem):
    """authenticate MONGODB-X509 with pem on m: ("__system"/subject, db)
    or the error code."""
    with x509_client(m, ca, pem) as c:
        code, msg = command_error(lambda: c.get_database("$external").command("authenticate", 1,
                                                                             mechanism="MONGODB-X509"))
        if code is not None:
            return code
        u = c.admin.command("connectionStatus")["authInfo"]["authenticatedUsers"][0]
        return (u["user"], u["db"])


def run_attributes_set(tmp, ca, client_pem):
    """net.tls.clusterAuthX509.attributes: members recognised by OU=rs0 and
    title=member whatever their organisation (the O/OU/DC rule is off: the
    two members' O differ); a member whose certificate lacks title=member
    (same O and OU as a member) stays out: authenticate makes it no
    __system, rs.add() is refused, its Raft connection is dropped."""
    attrs = "OU=rs0, title=member"
    pa = make_cert(tmp, "attr-a", ca_pair, "/O=Alpha/OU=rs0/title=member/CN=localhost")
    pb = make_cert(tmp, "attr-b", ca_pair, "/O=Beta/OU=rs0/title=member/CN=localhost")
    lacking = make_cert(tmp, "attr-none", ca_pair, "/O=Alpha/OU=rs0/CN=localhost")
    base = ["--tlsMode", "requireTLS", "--tlsCAFile", ca, "--clusterAuthMode", "x509",
            "--tlsClusterAuthX509Attributes", attrs]
    cl = Cluster(TAMGAD, n=2, extra=base)
    cl.members[0].extra = base + ["--tlsCertificateKeyFile", pa]
    cl.members[1].extra = base + ["--tlsCertificateKeyFile", pb]
    with cl:
        m0, m1 = cl.members
        with x509_client(m0, ca, client_pem) as c:
            check(c.admin.command("replSetInitiate", cl.config(election_ms=2000))["ok"] == 1,
                  "initiate (attributes)")
        p = wait_primary(cl.members, ca, client_pem)
        with x509_client(p, ca, client_pem) as c:
            c.admin.command("createUser", "admin", pwd="pw", roles=["root"])
        hosts = ",".join(m.host for m in cl.members)
        admin_uri = "mongodb://admin:pw@%s/?replicaSet=rs0&authSource=admin" % hosts
        with x509_client(admin_uri, ca, client_pem) as c:
            coll = c.t.get_collection("a", write_concern=WriteConcern(2, wtimeout=20000))
            for i in range(10):
                coll.insert_one({"_id": i})
            st = c.admin.command("replSetGetStatus")
            check(all(r["health"] == 1 for r in st["members"]) and len(st["members"]) == 2,
                  "two members of different organisations, one attribute rule: %r" % st["members"])
            # createUser on $external: a subject holding the attributes is a member's
            code, msg = command_error(lambda: c.get_database("$external").command(
                "createUser", "CN=x,title=member,OU=rs0,O=Gamma", roles=[]))
            check(code == 2 and "recognized as an internal cluster member" in msg,
                  "createUser with a subject holding the attributes: %r %r" % (code, msg))
            c.get_database("$external").command("createUser", "CN=localhost,OU=rs0,O=Alpha", roles=[])
        # MONGODB-X509: the member certificate of the other organisation is
        # __system; the one without title=member is only its user
        check(whoami(p, ca, pb if p is m0 else pa) == ("__system", "local"),
              "a certificate with the attributes authenticates as __system")
        check(whoami(p, ca, lacking) == ("CN=localhost,OU=rs0,O=Alpha", "$external"),
              "a certificate without title=member is no member: %r" % (whoami(p, ca, lacking),))
        raft_port_checks(p, ca, pb if p is m0 else pa, lacking)
        other = Member(TAMGAD, free_ports(1)[0], os.path.join(cl.dir, "lacking"), "rs0",
                       ["--tlsMode", "requireTLS", "--tlsCertificateKeyFile", lacking, "--tlsCAFile", ca,
                        "--clusterAuthMode", "x509"])
        other.start()
        try:
            with x509_client(admin_uri, ca, client_pem) as c:
                cfg = c.admin.command("replSetGetConfig")["config"]
                cfg["version"] += 1
                cfg["members"].append({"_id": 5, "host": other.host})
                code, msg = command_error(lambda: c.admin.command("replSetReconfig", cfg))
                # it takes the primary's certificate (its own rule is
                # O/OU/DC: equal), but the primary's Raft port drops it, so
                # Raft's change never completes: 74
                check(code == 74, "rs.add of a member without the attributes is refused: %r %r" % (code, msg))
                check(len(c.admin.command("replSetGetConfig")["config"]["members"]) == 2, "still two members")
                c.t.get_collection("a", write_concern=WriteConcern(2, wtimeout=20000)).insert_one({"_id": "after"})
        finally:
            other.stop()


def run_extension(tmp, ca, client_pem):
    """net.tls.clusterAuthX509.extensionValue (mongod's
    cluster_x509_extension test): only certificates whose
    mongoClusterMembership extension holds the value are members, whatever
    their subject; a certificate with the server's own O/OU but no
    extension, or another value, is not; a member certificate whose
    subject is also a $external user is refused (18,
    enforceUserClusterSeparation)."""
    foo = make_cert(tmp, "ext-foo", ca_pair, "/O=Tamga/OU=rs0/CN=localhost", membership="foo")
    foo_alt = make_cert(tmp, "ext-alt", ca_pair, "/O=Company/OU=Business/CN=Doer", membership="foo")
    bar = make_cert(tmp, "ext-bar", ca_pair, "/O=Tamga/OU=rs0/CN=bar", membership="bar")
    plain = make_cert(tmp, "ext-plain", ca_pair, "/O=Tamga/OU=rs0/CN=plain")
    cl = Cluster(TAMGAD, n=1, extra=["--tlsMode", "requireTLS", "--tlsCAFile", ca, "--tlsCertificateKeyFile", foo,
                                     "--clusterAuthMode", "x509", "--tlsClusterAuthX509ExtensionValue", "foo"])
    with cl:
        m = cl.members[0]
        with x509_client(m, ca, client_pem) as c:
            check(c.admin.command("replSetInitiate", cl.config(election_ms=2000))["ok"] == 1, "initiate (extension)")
        wait_primary(cl.members, ca, client_pem)
        with x509_client(m, ca, client_pem) as c:
            c.admin.command("createUser", "admin", pwd="pw", roles=["root"])
        check(whoami(m, ca, plain) == 11, "same O/OU without the extension: no member (11)")
        check(whoami(m, ca, bar) == 11, "the extension with another value: no member (11)")
        check(whoami(m, ca, foo_alt) == ("__system", "local"), "the extension's value makes a member")
        with x509_client(m, ca, client_pem, username="admin", password="pw", authSource="admin") as c:
            # a subject alone makes no member under the extension rule
            c.get_database("$external").command("createUser", "CN=Doer,OU=Business,O=Company", roles=[])
        check(whoami(m, ca, foo_alt) == 18, "a member certificate that is also a user is refused (18)")
        m.stop()
        logged = open(m.log, "rb").read().decode("utf-8", "replace")
        check("represents both a cluster member and an explicit user" in logged, "the reason is in the log")


def raft_port_checks(m, ca, cluster_pem, other_pem):
    """The Raft port under clusterAuthMode x509: a connector whose
    certificate the CA signs but whose organisation is another is dropped
    after the handshake; one with a member certificate is kept."""
    me = "127.0.0.1:%d" % free_ports(1)[0]
    for pem, member in ((other_pem, False), (cluster_pem, True)):
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.load_verify_locations(ca)
        ctx.load_cert_chain(pem)
        s = socket.create_connection(("127.0.0.1", m.port + 1000), timeout=5)
        s.sendall(raft_preamble(99, me))
        try:
            t = ctx.wrap_socket(s, server_hostname="127.0.0.1")
        except (ssl.SSLError, OSError):
            check(not member, "a member certificate completes the Raft handshake")
            continue
        if member:
            t.settimeout(2)
            try:
                kept = t.recv(1) != b""
            except socket.timeout:
                kept = True
            except (ssl.SSLError, OSError):
                kept = False
            check(kept, "a Raft connector with a member certificate is kept")
        else:
            check(closed_soon(t), "a Raft connector with another organisation's certificate is dropped")
        t.close()


def run_upgrade(tmp, ca, member_pem, cluster_pem, client_pem):
    """mongod's rolling upgrade to x.509 member authentication with
    setParameter: keyFile members under sendKeyFile, then sendX509 on
    every member (members now authenticate with their certificates), then
    x509 (the key no longer admits a member); majority writes at each
    step, the set stays whole; a step back is refused."""
    key = write_key(os.path.join(tmp, "upgrade.key"), "dXBncmFkZS1rZXktMDEyMzQ1Njc4OQ==\n")
    common = ["--tlsMode", "requireTLS", "--tlsCertificateKeyFile", member_pem, "--tlsCAFile", ca,
              "--tlsClusterFile", cluster_pem, "--keyFile", key, "--clusterAuthMode", "sendKeyFile"]
    cl = Cluster(TAMGAD, extra=common)
    with cl:
        with x509_client(cl.members[0], ca, client_pem) as c:
            check(c.admin.command("replSetInitiate", cl.config(election_ms=2000))["ok"] == 1, "initiate (sendKeyFile)")
        p = wait_primary(cl.members, ca, client_pem)
        with x509_client(p, ca, client_pem) as c:
            # on every member before the loop below logs in on each
            c.admin.command("createUser", "admin", pwd="pw", roles=["root"], writeConcern={"w": 3})
        hosts = ",".join(m.host for m in cl.members)
        uri = "mongodb://admin:pw@%s/?replicaSet=rs0&authSource=admin" % hosts
        n = 0
        for mode in ("sendX509", "x509"):
            for m in cl.members:
                with x509_client(m, ca, client_pem, username="admin", password="pw", authSource="admin") as c:
                    c.admin.command("setParameter", 1, clusterAuthMode=mode)
                    check(c.admin.command("getParameter", 1, clusterAuthMode=1)["clusterAuthMode"] == mode,
                          "%s now %s" % (m.host, mode))
            with x509_client(uri, ca, client_pem) as c:
                coll = c.t.get_collection("u", write_concern=WriteConcern(3, wtimeout=20000))
                for i in range(10):
                    coll.insert_one({"_id": n})
                    n += 1
                st = c.admin.command("replSetGetStatus")
                check(all(r["health"] == 1 for r in st["members"]), "whole set under %s: %r" % (mode, st["members"]))
            # a new connection from each member to the others: a stepdown
            # moves the leadership over the members' channels
            with x509_client(uri, ca, client_pem) as c:
                try:
                    c.admin.command("replSetStepDown", 10)
                except PyMongoError:
                    pass
            with x509_client(uri, ca, client_pem) as c:
                coll = c.t.get_collection("u", write_concern=WriteConcern(3, wtimeout=30000))
                coll.insert_one({"_id": n})
                n += 1
                check(coll.count_documents({}) == n, "w: 3 writes after a stepdown under %s" % mode)
        with x509_client(cl.members[0], ca, client_pem, username="admin", password="pw", authSource="admin") as c:
            code, msg = command_error(lambda: c.admin.command("setParameter", 1, clusterAuthMode="keyFile"))
            check(code == 5579202, "x509 -> keyFile refused: %r %r" % (code, msg))


def run_keyfile_standalone(tmp, ca, member_pem, intruder_pem):
    key = write_key(os.path.join(tmp, "key"), "a2V5LWZpbGUtZm9yLXg1MDktdGVzdHM=\n")
    port = free_ports(1)[0]
    m = Member(TAMGAD, port, os.path.join(tmp, "kf", "db"), "rsk",
               ["--tlsMode", "requireTLS", "--tlsCertificateKeyFile", member_pem, "--tlsCAFile", ca,
                "--keyFile", key])
    m.start()
    try:
        with x509_client(m, ca, intruder_pem) as c:
            code, msg = command_error(lambda: c.get_database("$external").command("authenticate", 1,
                                                                                  mechanism="MONGODB-X509"))
            check(code == 18 and msg == "Authentication failed.",
                  "a client with a member certificate under keyFile: %r %r" % (code, msg))
        m.stop()
        logged = open(m.log, "rb").read().decode("utf-8", "replace")
        check("can only be used for cluster authentication" in logged, "the reason is in the log only")
    finally:
        m.stop()


def run_override(tmp, ca, client_pem):
    """setParameter tlsClusterAuthX509Override (mongod's rollover from one
    member rule to another, cluster_x509_rotate's shape): under
    extensionValue "bar" with the override {extensionValue: "foo"}, members
    of either value are __system, a certificate of neither is not;
    getParameter shows the override; it is startup only (20 at runtime);
    both fields at once refuse to start (2)."""
    foo = make_cert(tmp, "ov-foo", ca_pair, "/O=Company/OU=Business/CN=Old", membership="foo")
    bar = make_cert(tmp, "ov-bar", ca_pair, "/O=Tamga/OU=rs0/CN=localhost", membership="bar")
    plain = make_cert(tmp, "ov-plain", ca_pair, "/O=Tamga/OU=rs0/CN=plain")
    tls = ["--tlsMode", "requireTLS", "--tlsCAFile", ca, "--tlsCertificateKeyFile", bar, "--clusterAuthMode", "x509",
           "--tlsClusterAuthX509ExtensionValue", "bar"]
    os.makedirs(os.path.join(tmp, "ov-bad"), exist_ok=True)
    bad = subprocess.run([TAMGAD, "--port", str(free_ports(1)[0]), "--bind_ip", "127.0.0.1", "--dbpath",
                          os.path.join(tmp, "ov-bad"), "--replSet", "rs0", "--nounixsocket"] + tls +
                         ["--setParameter", 'tlsClusterAuthX509Override={"attributes": "O=a", "extensionValue": "b"}'],
                         capture_output=True, text=True, timeout=60)
    check(bad.returncode == 2 and "At most one of attributes or extensionValue can be specified for "
          "tlsClusterAuthX509Override" in bad.stdout + bad.stderr,
          "both fields refuse to start: %r %s" % (bad.returncode, (bad.stdout + bad.stderr)[-300:]))
    cl = Cluster(TAMGAD, n=1, extra=tls + ["--setParameter", 'tlsClusterAuthX509Override={"extensionValue": "foo"}'])
    with cl:
        m = cl.members[0]
        with x509_client(m, ca, client_pem) as c:
            check(c.admin.command("replSetInitiate", cl.config(election_ms=2000))["ok"] == 1, "initiate (override)")
        wait_primary(cl.members, ca, client_pem)
        with x509_client(m, ca, client_pem) as c:
            c.admin.command("createUser", "admin", pwd="pw", roles=["root"])
        check(whoami(m, ca, bar) == ("__system", "local"), "the configured extension value makes a member")
        check(whoami(m, ca, foo) == ("__system", "local"), "the override's value makes a member too")
        check(whoami(m, ca, plain) == 11, "a certificate of neither value: no member (11)")
        with x509_client(m, ca, client_pem, username="admin", password="pw", authSource="admin") as c:
            got = c.admin.command("getParameter", 1, tlsClusterAuthX509Override=1)["tlsClusterAuthX509Override"]
            check(got == {"extensionValue": "foo"}, "getParameter: %r" % got)
            code, msg = command_error(lambda: c.admin.command("setParameter", 1,
                                                              tlsClusterAuthX509Override='{"extensionValue": "x"}'))
            check(code == 20, "setParameter at runtime: %r %s" % (code, msg))


def main():
    tmp = tempfile.mkdtemp(prefix="tamga-x509-", dir=os.environ.get("TMPDIR", "/tmp"))
    try:
        t0 = time.time()
        ca = make_ca(tmp, "ca")
        member_pem = make_cert(tmp, "member", ca, "/O=Tamga/OU=rs0/CN=localhost")
        cluster_pem = make_cert(tmp, "cluster", ca, "/O=Tamga/OU=rs0/CN=cluster")
        other_pem = make_cert(tmp, "other", ca, "/O=Other/OU=rs0/CN=localhost")
        intruder_pem = make_cert(tmp, "intruder", ca, "/O=Tamga/OU=rs0/CN=intruder")
        client_pem = make_cert(tmp, "client", ca, "/O=Tamga/OU=clients/CN=app, one")
        multi_pem = make_cert(tmp, "multi", ca, "/O=Tamga/OU=clients+CN=multi", multivalue=True)
        run_keyfile_standalone(tmp, ca[1], member_pem, intruder_pem)
        run_set(tmp, ca[1], member_pem, cluster_pem, client_pem, multi_pem, other_pem)
        run_upgrade(tmp, ca[1], member_pem, cluster_pem, client_pem)
        global ca_pair
        ca_pair = ca
        run_attributes_set(tmp, ca[1], client_pem)
        run_extension(tmp, ca[1], client_pem)
        run_override(tmp, ca[1], client_pem)
        print("raft_x509: %d checks passed in %.1f s" % (checks, time.time() - t0))
    finally:
        subprocess.call(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
