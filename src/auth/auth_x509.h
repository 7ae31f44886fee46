/*
 * auth_x509.h -- x.509 authentication as mongod 9.0 does it: certificate
 * subjects as mongod prints them (its RFC 2253 form, the user names of
 * `$external`), the member-certificate rule (a peer whose O, OU and DC
 * attributes equal those of this server's own certificate is a cluster
 * member), the cluster authentication mode (`--clusterAuthMode` and its
 * upgrade path keyFile -> sendKeyFile -> sendX509 -> x509), and the
 * decision of MONGODB-X509 `authenticate` (the client's verified
 * certificate, the user named, `$external`, a member certificate ->
 * `__system@local`).
 *
 * Process-wide state (the mode, the server's and the cluster file's
 * subjects) is set by tamgad at startup before any connection; the mode
 * may move up later through setParameter (an atomic).  Readers take no
 * lock.  An embedded engine sets nothing: no TLS peer, so MONGODB-X509
 * answers mongod's "No verified subject name available from client".
 *
 * Not here: the TLS contexts (server/tls.c, repl/member_tls.c), the
 * command's reply and logging (commands/cmd_auth.c), the Raft channel's
 * check (repl/member_tls.c calls auth_x509_cert_is_member).
 */
#ifndef TAMGA_AUTH_X509_H
#define TAMGA_AUTH_X509_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/x509.h>

#include "auth/auth.h"
#include "common/error.h"

/* ---- subjects -------------------------------------------------------------- */

/*
 * The subject of a certificate as mongod's SSLX509Name::toString prints it:
 * RDNs from the last to the first (RFC 2253 order), the attributes of a
 * multi-valued RDN joined by '+' in their encoded order, each as
 * "<short name>=<value>" (the dotted OID when OpenSSL has no short name);
 * values escaped as mongod's escapeRfc2253: a leading ' ' or '#', a
 * trailing ' ', and , + " \ < > ; get a backslash, every byte >= 0x80 is
 * "\XX" (upper-case hex).  BMPString/UniversalString values are first
 * converted to UTF-8 (mongod's normalizeStrings).  Returns a new string
 * (bson_free) or NULL when name is NULL or a value cannot be converted.
 */
char *auth_x509_name_string(const X509_NAME *name);

/*
 * mongod's member rule on two subjects: the O, OU and DC attributes of
 * every RDN of each, as (attribute, value) pairs sorted, are equal and
 * there is at least one.  Values compare byte for byte after the UTF-8
 * conversion above (so a PrintableString and a UTF8String of the same
 * text are equal).
 */
bool auth_x509_names_same_cluster(const X509_NAME *a, const X509_NAME *b);

/*
 * The same rule on a subject given as text (mongod's string form of the
 * check, used by createUser on `$external`): the text parsed as mongod's
 * parseDN then normalizeStrings do (auth_x509_parse_dn: escaped commas,
 * quoted and hex-escaped values, '+' multi-valued RDNs; a text it cannot
 * parse, a raw '#' DER value among them, is no member), its DC, O and OU
 * entries sorted and compared with the server certificate's (type and
 * prepared value each).  False when no server certificate is configured
 * or the text has none of the three.
 */
bool auth_x509_subject_is_member(const char *subject);
/* (Under clusterAuthX509.attributes the subject text is parsed as RFC 4514
 * and must hold every attribute; under extensionValue it is always false:
 * a subject alone makes no member, as mongod's createUser check.) */

/* ---- process configuration --------------------------------------------------- */

typedef enum auth_cluster_mode {
	AUTH_CLUSTER_UNDEFINED = 0,   /* no member authentication configured */
	AUTH_CLUSTER_KEYFILE,
	AUTH_CLUSTER_SEND_KEYFILE,    /* sends the key, accepts the key or a member certificate */
	AUTH_CLUSTER_SEND_X509,       /* sends the certificate, accepts either */
	AUTH_CLUSTER_X509,            /* certificates only */
} auth_cluster_mode_t;

