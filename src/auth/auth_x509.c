/*
 * auth_x509.c -- x.509 subjects, the member-certificate rule, the cluster
 * authentication mode and the MONGODB-X509 decision (auth_x509.h), as
 * mongod 9.0's SSLX509Name, SSLConfiguration::isClusterMember,
 * ClusterAuthMode and _authenticateX509 do them.
 */
#include "auth/auth_x509.h"

#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/asn1.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/pem.h>

#include "auth/auth_private.h"
#include "bson/value.h"
#include "common/mem.h"

#define TERR_INVALID_SSL_CONFIG 140

/* ---- subjects -------------------------------------------------------------- */

/* One attribute's value as UTF-8 bytes (mongod's normalizeStrings: BMP and
 * Universal strings converted, the others kept as encoded).  *out is a new
 * buffer (OPENSSL_free when *openssl, bson_free otherwise). */
static int
entry_value(const X509_NAME_ENTRY *e, unsigned char **out, int *len, bool *openssl)
{
	const ASN1_STRING *s = X509_NAME_ENTRY_get_data(e);
	int t = ASN1_STRING_type(s);

	*openssl = false;
	if (t == V_ASN1_BMPSTRING || t == V_ASN1_UNIVERSALSTRING) {
		*len = ASN1_STRING_to_UTF8(out, s);
		*openssl = true;
		return *len < 0 ? -1 : 0;
	}
	*len = ASN1_STRING_length(s);
	*out = bson_malloc((size_t)*len + 1);
	memcpy(*out, ASN1_STRING_get0_data(s), (size_t)*len);
	(*out)[*len] = '\0';
	return 0;
}

static void
value_free(unsigned char *v, bool openssl)
{
	if (openssl)
		OPENSSL_free(v);
	else
		bson_free(v);
}

/* Whether an entry of ASN.1 type t is one of the DirectoryString types
 * mongod's normalizeStrings prepares (the others keep their type and bytes,
 * and never equal a value given as text). */
static bool
directory_string(int t)
{
	return t == V_ASN1_UTF8STRING || t == V_ASN1_PRINTABLESTRING || t == V_ASN1_T61STRING ||
	    t == V_ASN1_UNIVERSALSTRING || t == V_ASN1_BMPSTRING || t == V_ASN1_IA5STRING || t == V_ASN1_OCTET_STRING;
}

/* One certificate entry's value as mongod compares it: a DirectoryString
 * through RFC 4518 stringprep (auth_x509_dnprep; an empty one stays empty),
 * anything else as it is with *type its ASN.1 type (-1 for a prepared
 * one).  0 with *out (bson_free) and *len; -1 when the value cannot be read
 * or prepared (mongod's normalizeStrings fails: the name matches nothing). */
static int
entry_prepared(const X509_NAME_ENTRY *e, char **out, size_t *len, int *type)
{
	unsigned char *v;
	int n;
	bool ossl;
	terr_t err = TERR_INIT;
	int t = ASN1_STRING_type(X509_NAME_ENTRY_get_data(e)), r = 0;

	if (entry_value(e, &v, &n, &ossl) != 0) {
		ERR_clear_error();
		return -1;
	}
	*type = -1;
	if (!directory_string(t)) {
		*type = t;
		*out = bson_malloc((size_t)n + 1);
		memcpy(*out, v, (size_t)n + 1);
		*len = (size_t)n;
	} else if (auth_x509_dnprep(v, (size_t)n, out, len, &err) != 0) {
		terr_clear(&err);
		r = -1;
	}
	value_free(v, ossl);
	return r;
}

/* The attribute's name: OpenSSL's short name, else the dotted OID. */
static void
entry_name(const X509_NAME_ENTRY *e, char *buf, size_t len)
{
	const ASN1_OBJECT *o = X509_NAME_ENTRY_get_object(e);
	int nid = OBJ_obj2nid(o);
	const char *sn = nid != NID_undef ? OBJ_nid2sn(nid) : NULL;

	if (sn != NULL)
		bson_strncpy(buf, sn, len);
	else if (OBJ_obj2txt(buf, (int)len, o, 1) <= 0)
		bson_strncpy(buf, "?", len);
}

/* mongod's escapeRfc2253, appended to b. */
static void
escape_value(bson_string_t *b, const unsigned char *v, int n)
{
	static const char special[] = ",+\"\\<>;";
	size_t start = b->len;
	int i = 0;

	if (n == 0)
		return;
	if (v[0] == ' ') {
		bson_string_append(b, "\\ ");
		i = 1;
	} else if (v[0] == '#') {
		bson_string_append(b, "\\#");
		i = 1;
	}
	for (; i < n; i++) {
		if (v[i] >= 0x80) {
			bson_string_append_printf(b, "\\%02X", v[i]);
		} else {
			if (v[i] != '\0' && strchr(special, v[i]) != NULL)
				bson_string_append_c(b, '\\');
			bson_string_append_c(b, (char)v[i]);
		}
	}
	/* mongod escapes a trailing space only when its output is longer
	 * than two characters */
	if (b->len - start > 2 && b->str[b->len - 1] == ' ') {
		b->str[b->len - 1] = '\\';
		bson_string_append_c(b, ' ');
	}
}

