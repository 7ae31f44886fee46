/*
 * test_auth_x509.c -- auth/auth_x509.h: subjects printed as mongod's
 * SSLX509Name (RFC 2253 order, multi-valued RDNs, mongod's escaping with
 * its quirks, BMPString converted, unknown OIDs dotted), the member rule
 * on names (O/OU/DC only, as sorted multisets, string types normalised,
 * empty never matches) and on text (mongod's split at ','), the cluster
 * authentication mode's transitions, the MONGODB-X509 decision's
 * answers that need no stored user, and net.tls.clusterAuthX509's rules
 * (RFC 4514 attribute lists, the mongoClusterMembership extension, the
 * startup refusals).
 */
#include "tt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "auth/auth_x509.h"

/* A name from "ATTR=value" items; an item starting with '+' joins the
 * previous RDN (multi-valued). */
static X509_NAME *
name_of(const char *const *items)
{
	X509_NAME *n = X509_NAME_new();

	for (; *items != NULL; items++) {
		const char *it = *items;
		int set = 0;
		char attr[64];
		const char *eq;

		if (*it == '+') {
			set = -1;
			it++;
		}
		eq = strchr(it, '=');
		TT_ASSERT(eq != NULL && (size_t)(eq - it) < sizeof(attr));
		memcpy(attr, it, (size_t)(eq - it));
		attr[eq - it] = '\0';
		TT_ASSERT(X509_NAME_add_entry_by_txt(n, attr, MBSTRING_UTF8, (const unsigned char *)eq + 1, -1, -1, set) ==
		    1);
	}
	return n;
}

static void
expect_string(const char *const *items, const char *want)
{
	X509_NAME *n = name_of(items);
	char *s = auth_x509_name_string(n);

	TT_EQ_STR(s, want);
	bson_free(s);
	X509_NAME_free(n);
}

static void
test_rfc2253_order_and_escaping(void)
{
	expect_string((const char *const[]){"C=US", "O=Tamga", "OU=rs0", "CN=node1", NULL}, "CN=node1,OU=rs0,O=Tamga,C=US");
	/* mongod's escapeRfc2253: , + " \ < > ; get a backslash */
	expect_string((const char *const[]){"O=a,b+c\"d\\e<f>g;h", NULL}, "O=a\\,b\\+c\\\"d\\\\e\\<f\\>g\\;h");
	/* a leading space or '#', a trailing space */
	expect_string((const char *const[]){"CN= lead", NULL}, "CN=\\ lead");
	expect_string((const char *const[]){"CN=#hash", NULL}, "CN=\\#hash");
	expect_string((const char *const[]){"CN=trail ", NULL}, "CN=trail\\ ");
	/* mongod's quirk: a trailing space is escaped only past two characters */
	expect_string((const char *const[]){"CN=a ", NULL}, "CN=a ");
	/* '#' and '=' inside a value are not escaped */
	expect_string((const char *const[]){"CN=a#b=c", NULL}, "CN=a#b=c");
	/* bytes >= 0x80 as \XX (UTF-8 of e-acute, upper-case hex) */
	expect_string((const char *const[]){"CN=caf\xc3\xa9", NULL}, "CN=caf\\C3\\A9");
	/* a single space: escaped as a leading one */
	expect_string((const char *const[]){"CN= ", NULL}, "CN=\\ ");
}

static void
test_multi_valued_rdn(void)
{
	/* OU and CN in one RDN: '+' between them, in mongod's (reversed) order */
	expect_string((const char *const[]){"O=Tamga", "OU=clients", "+CN=multi", NULL}, "CN=multi+OU=clients,O=Tamga");
	expect_string((const char *const[]){"C=US", "+ST=NY", "+L=NYC", "O=M", NULL}, "O=M,L=NYC+ST=NY+C=US");
}

static void
test_unknown_oid_and_bmp(void)
{
	X509_NAME *n = X509_NAME_new();
	ASN1_OBJECT *o = OBJ_txt2obj("1.2.3.4.5", 1);
	/* "Hi" as a BMPString (UTF-16BE) */
	static const unsigned char bmp[] = {0x00, 'H', 0x00, 'i'};
	char *s;

	TT_ASSERT(X509_NAME_add_entry_by_OBJ(n, o, V_ASN1_UTF8STRING, (const unsigned char *)"v", -1, -1, 0) == 1);
	TT_ASSERT(X509_NAME_add_entry_by_txt(n, "CN", V_ASN1_BMPSTRING, bmp, sizeof(bmp), -1, 0) == 1);
	s = auth_x509_name_string(n);
	TT_EQ_STR(s, "CN=Hi,1.2.3.4.5=v");
	bson_free(s);
	ASN1_OBJECT_free(o);
	X509_NAME_free(n);
	TT_ASSERT(auth_x509_name_string(NULL) == NULL);
}

static bool
same(const char *const *a, const char *const *b)
{
	X509_NAME *x = name_of(a), *y = name_of(b);
	bool r = auth_x509_names_same_cluster(x, y);

	X509_NAME_free(x);
	X509_NAME_free(y);
	return r;
}