/* "keyFile", "sendKeyFile", "sendX509", "x509" -> the mode; -1 otherwise. */
int auth_cluster_mode_parse(const char *text, auth_cluster_mode_t *out);
/* The name (mongod's spelling); "undefined" for AUTH_CLUSTER_UNDEFINED. */
const char *auth_cluster_mode_name(auth_cluster_mode_t m);
void auth_cluster_mode_set(auth_cluster_mode_t m);
auth_cluster_mode_t auth_cluster_mode(void);
/* mongod's ClusterAuthMode predicates. */
bool auth_cluster_allows_x509(void);      /* sendKeyFile, sendX509, x509 */
bool auth_cluster_allows_keyfile(void);   /* keyFile, sendKeyFile, sendX509 */
bool auth_cluster_sends_x509(void);       /* sendX509, x509 */

/*
 * setParameter clusterAuthMode as mongod's ClusterAuthModeServerParameter:
 * 2 BadValue "Invalid clusterAuthMode '<v>'"; the x.509 modes need TLS for
 * outgoing connections (tls_outgoing: preferTLS/requireTLS), else 2
 * "Illegal state transition for clusterAuthMode, need to enable SSL for
 * outgoing connections"; then mongod's canTransitionTo (the same mode, one
 * step up keyFile -> sendKeyFile -> sendX509 -> x509, anything from
 * undefined), else 5579202 "Illegal state transition for clusterAuthMode
 * from '<old>' to '<new>'".  0 and the mode changed otherwise.
 */
int auth_cluster_mode_transition(const char *text, bool tls_outgoing, terr_t *err);

/*
 * Read the subject of the first certificate in a PEM file (the server's
 * --tlsCertificateKeyFile, the member's --tlsClusterFile).  The server's is
 * the reference of the member rule; the cluster file's (or the server's
 * when there is none) is the user name a member sends.  -1 with err 140
 * InvalidSSLConfiguration when the file has no certificate.  NULL path
 * clears (tests).
 */
int auth_x509_set_server_certificate(const char *pem_path, terr_t *err);
int auth_x509_set_cluster_certificate(const char *pem_path, terr_t *err);
/* The member's own subject (what it sends as `user`), or NULL. */
const char *auth_x509_cluster_subject(void);

/* Whether peer (a certificate that verified) is a member certificate:
 * the configured member rule (auth_x509_set_member_rule; by default O,
 * OU and DC against this server's certificate, false with no server
 * certificate configured).  False when peer is NULL. */
bool auth_x509_cert_is_member(X509 *peer);

/* ---- net.tls.clusterAuthX509 (mongod 7.0+) --------------------------------------- */

/* The extension mongod reads for net.tls.clusterAuthX509.extensionValue
 * (mongoClusterMembership; its value one DER UTF8String). */
#define AUTH_X509_CLUSTER_MEMBERSHIP_OID "1.3.6.1.4.1.34601.2.1.2"

typedef enum auth_x509_member_rule {
	AUTH_X509_RULE_O_OU_DC = 0,   /* mongod's default: O, OU, DC equal to the server certificate's */
	AUTH_X509_RULE_ATTRIBUTES,    /* clusterAuthX509.attributes: the subject holds every listed attribute */
	AUTH_X509_RULE_EXTENSION,     /* clusterAuthX509.extensionValue: the extension holds the value */
} auth_x509_member_rule_t;

/*
 * Set the member rule from net.tls.clusterAuthX509 (NULL: not given);
 * call after auth_x509_set_server_certificate/_cluster_certificate.  Both
 * given: 2 "net.tls.clusterAuthX509.attributes is not allowed when
 * net.tls.clusterAuthX509.extensionValue is specified".  attributes is an
 * RFC 4514 name ("O=Tamga, OU=rs0, title=member"; short names or dotted
 * OIDs, '\,' and '\XX' escapes; 2 when unreadable) and the certificate
 * this server sends to members (the cluster file's, else the server's)
 * must hold every attribute, else 2 "The server's outgoing certificate's
 * DN does not contain the attributes specified in
 * tlsClusterAuthX509Attributes".  With either set the O/OU/DC rule is not
 * used at all (mongod's).  NULL, NULL restores the default (tests).
 */