char *
auth_x509_name_string(const X509_NAME *name)
{
	bson_string_t *b;
	int count, prev_set = -1;

	if (name == NULL)
		return NULL;
	b = bson_string_new(NULL);
	count = X509_NAME_entry_count(name);
	for (int i = count - 1; i >= 0; i--) {
		const X509_NAME_ENTRY *e = X509_NAME_get_entry(name, i);
		int set = X509_NAME_ENTRY_set(e);
		unsigned char *v;
		int n;
		bool ossl;
		char key[128];

		if (i != count - 1)
			bson_string_append_c(b, set == prev_set ? '+' : ',');
		prev_set = set;
		entry_name(e, key, sizeof(key));
		if (entry_value(e, &v, &n, &ossl) != 0) {
			bson_string_free(b, true);
			ERR_clear_error();
			return NULL;
		}
		bson_string_append(b, key);
		bson_string_append_c(b, '=');
		escape_value(b, v, n);
		value_free(v, ossl);
	}
	return bson_string_free(b, false);
}

/* O, OU and DC of a name as "<oid>\x01<value>" strings, sorted. */
typedef auth_x509_dn_t cluster_attrs_t;

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
attrs_clear(cluster_attrs_t *a)
{
	for (size_t i = 0; i < a->n; i++)
		bson_free(a->v[i]);
	bson_free(a->v);
	a->v = NULL;
	a->n = 0;
}

/* mongod's rule on two sorted attribute lists: equal and not empty.
 * Clears both. */
static bool
attrs_equal_clear(cluster_attrs_t *x, cluster_attrs_t *y)
{
	bool same = x->n > 0 && x->n == y->n;

	for (size_t i = 0; same && i < x->n; i++)
		same = strcmp(x->v[i], y->v[i]) == 0;
	attrs_clear(x);
	attrs_clear(y);
	return same;
}

static int
cluster_attrs(const X509_NAME *name, cluster_attrs_t *out)
{
	int count = X509_NAME_entry_count(name);

	out->v = bson_malloc0(sizeof(char *) * ((size_t)count + 1));
	out->n = 0;
	for (int i = 0; i < count; i++) {
		const X509_NAME_ENTRY *e = X509_NAME_get_entry(name, i);
		int nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(e));
		char *v;
		size_t n;
		int type;

		if (nid != NID_organizationName && nid != NID_organizationalUnitName && nid != NID_domainComponent)
			continue;
		/* compared as mongod's isClusterMember does, after normalizeStrings */
		if (entry_prepared(e, &v, &n, &type) != 0) {
			attrs_clear(out);
			return -1;
		}
		/* the value may hold NUL bytes: hex keeps the comparison exact */
		{
			bson_string_t *s = bson_string_new(NULL);
			bson_string_append_printf(s, "%d\x01%d\x01", nid, type);
			for (size_t k = 0; k < n; k++)
				bson_string_append_printf(s, "%02x", (unsigned char)v[k]);
			out->v[out->n++] = bson_string_free(s, false);
		}
		bson_free(v);
	}
	qsort(out->v, out->n, sizeof(char *), cmp_str);
	return 0;
}

bool
auth_x509_names_same_cluster(const X509_NAME *a, const X509_NAME *b)
{
	cluster_attrs_t x = {0}, y = {0};
	if (a == NULL || b == NULL || cluster_attrs(a, &x) != 0)
		return false;
	if (cluster_attrs(b, &y) != 0) {
		attrs_clear(&x);
		return false;
	}
	return attrs_equal_clear(&x, &y);
}

/* ---- process configuration ----------------------------------------------------- */

static _Atomic int g_mode = AUTH_CLUSTER_UNDEFINED;
static X509_NAME *g_server_name;
static char *g_server_subject;
static char *g_cluster_subject;
static X509_NAME *g_cluster_name;
/* net.tls.clusterAuthX509: at most one of the two (auth_x509_set_member_rule) */
static cluster_attrs_t g_rule_attrs;       /* the attributes, "<oid>\x01<hex>" sorted; n 0: not set */
static char *g_rule_ext;                   /* the extension value; NULL: not set */
static size_t g_rule_ext_len;
/* setParameter tlsClusterAuthX509Override: at most one of the two, a
 * certificate meeting it is a member too (auth_x509_set_member_override) */