static void
test_member_rule(void)
{
	/* only O, OU, DC count: CN, C, L differ freely */
	TT_ASSERT(same((const char *const[]){"C=US", "O=Tamga", "OU=rs0", "CN=a", NULL},
	    (const char *const[]){"L=x", "O=Tamga", "OU=rs0", "CN=b", NULL}));
	/* another organisation, another unit, one more unit, one fewer */
	TT_ASSERT(!same((const char *const[]){"O=Tamga", "OU=rs0", NULL}, (const char *const[]){"O=Other", "OU=rs0", NULL}));
	TT_ASSERT(!same((const char *const[]){"O=Tamga", "OU=rs0", NULL}, (const char *const[]){"O=Tamga", "OU=rs1", NULL}));
	TT_ASSERT(!same((const char *const[]){"O=Tamga", "OU=rs0", NULL},
	    (const char *const[]){"O=Tamga", "OU=rs0", "OU=x", NULL}));
	TT_ASSERT(!same((const char *const[]){"O=Tamga", "OU=rs0", "OU=rs0", NULL},
	    (const char *const[]){"O=Tamga", "OU=rs0", NULL}));
	/* order does not matter (sorted), nor RDN grouping */
	TT_ASSERT(same((const char *const[]){"O=Tamga", "OU=a", "OU=b", NULL},
	    (const char *const[]){"OU=b", "O=Tamga", "OU=a", NULL}));
	TT_ASSERT(same((const char *const[]){"O=Tamga", "+OU=a", "CN=x", NULL},
	    (const char *const[]){"OU=a", "O=Tamga", "CN=y", NULL}));
	/* DC counts */
	TT_ASSERT(same((const char *const[]){"DC=org", "DC=tamga", "CN=a", NULL},
	    (const char *const[]){"DC=org", "DC=tamga", "CN=b", NULL}));
	TT_ASSERT(!same((const char *const[]){"DC=org", "DC=tamga", NULL}, (const char *const[]){"DC=org", "DC=other", NULL}));
	/* values compare exactly: case matters */
	TT_ASSERT(!same((const char *const[]){"O=Tamga", NULL}, (const char *const[]){"O=tamga", NULL}));
	/* neither has O/OU/DC: never a member */
	TT_ASSERT(!same((const char *const[]){"CN=a", NULL}, (const char *const[]){"CN=a", NULL}));
	TT_ASSERT(!auth_x509_names_same_cluster(NULL, NULL));
	/* a PrintableString and a UTF8String of one text are equal */
	{
		X509_NAME *x = X509_NAME_new(), *y = X509_NAME_new();
		X509_NAME_add_entry_by_txt(x, "O", V_ASN1_PRINTABLESTRING, (const unsigned char *)"Tamga", -1, -1, 0);
		X509_NAME_add_entry_by_txt(y, "O", V_ASN1_UTF8STRING, (const unsigned char *)"Tamga", -1, -1, 0);
		TT_ASSERT(auth_x509_names_same_cluster(x, y));
		X509_NAME_free(x);
		X509_NAME_free(y);
	}
}

/* A self-signed certificate with the given subject written to path. */
static void
write_cert(const char *path, const char *const *items)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *n = name_of(items);
	FILE *f;

	TT_ASSERT(key != NULL && x != NULL);
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
	X509_gmtime_adj(X509_getm_notBefore(x), -60);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, key);
	X509_set_subject_name(x, n);
	X509_set_issuer_name(x, n);
	TT_ASSERT(X509_sign(x, key, EVP_sha256()) > 0);
	f = fopen(path, "w");
	TT_ASSERT(f != NULL);
	PEM_write_X509(f, x);
	PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
	fclose(f);
	X509_NAME_free(n);
	X509_free(x);
	EVP_PKEY_free(key);
}