int auth_x509_set_member_rule(const char *attributes, const char *extension_value, terr_t *err);
/*
 * setParameter tlsClusterAuthX509Override (startup only, mongod 7.0+): a
 * second rule a certificate may meet to be a member, beside the configured
 * one, for rolling a set from one certificate rule to another.  value:
 * {attributes: "<RFC 4514 name>"} (the certificate's subject holds each,
 * as clusterAuthX509.attributes) or {extensionValue: "<v>"} (its
 * mongoClusterMembership extension equals v) or {}.  Errors as mongod's
 * ClusterAuthX509OverrideParameter: 40415 an unknown field, 14 a value not
 * a string, 2 "At most one of attributes or extensionValue can be
 * specified for tlsClusterAuthX509Override", the attributes' parse errors
 * (auth_x509_parse_dn).  On an error nothing changes.
 */
int auth_x509_set_member_override(const bson_t *value, terr_t *err);
/* getParameter's value: key: {attributes} | {extensionValue} | {}. */
void auth_x509_member_override_append(bson_t *out, const char *key);
auth_x509_member_rule_t auth_x509_member_rule(void);

/* An RFC 4514 name as a sorted list of (OID, value) entries (opaque). */
typedef struct auth_x509_dn {
	char **v;
	size_t n;
} auth_x509_dn_t;
/* Parse text into out (auth_x509_dn_clear after) as mongod's parseDN then
 * normalizeStrings (auth_x509.c says the rules); -1 with err: 2 BadValue,
 * 51036 when the text ends inside a name or before a value, 50693 when a
 * value cannot be prepared; mongod's messages. */
int auth_x509_parse_dn(const char *text, auth_x509_dn_t *out, terr_t *err);
void auth_x509_dn_clear(auth_x509_dn_t *dn);
/* mongod's SSLX509Name::contains: every entry of want appears in name
 * (any RDN, any order); values compare as UTF-8 bytes once both sides went
 * through RFC 4518 stringprep (ICU's LDAP profile: no case folding, spaces
 * kept), a certificate value that cannot be prepared matching nothing. */
bool auth_x509_dn_contains(const X509_NAME *name, const auth_x509_dn_t *want);
/* The mongoClusterMembership value of cert: 0 and *out (bson_free,
 * NUL-terminated, *len bytes), 1 when cert has no such extension, -1 when
 * its value is not one DER UTF8String. */
int auth_x509_cluster_extension(X509 *cert, char **out, size_t *len);

/* ---- MONGODB-X509 authenticate ----------------------------------------------- */

typedef struct auth_x509_result {
	char *user, *db;            /* who the connection is now (bson_free both) */
	char *principal;            /* the certificate's subject, the reply's `user` */
	bool member;                /* authenticated as the internal user */
} auth_x509_result_t;

/*
 * mongod's _authenticateX509 for a client connection (peer may be NULL:
 * no TLS).  user is the command's `user` (NULL: the certificate's
 * subject), db the command's database.  On success 0 and *out filled.
 * Errors: 17 ProtocolError "X.509 authentication must always use the
 * $external database." and 11 UserNotFound "Could not find user "<u>" for
 * db "$external"" reach the client as they are (mongod's authenticate
 * passes these two through); every other failure is 18 with mongod's
 * reason in err (the caller logs it and answers 18 "Authentication
 * failed."): "No verified subject name available from client", "There is
 * no x.509 client certificate matching the user.", "The provided
 * certificate can only be used for cluster authentication, not client
 * authentication. The current configuration does not allow x.509 cluster
 * authentication, check the --clusterAuthMode flag".  *hide is set for
 * those (the caller answers 18 without the reason).
 */
int auth_x509_authenticate(const auth_conn_t *conn, const auth_x509_peer_t *peer, const char *user, const char *db,
                           auth_x509_result_t *out, bool *hide, terr_t *err);
void auth_x509_result_clear(auth_x509_result_t *r);

#endif