static cluster_attrs_t g_over_attrs;       /* parsed attributes; n 0: not set */
static char *g_over_attrs_text;            /* as given (getParameter) */
static char *g_over_ext;                   /* the extension value; NULL: not set */
static size_t g_over_ext_len;

/* ---- net.tls.clusterAuthX509 ---------------------------------------------------- */

/* One entry as the rule compares it: the dotted OID, \x01, the type
 * (-1: prepared UTF-8), \x01, the value's bytes in hex (the value may hold
 * NUL bytes). */
static char *
entry_key(const ASN1_OBJECT *o, int type, const unsigned char *v, size_t n)
{
	char oid[128];
	bson_string_t *s = bson_string_new(NULL);

	if (OBJ_obj2txt(oid, (int)sizeof(oid), o, 1) <= 0)
		bson_strncpy(oid, "?", sizeof(oid));
	/* type -1: a prepared UTF-8 value (mongod's Entry compares the type too) */
	bson_string_append_printf(s, "%s\x01%d\x01", oid, type);
	for (size_t k = 0; k < n; k++)
		bson_string_append_printf(s, "%02x", v[k]);
	return bson_string_free(s, false);
}

static void
attrs_push(cluster_attrs_t *a, size_t *cap, char *v)
{
	if (a->n == *cap) {
		*cap = *cap != 0 ? *cap * 2 : 8;
		a->v = bson_realloc(a->v, sizeof(char *) * *cap);
	}
	a->v[a->n++] = v;
}

/* Every entry of a certificate's name, sorted. */
static int
name_entries(const X509_NAME *name, cluster_attrs_t *out)
{
	size_t cap = 0;
	int count = X509_NAME_entry_count(name);

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < count; i++) {
		const X509_NAME_ENTRY *e = X509_NAME_get_entry(name, i);
		char *v;
		size_t n;
		int type;

		if (entry_prepared(e, &v, &n, &type) != 0) {
			attrs_clear(out);
			return -1;
		}
		attrs_push(out, &cap, entry_key(X509_NAME_ENTRY_get_object(e), type, (const unsigned char *)v, n));
		bson_free(v);
	}
	if (out->n > 0)
		qsort(out->v, out->n, sizeof(char *), cmp_str);
	return 0;
}

static int
hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	    c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* RFC 4514's characters a value must escape (mongod's isEscaped), and those
 * it may (isMayBeEscaped: a space, '#', '='). */
static bool
dn_escaped(char c)
{
	return c != '\0' && strchr("\"+,;<>\\", c) != NULL;
}

static bool
dn_may_be_escaped(char c)
{
	return c == ' ' || c == '#' || c == '=';
}

/*
 * mongod's parseDN (its RFC4514Parser), then normalizeStrings on each value:
 * spaces before a name and a value skipped, a name of a letter then letters,
 * digits and '-' or of a digit then digits and '.' (spaces inside it
 * dropped), a value up to an unescaped ',' or '+' in which '"' ';' '<' '>'
 * must be escaped, '\' escapes one of those, a space, '#' or '=' or gives
 * two hex digits, a leading '#' (a raw DER value) refused; unescaped
 * trailing spaces are kept unless escaped spaces end the value (then the
 * value ends after them, as mongod trims).  A trailing ',' opens an empty
 * RDN mongod takes ("O=a," parses as "O=a"); a ', ' or a name with no
 * value overflows the string (51036).  The messages are mongod's.
 */