static void
test_server_certificate_and_string_rule(void)
{
	char path[] = "/tmp/tamga-x509-XXXXXX";
	int fd = mkstemp(path);
	terr_t err = TERR_INIT;
	X509 *peer;
	X509_NAME *pn;

	TT_ASSERT(fd >= 0);
	close(fd);
	/* no server certificate: nothing is a member */
	TT_EQ_INT(auth_x509_set_server_certificate(NULL, &err), 0);
	TT_ASSERT(!auth_x509_subject_is_member("CN=a,OU=rs0,O=Tamga"));
	write_cert(path, (const char *const[]){"O=Tamga", "OU=rs0", "CN=server", NULL});
	TT_EQ_INT(auth_x509_set_server_certificate(path, &err), 0);
	TT_EQ_INT(auth_x509_set_cluster_certificate(path, &err), 0);
	TT_EQ_STR(auth_x509_cluster_subject(), "CN=server,OU=rs0,O=Tamga");
	/* mongod's string form: parseDN + normalizeStrings, DC/O/OU sorted */
	TT_ASSERT(auth_x509_subject_is_member("CN=client,OU=rs0,O=Tamga"));
	TT_ASSERT(auth_x509_subject_is_member(" O=Tamga, CN=x , OU=rs0"));
	TT_ASSERT(auth_x509_subject_is_member("OU=rs0,O=Tamga"));
	/* spaces before a name or a value are skipped; an unescaped space
	 * ending a value stays in it (the old split trimmed it) */
	TT_ASSERT(auth_x509_subject_is_member("CN=x,OU= rs0,O=Tamga"));
	TT_ASSERT(!auth_x509_subject_is_member("O=Tamga ,CN=x,OU=rs0"));
	TT_ASSERT(!auth_x509_subject_is_member("CN=client,OU=clients,O=Tamga"));
	TT_ASSERT(!auth_x509_subject_is_member("CN=client"));
	TT_ASSERT(!auth_x509_subject_is_member("CN=x,OU=rs0,O=Tamga,OU=extra"));
	/* a name as a dotted OID */
	TT_ASSERT(auth_x509_subject_is_member("CN=x,2.5.4.11=rs0,O=Tamga"));
	/* '+' multi-valued RDN: each entry counts */
	TT_ASSERT(auth_x509_subject_is_member("CN=x+OU=rs0,O=Tamga"));
	TT_ASSERT(auth_x509_subject_is_member("CN=x,OU=rs0+O=Tamga"));
	/* hex escapes unescape ("\\54amga" is "Tamga") */
	TT_ASSERT(auth_x509_subject_is_member("CN=x,OU=rs0,O=\\54amga"));
	/* an escaped comma stays in the value: O is "Tamga,Inc", not "Tamga"
	 * (the old split made "O=Tamga\\" and "Inc") */
	TT_ASSERT(!auth_x509_subject_is_member("CN=x,OU=rs0,O=Tamga\\,Inc"));
	TT_ASSERT(auth_x509_subject_is_member("CN=a\\,b,OU=rs0,O=Tamga"));
	/* the old split took "OU=rs0" out of a CN holding an escaped comma */
	TT_ASSERT(!auth_x509_subject_is_member("CN=x\\,OU=rs0,O=Tamga"));
	/* quoted values are not RFC 4514: unescaped '"' fails the parse, as
	 * mongod's, so no member (the split took OU=rs0 and O=Tamga) */
	TT_ASSERT(!auth_x509_subject_is_member("CN=\"x\",OU=rs0,O=Tamga"));
	/* a raw '#' DER value fails mongod's parse too; an escaped '#' is a
	 * plain character */
	TT_ASSERT(!auth_x509_subject_is_member("CN=#0403616263,OU=rs0,O=Tamga"));
	TT_ASSERT(auth_x509_subject_is_member("CN=\\#x,OU=rs0,O=Tamga"));
	TT_ASSERT(!auth_x509_subject_is_member("CN=x,OU=rs0,O=\\#Tamga"));
	/* unescaped trailing spaces, as mongod: trimmed by the parser's
	 * space skip before a name only; a value keeps them unless escaped
	 * spaces end it */
	TT_ASSERT(!auth_x509_subject_is_member("CN=x,OU=rs0,O=Tamga\\20"));
	/* values are case-significant (stringprep, no folding) */
	TT_ASSERT(!auth_x509_subject_is_member("CN=x,OU=RS0,O=Tamga"));
	/* unreadable text is no member */
	TT_ASSERT(!auth_x509_subject_is_member("not a name"));
	TT_ASSERT(!auth_x509_subject_is_member(""));
	/* the certificate form */
	peer = X509_new();
	pn = name_of((const char *const[]){"O=Tamga", "OU=rs0", "CN=peer", NULL});
	X509_set_subject_name(peer, pn);
	TT_ASSERT(auth_x509_cert_is_member(peer));
	X509_NAME_free(pn);
	pn = name_of((const char *const[]){"O=Other", "OU=rs0", "CN=peer", NULL});
	X509_set_subject_name(peer, pn);
	TT_ASSERT(!auth_x509_cert_is_member(peer));
	TT_ASSERT(!auth_x509_cert_is_member(NULL));
	X509_NAME_free(pn);
	X509_free(peer);
	/* a file without a certificate */
	TT_EQ_INT(auth_x509_set_server_certificate("/nonexistent/x.pem", &err), -1);
	TT_EQ_INT(err.code, 140);
	terr_clear(&err);
	auth_x509_set_cluster_certificate(NULL, &err);
	unlink(path);
}

static void
test_cluster_mode(void)
{
	terr_t err = TERR_INIT;
	auth_cluster_mode_t m;

	TT_EQ_INT(auth_cluster_mode_parse("sendX509", &m), 0);
	TT_EQ_INT(m, AUTH_CLUSTER_SEND_X509);
	TT_EQ_INT(auth_cluster_mode_parse("X509", &m), -1);
	TT_EQ_STR(auth_cluster_mode_name(AUTH_CLUSTER_UNDEFINED), "undefined");
	auth_cluster_mode_set(AUTH_CLUSTER_KEYFILE);
	TT_ASSERT(auth_cluster_allows_keyfile() && !auth_cluster_allows_x509() && !auth_cluster_sends_x509());
	/* two steps at once */
	TT_EQ_INT(auth_cluster_mode_transition("sendX509", true, &err), -1);
	TT_EQ_INT(err.code, 5579202);
	TT_EQ_STR(err.msg, "Illegal state transition for clusterAuthMode from 'keyFile' to 'sendX509'");
	terr_clear(&err);
	/* no TLS going out */
	TT_EQ_INT(auth_cluster_mode_transition("sendKeyFile", false, &err), -1);
	TT_EQ_INT(err.code, 2);
	TT_EQ_STR(err.msg, "Illegal state transition for clusterAuthMode, need to enable SSL for outgoing connections");
	terr_clear(&err);
	TT_EQ_INT(auth_cluster_mode_transition("bogus", true, &err), -1);
	TT_EQ_STR(err.msg, "Invalid clusterAuthMode 'bogus'");
	terr_clear(&err);
	/* the path up, the same mode again, and no way down */
	TT_EQ_INT(auth_cluster_mode_transition("sendKeyFile", true, &err), 0);
	TT_ASSERT(auth_cluster_allows_keyfile() && auth_cluster_allows_x509() && !auth_cluster_sends_x509());
	TT_EQ_INT(auth_cluster_mode_transition("sendKeyFile", true, &err), 0);
	TT_EQ_INT(auth_cluster_mode_transition("sendX509", true, &err), 0);
	TT_ASSERT(auth_cluster_allows_keyfile() && auth_cluster_sends_x509());
	TT_EQ_INT(auth_cluster_mode_transition("x509", true, &err), 0);
	TT_ASSERT(!auth_cluster_allows_keyfile() && auth_cluster_allows_x509());
	TT_EQ_INT(auth_cluster_mode_transition("sendX509", true, &err), -1);
	TT_EQ_INT(err.code, 5579202);
	terr_clear(&err);
	auth_cluster_mode_set(AUTH_CLUSTER_UNDEFINED);
	TT_EQ_INT(auth_cluster_mode_transition("x509", true, &err), 0);
	auth_cluster_mode_set(AUTH_CLUSTER_UNDEFINED);
}

