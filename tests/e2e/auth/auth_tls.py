"""PyMongo against tamgad with TLS (run by tls.sh for each --tlsMode):
tls=true with the test CA works (with and without a client certificate);
a plain connection is refused under requireTLS and served under
allowTLS/preferTLS; a client that does not trust the server's CA fails.

Environment: TAMGA_PORT (with_tamgad.sh), TLS_MODE, TLS_CA_FILE,
TLS_CLIENT_PEM.  Prints "N passed, N failed".
"""
import os
import sys
import unittest

import pymongo
from pymongo.errors import ServerSelectionTimeoutError, AutoReconnect

PORT = os.environ.get("TAMGA_PORT", "27017")
MODE = os.environ.get("TLS_MODE", "requireTLS")
CA = os.environ["TLS_CA_FILE"]
CLIENT_PEM = os.environ.get("TLS_CLIENT_PEM")


def connect(**kw):
    return pymongo.MongoClient("mongodb://localhost:" + PORT, serverSelectionTimeoutMS=3000, **kw)


class TamgaTLS(unittest.TestCase):
    def test_tls_with_ca(self):
        c = connect(tls=True, tlsCAFile=CA)
        self.assertEqual(c.admin.command("ping")["ok"], 1.0)
        c.test_tls.c.insert_one({"over": "tls", "pad": "x" * 100000})
        self.assertEqual(len(c.test_tls.c.find_one({"over": "tls"})["pad"]), 100000)
        c.close()

    def test_tls_with_client_certificate(self):
        if not CLIENT_PEM:
            self.skipTest("no client certificate")
        c = connect(tls=True, tlsCAFile=CA, tlsCertificateKeyFile=CLIENT_PEM)
        self.assertEqual(c.admin.command("ping")["ok"], 1.0)
        c.close()

    def test_untrusted_server_refused_by_client(self):
        c = connect(tls=True)
        with self.assertRaises((ServerSelectionTimeoutError, AutoReconnect)):
            c.admin.command("ping")
        c.close()

    def test_plain(self):
        c = connect()
        if MODE == "requireTLS":
            with self.assertRaises((ServerSelectionTimeoutError, AutoReconnect)):
                c.admin.command("ping")
        else:
            self.assertEqual(c.admin.command("ping")["ok"], 1.0)
        c.close()


if __name__ == "__main__":
    suite = unittest.TestLoader().loadTestsFromTestCase(TamgaTLS)
    res = unittest.TextTestRunner(verbosity=2).run(suite)
    failed = len(res.failures) + len(res.errors)
    print("%d passed, %d failed" % (res.testsRun - failed, failed))
    sys.exit(1 if failed else 0)