int
auth_x509_parse_dn(const char *text, auth_x509_dn_t *out, terr_t *err)
{
	cluster_attrs_t *a = out;
	size_t cap = 0, len = text != NULL ? strlen(text) : 0, i = 0;
	int code = TERR_BAD_VALUE;
	char why[200];

	memset(a, 0, sizeof(*a));
	why[0] = '\0';
	if (!bson_utf8_validate(text != NULL ? text : "", len, false)) {
		bson_strncpy(why, "DN strings must be valid UTF-8 strings", sizeof(why));
		goto bad;
	}
	while (i < len) {
		char key[128];
		size_t k = 0, keep;
		bool oid;
		int trailing = 0;        /* escaped spaces at the value's end */
		bson_string_t *val;
		ASN1_OBJECT *obj;
		char *prepped;
		size_t plen;
		terr_t pe = TERR_INIT;

		while (i < len && text[i] == ' ')
			i++;
		if (i >= len) {
			code = 51036;
			bson_strncpy(why, "Overflowed string while parsing DN string", sizeof(why));
			goto bad;
		}
		if (!isdigit((unsigned char)text[i]) && !isalpha((unsigned char)text[i])) {
			snprintf(why, sizeof(why), "DN attribute names must begin with either a digit or an alpha not '%c'",
			    text[i]);
			goto bad;
		}
		oid = isdigit((unsigned char)text[i]);
		for (; i < len && text[i] != '='; i++) {
			unsigned char c = (unsigned char)text[i];
			if (c == ' ')
				continue;
			if (oid ? !(isdigit(c) || c == '.') : !(isalnum(c) || c == '-')) {
				snprintf(why, sizeof(why), "DN attribute name contains an invalid character '%c'", c);
				goto bad;
			}
			if (k + 1 >= sizeof(key)) {
				bson_strncpy(why, "DN attribute name is too long", sizeof(why));
				goto bad;
			}
			key[k++] = (char)c;
		}
		key[k] = '\0';
		if (i < len)
			i++; /* the '=' */
		obj = OBJ_txt2obj(key, 0);
		if (obj == NULL) {
			ERR_clear_error();
			snprintf(why, sizeof(why), "DN contained an unknown OID %s", key);
			goto bad;
		}
		while (i < len && text[i] == ' ')
			i++;
		if (i >= len) {
			ASN1_OBJECT_free(obj);
			code = 51036;
			bson_strncpy(why, "Overflowed string while parsing DN string", sizeof(why));
			goto bad;
		}
		if (text[i] == '#') {
			ASN1_OBJECT_free(obj);
			bson_strncpy(why, "Raw DER sequences are not supported in DN strings", sizeof(why));
			goto bad;
		}
		val = bson_string_new(NULL);
		for (; i < len && text[i] != ',' && text[i] != '+'; i++) {
			char c = text[i];
			if (c == '\\') {
				char d = i + 1 < len ? text[i + 1] : '\0';
				if (dn_escaped(d)) {
					bson_string_append_c(val, d);
					trailing = 0;
					i++;
				} else if (hexval(d) >= 0) {
					char d2 = i + 2 < len ? text[i + 2] : '\0';
					char h;
					if (hexval(d2) < 0) {
						snprintf(why, sizeof(why), "Escaped hex value contains invalid character '%c'", d2);
						goto bad_value;
					}
					h = (char)(hexval(d) * 16 + hexval(d2));
					bson_string_append_c(val, h);
					trailing = h == ' ' ? trailing + 1 : 0;
					i += 2;
				} else if (dn_may_be_escaped(d)) {
					bson_string_append_c(val, d);
					trailing = d == ' ' ? trailing + 1 : 0;
					i++;
				} else {
					snprintf(why, sizeof(why), "Invalid escaped character '%c'", d);
					goto bad_value;
				}
				continue;
			}
			if (dn_escaped(c)) {
				snprintf(why, sizeof(why), "Found unescaped character that should be escaped: '%c'", c);
				goto bad_value;
			}
			if (c != ' ')
				trailing = 0;
			bson_string_append_c(val, c);
		}
		/* mongod trims only after escaped trailing spaces: to the last
		 * non-space byte and that many spaces */
		keep = val->len;
		if (trailing > 0) {
			size_t last = val->len;
			while (last > 0 && val->str[last - 1] == ' ')
				last--;
			keep = last + (size_t)trailing;
		}
		if (auth_x509_dnprep((const unsigned char *)val->str, keep, &prepped, &plen, &pe) != 0) {
			code = 50693;
			snprintf(why, sizeof(why), "Failed normalizing string: %s", pe.msg != NULL ? pe.msg : "");
			terr_clear(&pe);
			goto bad_value;
		}
		attrs_push(a, &cap, entry_key(obj, -1, (const unsigned char *)prepped, plen));
		bson_free(prepped);
		ASN1_OBJECT_free(obj);
		bson_string_free(val, true);
		if (i < len)
			i++; /* the ',' or '+' */
		continue;
bad_value:
		ASN1_OBJECT_free(obj);
		bson_string_free(val, true);
		goto bad;
	}
	if (a->n == 0) {
		bson_strncpy(why, "Cannot parse empty DN", sizeof(why));
		goto bad;
	}
	qsort(a->v, a->n, sizeof(char *), cmp_str);
	return 0;
bad:
	attrs_clear(a);
	return terr_set(err, code, "%s", why);
}

void
auth_x509_dn_clear(auth_x509_dn_t *dn)
{
	attrs_clear(dn);
}

/* Whether the sorted list have holds every entry of the sorted list want. */
static bool
attrs_contain(const cluster_attrs_t *have, const cluster_attrs_t *want)
{
	size_t j = 0;

	for (size_t i = 0; i < want->n; i++) {
		while (j < have->n && strcmp(have->v[j], want->v[i]) < 0)
			j++;
		if (j == have->n || strcmp(have->v[j], want->v[i]) != 0)
			return false;
	}
	return true;
}