static void
test_authenticate_decision(void)
{
	auth_conn_t conn;
	auth_x509_peer_t peer = {"CN=app,OU=clients,O=Tamga", false};
	auth_x509_peer_t member = {"CN=m,OU=rs0,O=Tamga", true};
	auth_x509_result_t r;
	terr_t err = TERR_INIT;
	bool hide;

	memset(&conn, 0, sizeof(conn));
	/* no certificate (or one that did not verify) */
	TT_EQ_INT(auth_x509_authenticate(&conn, NULL, NULL, "$external", &r, &hide, &err), -1);
	TT_EQ_INT(err.code, 18);
	TT_ASSERT(hide);
	TT_EQ_STR(err.msg, "No verified subject name available from client");
	terr_clear(&err);
	/* a user that is not the subject */
	TT_EQ_INT(auth_x509_authenticate(&conn, &peer, "CN=other", "$external", &r, &hide, &err), -1);
	TT_EQ_INT(err.code, 18);
	TT_ASSERT(hide);
	TT_EQ_STR(err.msg, "There is no x.509 client certificate matching the user.");
	terr_clear(&err);
	/* another database: 17, shown */
	TT_EQ_INT(auth_x509_authenticate(&conn, &peer, NULL, "admin", &r, &hide, &err), -1);
	TT_EQ_INT(err.code, 17);
	TT_ASSERT(!hide);
	terr_clear(&err);
	/* a member certificate while the mode does not accept one */
	auth_cluster_mode_set(AUTH_CLUSTER_KEYFILE);
	TT_EQ_INT(auth_x509_authenticate(&conn, &member, NULL, "$external", &r, &hide, &err), -1);
	TT_EQ_INT(err.code, 18);
	TT_ASSERT(hide);
	TT_ASSERT(strstr(err.msg, "can only be used for cluster authentication") != NULL);
	terr_clear(&err);
	/* and when it does: __system@local */
	auth_cluster_mode_set(AUTH_CLUSTER_SEND_KEYFILE);
	TT_EQ_INT(auth_x509_authenticate(&conn, &member, member.subject, "$external", &r, &hide, &err), 0);
	TT_EQ_STR(r.user, "__system");
	TT_EQ_STR(r.db, "local");
	TT_EQ_STR(r.principal, member.subject);
	TT_ASSERT(r.member);
	auth_x509_result_clear(&r);
	auth_cluster_mode_set(AUTH_CLUSTER_UNDEFINED);
}

/* A certificate holding name and, when ext is not NULL, the
 * mongoClusterMembership extension with ext's DER bytes. */
static X509 *
cert_with(const char *const *items, const unsigned char *ext, int ext_len)
{
	X509 *x = X509_new();
	X509_NAME *n = name_of(items);

	X509_set_subject_name(x, n);
	X509_NAME_free(n);
	if (ext != NULL) {
		ASN1_OBJECT *o = OBJ_txt2obj(AUTH_X509_CLUSTER_MEMBERSHIP_OID, 1);
		ASN1_OCTET_STRING *os = ASN1_OCTET_STRING_new();
		X509_EXTENSION *e;

		ASN1_OCTET_STRING_set(os, ext, ext_len);
		e = X509_EXTENSION_create_by_OBJ(NULL, o, 0, os);
		TT_ASSERT(e != NULL && X509_add_ext(x, e, -1) == 1);
		X509_EXTENSION_free(e);
		ASN1_OCTET_STRING_free(os);
		ASN1_OBJECT_free(o);
	}
	return x;
}

