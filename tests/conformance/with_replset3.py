#!/usr/bin/python3
"""with_replset3.py -- run a command against a replica set of three tamgad
members on 127.0.0.1 (the conformance run's three-member set: Raft,
secondaries to read from, majority commit over the network).

    with_replset3.py path/to/tamgad [tamgad flags...] -- command [args...]

The members start with the flags given (each its own port, Raft port and
temporary --dbpath: tests/e2e/replset/raft_cluster.py), the set is
initiated with the three, and once one is PRIMARY and two are SECONDARY the
command runs with TAMGA_URI naming the three (replicaSet=rs0).  The members
are stopped whatever happens; the command's exit status is returned.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e", "replset"))
import raft_cluster  # noqa: E402


def main():
    args = sys.argv[1:]
    if "--" not in args or len(args) < 3:
        sys.exit("usage: with_replset3.py path/to/tamgad [flags...] -- command [args...]")
    cut = args.index("--")
    tamgad, flags, cmd = args[0], args[1:cut], args[cut + 1:]
    with raft_cluster.Cluster(tamgad, n=3, extra=flags) as cl:
        first = cl.members[0]
        with first.client() as c:
            c.admin.command("replSetInitiate", cl.config())
        cl.wait_primary(timeout=60)
        deadline = time.time() + 60
        while True:
            with cl.wait_primary().client() as c:
                states = [m["stateStr"] for m in c.admin.command("replSetGetStatus")["members"]]
            if sorted(states) == ["PRIMARY", "SECONDARY", "SECONDARY"]:
                break
            if time.time() > deadline:
                sys.exit("with_replset3: the set did not settle: %r" % states)
            time.sleep(0.2)
        env = dict(os.environ, TAMGA_URI=cl.uri())
        return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    sys.exit(main())