/* Keep, in place, the entries of a sorted list whose OID is DC, O or OU
 * (mongod's canonicalizeClusterDN; the order stays sorted). */
static void
attrs_keep_cluster(cluster_attrs_t *a)
{
	static const char *const oids[] = {"0.9.2342.19200300.100.1.25\x01", "2.5.4.10\x01", "2.5.4.11\x01"};
	size_t k = 0;

	for (size_t i = 0; i < a->n; i++) {
		bool keep = false;
		for (size_t j = 0; j < sizeof(oids) / sizeof(oids[0]) && !keep; j++)
			keep = strncmp(a->v[i], oids[j], strlen(oids[j])) == 0;
		if (keep)
			a->v[k++] = a->v[i];
		else
			bson_free(a->v[i]);
	}
	a->n = k;
}

bool
auth_x509_dn_contains(const X509_NAME *name, const auth_x509_dn_t *want)
{
	cluster_attrs_t have;
	bool r;

	if (name == NULL || name_entries(name, &have) != 0)
		return false;
	r = attrs_contain(&have, want);
	attrs_clear(&have);
	return r;
}

int
auth_x509_cluster_extension(X509 *cert, char **out, size_t *len)
{
	ASN1_OBJECT *oid = OBJ_txt2obj(AUTH_X509_CLUSTER_MEMBERSHIP_OID, 1);
	int idx = oid != NULL ? X509_get_ext_by_OBJ(cert, oid, -1) : -1;
	X509_EXTENSION *ex;
	const ASN1_OCTET_STRING *os;
	const unsigned char *p;
	ASN1_UTF8STRING *u;

	ASN1_OBJECT_free(oid);
	*out = NULL;
	*len = 0;
	if (idx < 0)
		return 1;
	ex = X509_get_ext(cert, idx);
	os = ex != NULL ? X509_EXTENSION_get_data(ex) : NULL;
	if (os == NULL)
		return -1;
	p = ASN1_STRING_get0_data(os);
	/* mongod reads the value as one DER UTF8String */
	u = d2i_ASN1_UTF8STRING(NULL, &p, ASN1_STRING_length(os));
	if (u == NULL) {
		ERR_clear_error();
		return -1;
	}
	*len = (size_t)ASN1_STRING_length(u);
	*out = bson_malloc(*len + 1);
	memcpy(*out, ASN1_STRING_get0_data(u), *len);
	(*out)[*len] = '\0';
	ASN1_UTF8STRING_free(u);
	return 0;
}

int
auth_x509_set_member_rule(const char *attributes, const char *extension_value, terr_t *err)
{
	attrs_clear(&g_rule_attrs);
	bson_free(g_rule_ext);
	g_rule_ext = NULL;
	g_rule_ext_len = 0;
	if (attributes != NULL && extension_value != NULL)
		return terr_set(err, TERR_BAD_VALUE, "net.tls.clusterAuthX509.attributes is not allowed when "
		    "net.tls.clusterAuthX509.extensionValue is specified");
	if (extension_value != NULL) {
		g_rule_ext = bson_strdup(extension_value);
		g_rule_ext_len = strlen(extension_value);
		return 0;
	}
	if (attributes == NULL)
		return 0;
	if (auth_x509_parse_dn(attributes, &g_rule_attrs, err) != 0)
		return -1;
	/* mongod: the certificate this server sends to other members must
	 * meet the rule it asks of them */
	{
		const X509_NAME *own = g_cluster_name != NULL ? g_cluster_name : g_server_name;
		if (own != NULL && !auth_x509_dn_contains(own, &g_rule_attrs)) {
			attrs_clear(&g_rule_attrs);
			return terr_set(err, TERR_BAD_VALUE, "The server's outgoing certificate's DN does not contain the "
			    "attributes specified in tlsClusterAuthX509Attributes");
		}
	}
	return 0;
}