static void
test_parse_dn(void)
{
	auth_x509_dn_t dn;
	terr_t err = TERR_INIT;
	X509_NAME *n;

	/* mongod's form: spaces around items, short names, an OID, escapes */
	TT_EQ_INT(auth_x509_parse_dn("title=foo, C=US, ST=New York,L=New York City", &dn, &err), 0);
	TT_EQ_INT((int)dn.n, 4);
	n = name_of((const char *const[]){"C=US", "ST=New York", "L=New York City", "O=Tamga", "CN=x", "title=foo",
	    NULL});
	TT_ASSERT(auth_x509_dn_contains(n, &dn));
	X509_NAME_free(n);
	/* a value differing in one attribute, or missing one */
	n = name_of((const char *const[]){"C=US", "ST=New York", "L=New York City", "title=bar", NULL});
	TT_ASSERT(!auth_x509_dn_contains(n, &dn));
	X509_NAME_free(n);
	n = name_of((const char *const[]){"C=US", "ST=New York", "title=foo", NULL});
	TT_ASSERT(!auth_x509_dn_contains(n, &dn));
	X509_NAME_free(n);
	/* values are case-sensitive bytes here; a prefix is not the value */
	n = name_of((const char *const[]){"C=US", "ST=new york", "L=New York City", "title=foo", NULL});
	TT_ASSERT(!auth_x509_dn_contains(n, &dn));
	X509_NAME_free(n);
	auth_x509_dn_clear(&dn);

	/* escaped ',' and '+', a hex escape, a dotted OID, a multi-valued RDN,
	 * an escaped trailing space kept */
	TT_EQ_INT(auth_x509_parse_dn("O=Tamga\\, Inc.+OU=a\\+b, 2.5.4.12=caf\\C3\\A9, CN=x\\ ", &dn, &err), 0);
	TT_EQ_INT((int)dn.n, 4);
	n = name_of((const char *const[]){"O=Tamga, Inc.", "+OU=a+b", "title=caf\xc3\xa9", "CN=x ", NULL});
	TT_ASSERT(auth_x509_dn_contains(n, &dn));
	X509_NAME_free(n);
	n = name_of((const char *const[]){"O=Tamga, Inc.", "OU=a+b", "title=caf\xc3\xa9", "CN=x", NULL});
	TT_ASSERT(!auth_x509_dn_contains(n, &dn));
	X509_NAME_free(n);
	auth_x509_dn_clear(&dn);

	/* a repeated attribute: each value must be there */
	TT_EQ_INT(auth_x509_parse_dn("OU=a,OU=b", &dn, &err), 0);
	n = name_of((const char *const[]){"OU=b", "O=x", "OU=a", NULL});
	TT_ASSERT(auth_x509_dn_contains(n, &dn));
	X509_NAME_free(n);
	n = name_of((const char *const[]){"OU=a", "O=x", NULL});
	TT_ASSERT(!auth_x509_dn_contains(n, &dn));
	X509_NAME_free(n);
	auth_x509_dn_clear(&dn);

	/* unreadable: an unknown name, no '=', empty, a dangling escape */
	TT_EQ_INT(auth_x509_parse_dn("nosuchattr=1", &dn, &err), -1);
	TT_EQ_INT(err.code, 2);
	terr_clear(&err);
	TT_EQ_INT(auth_x509_parse_dn("O", &dn, &err), -1);
	terr_clear(&err);
	TT_EQ_INT(auth_x509_parse_dn("", &dn, &err), -1);
	terr_clear(&err);
	TT_EQ_INT(auth_x509_parse_dn("O=a\\", &dn, &err), -1);
	terr_clear(&err);
}

/* One attributes text against one name: 1 contained, 0 not, -1 refused
 * (err's code in *code). */
static int
dn_match(const char *text, const char *const *items, int *code)
{
	auth_x509_dn_t dn;
	terr_t err = TERR_INIT;
	X509_NAME *n;
	int r;

	*code = 0;
	if (auth_x509_parse_dn(text, &dn, &err) != 0) {
		*code = err.code;
		terr_clear(&err);
		return -1;
	}
	n = name_of(items);
	r = auth_x509_dn_contains(n, &dn) ? 1 : 0;
	X509_NAME_free(n);
	auth_x509_dn_clear(&dn);
	return r;
}

/* mongod's RFC4514Parser corners and its normalizeStrings: ICU's RFC 4518
 * LDAP profile, which maps (NBSP to a space, a zero-width space to
 * nothing) and applies NFKC, but neither folds case nor collapses or trims
 * spaces. */
static void
test_parse_dn_mongod(void)
{
	static const char *const ab[] = {"O=a", "OU=b", "CN=x", NULL};
	int code;

	/* a trailing ',' opens an empty RDN mongod takes; ", " or ",," do not */
	TT_EQ_INT(dn_match("O=a,", ab, &code), 1);
	TT_EQ_INT(dn_match("O=a, ", ab, &code), -1);
	TT_EQ_INT(code, 51036);
	TT_EQ_INT(dn_match("O=a,,", ab, &code), -1);
	TT_EQ_INT(code, 2);
	/* a name with no value, an empty value, spaces inside a name */
	TT_EQ_INT(dn_match("O=", ab, &code), -1);
	TT_EQ_INT(code, 51036);
	TT_EQ_INT(dn_match("O", ab, &code), -1);
	TT_EQ_INT(code, 51036);
	TT_EQ_INT(dn_match("O=,OU=b", ab, &code), 0);   /* parsed: an empty O the name lacks */
	TT_EQ_INT(dn_match("O U=b", ab, &code), 1);
	TT_EQ_INT(dn_match("   ", ab, &code), -1);
	TT_EQ_INT(code, 51036);
	/* characters mongod refuses */
	TT_EQ_INT(dn_match("O=#0403616263", ab, &code), -1);
	TT_EQ_INT(code, 2);
	TT_EQ_INT(dn_match("O=a;b", ab, &code), -1);
	TT_EQ_INT(dn_match("O=a<b", ab, &code), -1);
	TT_EQ_INT(dn_match("O=a\\q", ab, &code), -1);
	TT_EQ_INT(dn_match("O=a\\4z", ab, &code), -1);
	TT_EQ_INT(dn_match("O=a\\4", ab, &code), -1);
	TT_EQ_INT(dn_match("-O=a", ab, &code), -1);
	TT_EQ_INT(dn_match("O_U=a", ab, &code), -1);
	TT_EQ_INT(dn_match("2.5.4.10x=a", ab, &code), -1);
	TT_EQ_INT(dn_match("O=\xff", ab, &code), -1);
	/* what may be escaped: '=' and '#' inside, quotes and ';' escaped */
	TT_EQ_INT(dn_match("O=a\\=b\\#\\;\\\"", (const char *const[]){"O=a=b#;\"", NULL}, &code), 1);
	TT_EQ_INT(dn_match("O=a=b", (const char *const[]){"O=a=b", NULL}, &code), 1);

	/* spaces: leading ones skipped, unescaped trailing ones kept (mongod
	 * trims only after escaped ones), inner ones as they are */
	TT_EQ_INT(dn_match("O=   a,OU=b", ab, &code), 1);
	TT_EQ_INT(dn_match("O=a ,OU=b", ab, &code), 0);
	TT_EQ_INT(dn_match("O=a ,OU=b", (const char *const[]){"O=a ", "OU=b", NULL}, &code), 1);
	TT_EQ_INT(dn_match("O=a\\  ", (const char *const[]){"O=a ", NULL}, &code), 1);
	TT_EQ_INT(dn_match("O=a\\20\\  ", (const char *const[]){"O=a  ", NULL}, &code), 1);
	TT_EQ_INT(dn_match("O=Mongo DB", (const char *const[]){"O=Mongo  DB", NULL}, &code), 0);
	/* case is kept: mongod's profile is RFC 4518 LDAP, not LDAP_CI */
	TT_EQ_INT(dn_match("O=mongodb", (const char *const[]){"O=MongoDB", NULL}, &code), 0);
	TT_EQ_INT(dn_match("2.5.4.10=MongoDB", (const char *const[]){"O=MongoDB", NULL}, &code), 1);
	/* the profile's mapping and NFKC, on either side */
	TT_EQ_INT(dn_match("O=Mongo\\C2\\A0DB", (const char *const[]){"O=Mongo DB", NULL}, &code), 1);
	TT_EQ_INT(dn_match("O=Mongo DB", (const char *const[]){"O=Mongo\xc2\xa0" "DB", NULL}, &code), 1);
	TT_EQ_INT(dn_match("O=Mongo\xe2\x80\x8b" "DB", (const char *const[]){"O=MongoDB", NULL}, &code), 1);
	TT_EQ_INT(dn_match("O=Mongo", (const char *const[]){"O=\xef\xbc\xad" "ongo", NULL}, &code), 1);
	TT_EQ_INT(dn_match("O=caf\\C3\\A9", (const char *const[]){"O=cafe\xcc\x81", NULL}, &code), 1);

	/* the O/OU/DC rule between two certificates normalizes the same way */
	{
		X509_NAME *x = name_of((const char *const[]){"O=Mongo\xc2\xa0" "DB", "OU=k", "CN=a", NULL});
		X509_NAME *y = name_of((const char *const[]){"O=Mongo DB", "OU=k", "CN=b", NULL});
		X509_NAME *z = name_of((const char *const[]){"O=mongo DB", "OU=k", "CN=b", NULL});
		TT_ASSERT(auth_x509_names_same_cluster(x, y));
		TT_ASSERT(!auth_x509_names_same_cluster(x, z));
		X509_NAME_free(x);
		X509_NAME_free(y);
		X509_NAME_free(z);
	}
}

static void
test_extension_value(void)
{
	/* DER UTF8String "foo", "fo", "foo\0x"; an OCTET STRING "foo" */
	static const unsigned char foo[] = {0x0c, 3, 'f', 'o', 'o'};
	static const unsigned char fo[] = {0x0c, 2, 'f', 'o'};
	static const unsigned char nul[] = {0x0c, 5, 'f', 'o', 'o', 0, 'x'};
	static const unsigned char octets[] = {0x04, 3, 'f', 'o', 'o'};
	const char *const subj[] = {"O=Tamga", "OU=rs0", "CN=m", NULL};
	char *v;
	size_t n;
	X509 *x;

	x = cert_with(subj, foo, sizeof(foo));
	TT_EQ_INT(auth_x509_cluster_extension(x, &v, &n), 0);
	TT_EQ_STR(v, "foo");
	TT_EQ_INT((int)n, 3);
	bson_free(v);
	X509_free(x);
	x = cert_with(subj, NULL, 0);
	TT_EQ_INT(auth_x509_cluster_extension(x, &v, &n), 1);
	X509_free(x);
	x = cert_with(subj, octets, sizeof(octets));
	TT_EQ_INT(auth_x509_cluster_extension(x, &v, &n), -1);
	X509_free(x);
	(void)fo;
	(void)nul;
}