int
auth_x509_set_member_override(const bson_t *value, terr_t *err)
{
	bson_iter_t it;
	const char *attrs = NULL, *ext = NULL;
	uint32_t ext_len = 0;
	cluster_attrs_t parsed = {0};

	if (!bson_iter_init(&it, value))
		return terr_set(err, TERR_BAD_VALUE, "Value must be an object");
	/* mongod's ClusterAuthX509Override IDL struct, then its check */
	while (bson_iter_next(&it)) {
		const char *k = bson_iter_key(&it);
		if (strcmp(k, "attributes") != 0 && strcmp(k, "extensionValue") != 0)
			return terr_set(err, 40415, "BSON field 'tlsClusterAuthX509Override.%s' is an unknown field.", k);
		if (!BSON_ITER_HOLDS_UTF8(&it))
			return terr_set(err, TERR_TYPE_MISMATCH,
			    "BSON field 'tlsClusterAuthX509Override.%s' is the wrong type '%s', expected type 'string'", k,
			    bv_type_name(bson_iter_type(&it)));
		if (strcmp(k, "attributes") == 0)
			attrs = bson_iter_utf8(&it, NULL);
		else
			ext = bson_iter_utf8(&it, &ext_len);
	}
	if (attrs != NULL && ext != NULL)
		return terr_set(err, TERR_BAD_VALUE,
		    "At most one of attributes or extensionValue can be specified for tlsClusterAuthX509Override");
	/* mongod parses the attributes as it parses clusterAuthX509.attributes
	 * (its setClusterAuthX509Config, at startup) */
	if (attrs != NULL && auth_x509_parse_dn(attrs, &parsed, err) != 0)
		return -1;
	attrs_clear(&g_over_attrs);
	bson_free(g_over_attrs_text);
	bson_free(g_over_ext);
	g_over_attrs = parsed;
	g_over_attrs_text = attrs != NULL ? bson_strdup(attrs) : NULL;
	g_over_ext = ext != NULL ? bson_strndup(ext, ext_len) : NULL;
	g_over_ext_len = ext != NULL ? ext_len : 0;
	return 0;
}

void
auth_x509_member_override_append(bson_t *out, const char *key)
{
	bson_t d;

	BSON_APPEND_DOCUMENT_BEGIN(out, key, &d);
	if (g_over_attrs_text != NULL)
		BSON_APPEND_UTF8(&d, "attributes", g_over_attrs_text);
	else if (g_over_ext != NULL)
		bson_append_utf8(&d, "extensionValue", -1, g_over_ext, (int)g_over_ext_len);
	bson_append_document_end(out, &d);
}

auth_x509_member_rule_t
auth_x509_member_rule(void)
{
	return g_rule_ext != NULL ? AUTH_X509_RULE_EXTENSION :
	    g_rule_attrs.n > 0 ? AUTH_X509_RULE_ATTRIBUTES : AUTH_X509_RULE_O_OU_DC;
}

static bool subject_meets_rule(const char *subject);

bool
auth_x509_subject_is_member(const char *subject)
{
	if (subject == NULL)
		return false;
	if (subject_meets_rule(subject))
		return true;
	/* the override's attributes (its extension value needs a certificate) */
	if (g_over_attrs.n > 0) {
		cluster_attrs_t x = {0};
		terr_t err = TERR_INIT;
		bool r;
		if (auth_x509_parse_dn(subject, &x, &err) != 0) {
			terr_clear(&err);
			return false;
		}
		r = attrs_contain(&x, &g_over_attrs);
		attrs_clear(&x);
		return r;
	}
	return false;
}

static bool
subject_meets_rule(const char *subject)
{
	cluster_attrs_t x = {0}, y = {0};

	switch (auth_x509_member_rule()) {
	case AUTH_X509_RULE_EXTENSION:
		/* a subject alone never makes a member under the extension
		 * (mongod's createUser skips the check then) */
		return false;
	case AUTH_X509_RULE_ATTRIBUTES: {
		terr_t err = TERR_INIT;
		bool r;
		if (auth_x509_parse_dn(subject, &x, &err) != 0) {
			terr_clear(&err);
			return false;
		}
		r = attrs_contain(&x, &g_rule_attrs);
		attrs_clear(&x);
		return r;
	}
	case AUTH_X509_RULE_O_OU_DC:
		break;
	}
	/* mongod's isClusterMember(StringData): the text through parseDN and
	 * normalizeStrings (a text it cannot read is no member), its DC, O and
	 * OU entries against the server certificate's, both sorted */
	if (g_server_name == NULL)
		return false;
	{
		terr_t err = TERR_INIT;
		if (auth_x509_parse_dn(subject, &x, &err) != 0) {
			terr_clear(&err);
			return false;
		}
	}
	if (name_entries(g_server_name, &y) != 0) {
		attrs_clear(&x);
		return false;
	}
	attrs_keep_cluster(&x);
	attrs_keep_cluster(&y);
	if (x.n == 0) {
		attrs_clear(&x);
		attrs_clear(&y);
		return false;
	}
	return attrs_equal_clear(&x, &y);
}

static const char *const mode_names[] = {"undefined", "keyFile", "sendKeyFile", "sendX509", "x509"};

int
auth_cluster_mode_parse(const char *text, auth_cluster_mode_t *out)
{
	for (int i = AUTH_CLUSTER_KEYFILE; i <= AUTH_CLUSTER_X509; i++)
		if (text != NULL && strcmp(text, mode_names[i]) == 0) {
			*out = (auth_cluster_mode_t)i;
			return 0;
		}
	return -1;
}