static void
test_member_rules(void)
{
	char srv[] = "/tmp/tamga-x509r-XXXXXX", clu[] = "/tmp/tamga-x509c-XXXXXX";
	int fd1 = mkstemp(srv), fd2 = mkstemp(clu);
	static const unsigned char foo[] = {0x0c, 3, 'f', 'o', 'o'};
	static const unsigned char fo[] = {0x0c, 2, 'f', 'o'};
	static const unsigned char nul[] = {0x0c, 5, 'f', 'o', 'o', 0, 'x'};
	const char *const same_org[] = {"O=Tamga", "OU=rs0", "CN=peer", NULL};
	terr_t err = TERR_INIT;
	X509 *x;

	TT_ASSERT(fd1 >= 0 && fd2 >= 0);
	close(fd1);
	close(fd2);
	write_cert(srv, (const char *const[]){"O=Tamga", "OU=rs0", "title=member", "CN=server", NULL});
	write_cert(clu, (const char *const[]){"O=Tamga", "OU=rs0", "title=member", "CN=cluster", NULL});
	TT_EQ_INT(auth_x509_set_server_certificate(srv, &err), 0);
	TT_EQ_INT(auth_x509_set_cluster_certificate(clu, &err), 0);
	TT_EQ_INT(auth_x509_member_rule(), AUTH_X509_RULE_O_OU_DC);

	/* both at once: mongod's refusal */
	TT_EQ_INT(auth_x509_set_member_rule("title=member", "foo", &err), -1);
	TT_EQ_INT(err.code, 2);
	TT_ASSERT(strstr(err.msg, "net.tls.clusterAuthX509.attributes is not allowed when "
	    "net.tls.clusterAuthX509.extensionValue is specified") != NULL);
	terr_clear(&err);
	TT_EQ_INT(auth_x509_member_rule(), AUTH_X509_RULE_O_OU_DC);

	/* the outgoing certificate must hold the attributes */
	TT_EQ_INT(auth_x509_set_member_rule("title=other", NULL, &err), -1);
	TT_ASSERT(strstr(err.msg, "The server's outgoing certificate's DN does not contain the attributes specified "
	    "in tlsClusterAuthX509Attributes") != NULL);
	terr_clear(&err);
	TT_EQ_INT(auth_x509_member_rule(), AUTH_X509_RULE_O_OU_DC);

	/* attributes: the O/OU/DC rule no longer applies; other attributes
	 * (O of another organisation) do not matter */
	TT_EQ_INT(auth_x509_set_member_rule("title=member, OU=rs0", NULL, &err), 0);
	TT_EQ_INT(auth_x509_member_rule(), AUTH_X509_RULE_ATTRIBUTES);
	x = cert_with(same_org, NULL, 0);
	TT_ASSERT(!auth_x509_cert_is_member(x));
	X509_free(x);
	x = cert_with((const char *const[]){"O=Other", "OU=rs0", "title=member", NULL}, NULL, 0);
	TT_ASSERT(auth_x509_cert_is_member(x));
	X509_free(x);
	x = cert_with((const char *const[]){"title=member", NULL}, NULL, 0);
	TT_ASSERT(!auth_x509_cert_is_member(x));
	X509_free(x);
	/* the text form (createUser on $external) */
	TT_ASSERT(auth_x509_subject_is_member("CN=u,title=member,OU=rs0,O=Else"));
	TT_ASSERT(!auth_x509_subject_is_member("CN=u,OU=rs0,O=Tamga"));
	TT_ASSERT(!auth_x509_subject_is_member("not a name"));

	/* extensionValue: only the extension counts */
	TT_EQ_INT(auth_x509_set_member_rule(NULL, "foo", &err), 0);
	TT_EQ_INT(auth_x509_member_rule(), AUTH_X509_RULE_EXTENSION);
	x = cert_with(same_org, NULL, 0);
	TT_ASSERT(!auth_x509_cert_is_member(x));
	X509_free(x);
	x = cert_with((const char *const[]){"O=Other", "CN=alt", NULL}, foo, sizeof(foo));
	TT_ASSERT(auth_x509_cert_is_member(x));
	X509_free(x);
	x = cert_with(same_org, fo, sizeof(fo));
	TT_ASSERT(!auth_x509_cert_is_member(x));
	X509_free(x);
	x = cert_with(same_org, nul, sizeof(nul));
	TT_ASSERT(!auth_x509_cert_is_member(x));
	X509_free(x);
	TT_ASSERT(!auth_x509_subject_is_member("CN=peer,OU=rs0,O=Tamga"));

	/* back to the default */
	TT_EQ_INT(auth_x509_set_member_rule(NULL, NULL, &err), 0);
	x = cert_with(same_org, NULL, 0);
	TT_ASSERT(auth_x509_cert_is_member(x));
	X509_free(x);
	auth_x509_set_server_certificate(NULL, &err);
	auth_x509_set_cluster_certificate(NULL, &err);
	unlink(srv);
	unlink(clu);
}

static int
set_override(const char *json, terr_t *err)
{
	bson_error_t be;
	bson_t *d = bson_new_from_json((const uint8_t *)json, -1, &be);
	int rc;

	TT_ASSERT(d != NULL);
	rc = auth_x509_set_member_override(d, err);
	bson_destroy(d);
	return rc;
}

static char *
override_json(void)
{
	bson_t out = BSON_INITIALIZER;
	char *j;

	auth_x509_member_override_append(&out, "v");
	j = bson_as_relaxed_extended_json(&out, NULL);
	bson_destroy(&out);
	return j;
}

/* setParameter tlsClusterAuthX509Override: a second rule during a
 * rollover, its refusals, and getParameter's value. */