const char *
auth_cluster_mode_name(auth_cluster_mode_t m)
{
	return m >= AUTH_CLUSTER_UNDEFINED && m <= AUTH_CLUSTER_X509 ? mode_names[m] : "undefined";
}

void
auth_cluster_mode_set(auth_cluster_mode_t m)
{
	atomic_store(&g_mode, (int)m);
}

auth_cluster_mode_t
auth_cluster_mode(void)
{
	return (auth_cluster_mode_t)atomic_load(&g_mode);
}

bool
auth_cluster_allows_x509(void)
{
	auth_cluster_mode_t m = auth_cluster_mode();
	return m == AUTH_CLUSTER_SEND_KEYFILE || m == AUTH_CLUSTER_SEND_X509 || m == AUTH_CLUSTER_X509;
}

bool
auth_cluster_allows_keyfile(void)
{
	auth_cluster_mode_t m = auth_cluster_mode();
	return m == AUTH_CLUSTER_KEYFILE || m == AUTH_CLUSTER_SEND_KEYFILE || m == AUTH_CLUSTER_SEND_X509;
}

bool
auth_cluster_sends_x509(void)
{
	auth_cluster_mode_t m = auth_cluster_mode();
	return m == AUTH_CLUSTER_SEND_X509 || m == AUTH_CLUSTER_X509;
}

int
auth_cluster_mode_transition(const char *text, bool tls_outgoing, terr_t *err)
{
	auth_cluster_mode_t m, cur;
	int old;

	if (auth_cluster_mode_parse(text, &m) != 0)
		return terr_set(err, TERR_BAD_VALUE, "Invalid clusterAuthMode '%s'", text ? text : "");
	if ((m == AUTH_CLUSTER_SEND_KEYFILE || m == AUTH_CLUSTER_SEND_X509 || m == AUTH_CLUSTER_X509) && !tls_outgoing)
		return terr_set(err, TERR_BAD_VALUE,
		    "Illegal state transition for clusterAuthMode, need to enable SSL for outgoing connections");
	old = atomic_load(&g_mode);
	do {
		cur = (auth_cluster_mode_t)old;
		if (!(cur == AUTH_CLUSTER_UNDEFINED || cur == m || (int)m == (int)cur + 1))
			return terr_set(err, 5579202, "Illegal state transition for clusterAuthMode from '%s' to '%s'",
			    auth_cluster_mode_name(cur), auth_cluster_mode_name(m));
	} while (!atomic_compare_exchange_weak(&g_mode, &old, (int)m));
	return 0;
}

/* The first certificate of a PEM file; NULL with err. */
static X509 *
read_cert(const char *path, terr_t *err)
{
	BIO *b = BIO_new_file(path, "r");
	X509 *x = b != NULL ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;

	BIO_free(b);
	if (x == NULL) {
		unsigned long e = ERR_get_error();
		char why[256];
		if (e != 0)
			ERR_error_string_n(e, why, sizeof(why));
		else
			bson_strncpy(why, "no certificate", sizeof(why));
		ERR_clear_error();
		terr_set(err, TERR_INVALID_SSL_CONFIG, "cannot read certificate file: %s %s", path, why);
	}
	return x;
}

/* The subject of the first certificate of pem_path as a name (when name
 * is not NULL) and as mongod prints it; -1 with err (140). */
static int
read_subject(const char *pem_path, X509_NAME **name, char **subject, terr_t *err)
{
	X509 *x = read_cert(pem_path, err);

	if (x == NULL)
		return -1;
	if (name != NULL)
		*name = X509_NAME_dup(X509_get_subject_name(x));
	*subject = auth_x509_name_string(X509_get_subject_name(x));
	X509_free(x);
	if ((name != NULL && *name == NULL) || *subject == NULL)
		return terr_set(err, TERR_INVALID_SSL_CONFIG, "cannot read the subject of %s", pem_path);
	return 0;
}

int
auth_x509_set_server_certificate(const char *pem_path, terr_t *err)
{
	X509_NAME_free(g_server_name);
	g_server_name = NULL;
	bson_free(g_server_subject);
	g_server_subject = NULL;
	return pem_path == NULL ? 0 : read_subject(pem_path, &g_server_name, &g_server_subject, err);
}

int
auth_x509_set_cluster_certificate(const char *pem_path, terr_t *err)
{
	bson_free(g_cluster_subject);
	g_cluster_subject = NULL;
	X509_NAME_free(g_cluster_name);
	g_cluster_name = NULL;
	return pem_path == NULL ? 0 : read_subject(pem_path, &g_cluster_name, &g_cluster_subject, err);
}

const char *
auth_x509_cluster_subject(void)
{
	return g_cluster_subject;
}