static void
test_member_override(void)
{
	char srv[] = "/tmp/tamga-x509o-XXXXXX";
	int fd = mkstemp(srv);
	static const unsigned char foo[] = {0x0c, 3, 'f', 'o', 'o'};
	static const unsigned char bar[] = {0x0c, 3, 'b', 'a', 'r'};
	const char *const old_org[] = {"O=Tamga", "OU=rs0", "CN=old", NULL};
	const char *const new_dn[] = {"O=Else", "title=member", "CN=new", NULL};
	terr_t err = TERR_INIT;
	char *j;
	X509 *x;

	TT_ASSERT(fd >= 0);
	close(fd);
	write_cert(srv, (const char *const[]){"O=Else", "title=member", "CN=server", NULL});
	TT_EQ_INT(auth_x509_set_server_certificate(srv, &err), 0);
	TT_EQ_INT(auth_x509_set_cluster_certificate(srv, &err), 0);
	j = override_json();
	TT_EQ_STR(j, "{ \"v\" : {  } }");
	bson_free(j);

	/* mongod's refusals; nothing changes */
	TT_EQ_INT(set_override("{\"attributes\": \"O=a\", \"extensionValue\": \"foo\"}", &err), -1);
	TT_EQ_INT(err.code, 2);
	TT_EQ_STR(err.msg, "At most one of attributes or extensionValue can be specified for tlsClusterAuthX509Override");
	terr_clear(&err);
	TT_EQ_INT(set_override("{\"attribute\": \"O=a\"}", &err), -1);
	TT_EQ_INT(err.code, 40415);
	TT_EQ_STR(err.msg, "BSON field 'tlsClusterAuthX509Override.attribute' is an unknown field.");
	terr_clear(&err);
	TT_EQ_INT(set_override("{\"extensionValue\": 5}", &err), -1);
	TT_EQ_INT(err.code, 14);
	TT_EQ_STR(err.msg, "BSON field 'tlsClusterAuthX509Override.extensionValue' is the wrong type 'int', expected type 'string'");
	terr_clear(&err);
	TT_EQ_INT(set_override("{\"attributes\": \"#04\"}", &err), -1);
	TT_EQ_INT(err.code, 2);
	terr_clear(&err);
	j = override_json();
	TT_EQ_STR(j, "{ \"v\" : {  } }");
	bson_free(j);

	/* the new rule (attributes), the old certificates through the
	 * override's attributes: both are members, a third one is not */
	TT_EQ_INT(auth_x509_set_member_rule("title=member", NULL, &err), 0);
	x = cert_with(old_org, NULL, 0);
	TT_ASSERT(!auth_x509_cert_is_member(x));
	TT_EQ_INT(set_override("{\"attributes\": \"O=Tamga, OU=rs0\"}", &err), 0);
	TT_ASSERT(auth_x509_cert_is_member(x));
	X509_free(x);
	x = cert_with(new_dn, NULL, 0);
	TT_ASSERT(auth_x509_cert_is_member(x));
	X509_free(x);
	x = cert_with((const char *const[]){"O=Tamga", "OU=rs1", "CN=x", NULL}, NULL, 0);
	TT_ASSERT(!auth_x509_cert_is_member(x));
	X509_free(x);
	TT_ASSERT(auth_x509_subject_is_member("CN=u,OU=rs0,O=Tamga"));
	TT_ASSERT(!auth_x509_subject_is_member("CN=u,OU=rs1,O=Tamga"));
	j = override_json();
	TT_EQ_STR(j, "{ \"v\" : { \"attributes\" : \"O=Tamga, OU=rs0\" } }");
	bson_free(j);

	/* an extension value rule rolled to another: the old value through
	 * the override */
	TT_EQ_INT(auth_x509_set_member_rule(NULL, "bar", &err), 0);
	TT_EQ_INT(set_override("{\"extensionValue\": \"foo\"}", &err), 0);
	x = cert_with(old_org, foo, sizeof(foo));
	TT_ASSERT(auth_x509_cert_is_member(x));
	X509_free(x);
	x = cert_with(old_org, bar, sizeof(bar));
	TT_ASSERT(auth_x509_cert_is_member(x));
	X509_free(x);
	x = cert_with(old_org, NULL, 0);
	TT_ASSERT(!auth_x509_cert_is_member(x));
	X509_free(x);
	/* the old attributes no longer count: one rule at a time */
	TT_ASSERT(!auth_x509_subject_is_member("CN=u,OU=rs0,O=Tamga"));
	j = override_json();
	TT_EQ_STR(j, "{ \"v\" : { \"extensionValue\" : \"foo\" } }");
	bson_free(j);

	/* {} removes it */
	TT_EQ_INT(set_override("{}", &err), 0);
	x = cert_with(old_org, foo, sizeof(foo));
	TT_ASSERT(!auth_x509_cert_is_member(x));
	X509_free(x);
	TT_EQ_INT(auth_x509_set_member_rule(NULL, NULL, &err), 0);
	auth_x509_set_server_certificate(NULL, &err);
	auth_x509_set_cluster_certificate(NULL, &err);
	unlink(srv);
}

int
main(void)
{
	TT_RUN(test_rfc2253_order_and_escaping);
	TT_RUN(test_multi_valued_rdn);
	TT_RUN(test_unknown_oid_and_bmp);
	TT_RUN(test_member_rule);
	TT_RUN(test_server_certificate_and_string_rule);
	TT_RUN(test_cluster_mode);
	TT_RUN(test_authenticate_decision);
	TT_RUN(test_parse_dn);
	TT_RUN(test_parse_dn_mongod);
	TT_RUN(test_extension_value);
	TT_RUN(test_member_rules);
	TT_RUN(test_member_override);
	return tt_finish();
}