/* The override (tlsClusterAuthX509Override) alone. */
static bool
cert_meets_override(X509 *peer)
{
	if (g_over_ext != NULL) {
		char *v;
		size_t n;
		bool r = auth_x509_cluster_extension(peer, &v, &n) == 0 && n == g_over_ext_len &&
		    memcmp(v, g_over_ext, n) == 0;
		bson_free(v);
		return r;
	}
	return g_over_attrs.n > 0 && auth_x509_dn_contains(X509_get_subject_name(peer), &g_over_attrs);
}

static bool cert_meets_rule(X509 *peer);

bool
auth_x509_cert_is_member(X509 *peer)
{
	if (peer == NULL)
		return false;
	return cert_meets_rule(peer) || cert_meets_override(peer);
}

static bool
cert_meets_rule(X509 *peer)
{
	switch (auth_x509_member_rule()) {
	case AUTH_X509_RULE_EXTENSION: {
		char *v;
		size_t n;
		bool r = auth_x509_cluster_extension(peer, &v, &n) == 0 && n == g_rule_ext_len &&
		    memcmp(v, g_rule_ext, n) == 0;
		bson_free(v);
		return r;
	}
	case AUTH_X509_RULE_ATTRIBUTES:
		return auth_x509_dn_contains(X509_get_subject_name(peer), &g_rule_attrs);
	case AUTH_X509_RULE_O_OU_DC:
		break;
	}
	return g_server_name != NULL && auth_x509_names_same_cluster(X509_get_subject_name(peer), g_server_name);
}

/* ---- MONGODB-X509 authenticate ----------------------------------------------- */

/* Whether $external holds a user named subject: 1 yes, 0 no, -1 on a
 * storage error (err set). */
static int
external_user_exists(const auth_conn_t *conn, const char *subject, terr_t *err)
{
	storage_session_t *s = conn->session != NULL ? conn->session(conn->session_arg, err) : NULL;
	bson_t doc;
	int r;

	if (s == NULL)
		return -1;
	r = auth_store_get(conn->st, s, "system.users", "$external", subject, &doc, err);
	if (r < 0)
		return -1;
	if (r == 1)
		return 0;
	bson_destroy(&doc);
	return 1;
}

int
auth_x509_authenticate(const auth_conn_t *conn, const auth_x509_peer_t *peer, const char *user, const char *db,
                       auth_x509_result_t *out, bool *hide, terr_t *err)
{
	memset(out, 0, sizeof(*out));
	*hide = true;
	if (peer == NULL || peer->subject == NULL || peer->subject[0] == '\0')
		return terr_set(err, TERR_AUTHENTICATION_FAILED, "No verified subject name available from client");
	if (user != NULL && strcmp(user, peer->subject) != 0)
		return terr_set(err, TERR_AUTHENTICATION_FAILED, "There is no x.509 client certificate matching the user.");
	*hide = false;
	if (strcmp(db, "$external") != 0)
		return terr_set(err, TERR_PROTOCOL_ERROR, "X.509 authentication must always use the $external database.");
	if (peer->member) {
		if (!auth_cluster_allows_x509()) {
			/* enforceUserClusterSeparation (on by default) */
			*hide = true;
			return terr_set(err, TERR_AUTHENTICATION_FAILED,
			    "The provided certificate can only be used for cluster authentication, not client "
			    "authentication. The current configuration does not allow x.509 cluster authentication, "
			    "check the --clusterAuthMode flag");
		}
		if (auth_x509_member_rule() == AUTH_X509_RULE_EXTENSION) {
			/* mongod (enforceUserClusterSeparation, the extension rule):
			 * a member certificate whose subject is also a user is
			 * refused */
			int r = external_user_exists(conn, peer->subject, err);

			if (r < 0)
				return -1;
			if (r == 1) {
				*hide = true;
				return terr_set(err, TERR_AUTHENTICATION_FAILED,
				    "The provided certificate represents both a cluster member and an explicit user which "
				    "exists in the authzn database. Prohibiting authentication due to "
				    "enforceUserClusterSeparation setting.");
			}
		}
		out->user = bson_strdup("__system");
		out->db = bson_strdup("local");
		out->member = true;
	} else {
		int r = external_user_exists(conn, peer->subject, err);

		if (r < 0)
			return -1;
		if (r == 0)
			return terr_set(err, TERR_USER_NOT_FOUND, "Could not find user \"%s\" for db \"$external\"",
			    peer->subject);
		out->user = bson_strdup(peer->subject);
		out->db = bson_strdup("$external");
	}
	out->principal = bson_strdup(peer->subject);
	return 0;
}

void
auth_x509_result_clear(auth_x509_result_t *r)
{
	bson_free(r->user);
	bson_free(r->db);
	bson_free(r->principal);
	memset(r, 0, sizeof(*r));
}
