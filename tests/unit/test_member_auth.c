/*
 * test_member_auth.c -- member authentication (issue 24 item 1): the key
 * file's rules (auth/auth_member.h), the `__system` credentials and the
 * SCRAM-SHA-256 client against the server side (auth_scram.c), the Raft
 * handshake's steps (repl/raft_auth.h: garbled, reflected, replayed,
 * another id, another key), and the wrapped libuv transport itself on a
 * loopback port: an honest connector is handed to Raft, a garbled or a
 * truncated handshake is closed without Raft ever seeing the connection.
 */
#include "tt.h"
#include "tt_loopback.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "auth/auth.h"
#include "auth/auth_member.h"
#include "repl/raft_auth.h"

static char *tmp;

static char *
write_file(const char *name, const char *text, int mode)
{
	char *path = bson_strdup_printf("%s/%s", tmp, name);
	FILE *f = fopen(path, "w");

	TT_ASSERT(f != NULL);
	fputs(text, f);
	fclose(f);
	chmod(path, (mode_t)mode);
	return path;
}

static void
expect_refusal(const char *name, const char *text, int mode, int code, const char *msg_part)
{
	char *path = write_file(name, text, mode), *key = NULL;
	terr_t err = TERR_INIT;

	TT_EQ_INT(auth_keyfile_read(path, &key, &err), -1);
	TT_EQ_INT(err.code, code);
	TT_ASSERT(err.msg != NULL && strstr(err.msg, msg_part) != NULL);
	TT_ASSERT(err.msg != NULL && strstr(err.msg, path) != NULL);
	TT_ASSERT(key == NULL);
	terr_clear(&err);
	bson_free(path);
}

static void
test_keyfile_rules(void)
{
	char *path, *key = NULL;
	terr_t err = TERR_INIT;

	/* whitespace (tab..CR and space) is stripped, base64 and '=' kept */
	path = write_file("ok.key", "  abc+/\n\tDEF=\r\n\v\f 0123\n", 0600);
	TT_EQ_INT(auth_keyfile_read(path, &key, &err), 0);
	TT_EQ_STR(key, "abc+/DEF=0123");
	TT_ASSERT(auth_keyfile_length_ok(key));
	bson_free(key);
	bson_free(path);
	/* 0400 is fine too */
	path = write_file("ro.key", "abcdefgh", 0400);
	TT_EQ_INT(auth_keyfile_read(path, &key, &err), 0);
	bson_free(key);
	bson_free(path);

	expect_refusal("group.key", "abcdefgh", 0640, TERR_INVALID_PATH, "are too open");
	expect_refusal("world.key", "abcdefgh", 0604, TERR_INVALID_PATH, "are too open");
	expect_refusal("exec.key", "abcdefgh", 0610, TERR_INVALID_PATH, "are too open");
	expect_refusal("dash.key", "abc-defgh", 0600, TERR_UNSUPPORTED_FORMAT, "invalid char in key file");
	expect_refusal("nul.key", "abc\001" "defgh", 0600, TERR_UNSUPPORTED_FORMAT, "invalid char in key file");
	expect_refusal("empty.key", "", 0600, TERR_KEYFILE_EMPTY, "does not contain any valid keys");
	expect_refusal("spaces.key", " \n\t \r\n", 0600, TERR_KEYFILE_EMPTY, "does not contain any valid keys");
	path = bson_strdup_printf("%s/missing.key", tmp);
	TT_EQ_INT(auth_keyfile_read(path, &key, &err), -1);
	TT_EQ_INT(err.code, TERR_INVALID_PATH);
	TT_ASSERT(strstr(err.msg, "Error reading file") != NULL && strstr(err.msg, "No such file") != NULL);
	terr_clear(&err);
	bson_free(path);

	/* the length rule: 6 ..= 1024 characters after stripping */
	{
		char buf[1100];
		TT_ASSERT(!auth_keyfile_length_ok("abcde"));
		TT_ASSERT(auth_keyfile_length_ok("abcdef"));
		memset(buf, 'A', 1024);
		buf[1024] = '\0';
		TT_ASSERT(auth_keyfile_length_ok(buf));
		buf[1024] = 'A';
		buf[1025] = '\0';
		TT_ASSERT(!auth_keyfile_length_ok(buf));
	}
}

static int
member_lookup(void *ctx, const char *user, bson_t *creds)
{
	(void)ctx;
	if (strcmp(user, "__system") != 0)
		return -1;
	return auth_member_creds(AUTH_SCRAM_SHA256, creds);
}

/* One SCRAM-SHA-256 conversation: the client with client_key against a
 * server whose key is the one installed.  Returns 0 when both sides agree. */
static int
converse(const char *client_key, bool *server_ok)
{
	terr_t err = TERR_INIT;
	auth_scram_client_t *c = auth_scram_client_new("__system", client_key, &err);
	auth_scram_t *s = auth_scram_new(AUTH_SCRAM_SHA256, true);
	char *out = NULL, *final = NULL;
	size_t out_len = 0;
	bool done = false;
	int ret = -1;

	*server_ok = false;
	TT_ASSERT(c != NULL);
	if (auth_scram_step(s, (const uint8_t *)auth_scram_client_first(c), strlen(auth_scram_client_first(c)),
	    member_lookup, NULL, &out, &out_len, &done, &err) != 0)
		goto out;
	if (auth_scram_client_final(c, out, out_len, &final, &err) != 0)
		goto out;
	bson_free(out);
	out = NULL;
	if (auth_scram_step(s, (const uint8_t *)final, strlen(final), member_lookup, NULL, &out, &out_len, &done,
	    &err) != 0)
		goto out;
	*server_ok = auth_scram_succeeded(s);
	if (auth_scram_client_verify(c, out, out_len, &err) != 0)
		goto out;
	ret = 0;
out:
	terr_clear(&err);
	bson_free(out);
	bson_free(final);
	auth_scram_client_free(c);
	auth_scram_free(s);
	return ret;
}

static void
test_system_user(void)
{
	terr_t err = TERR_INIT;
	bson_t creds;
	bool server_ok;

	TT_EQ_INT(auth_member_key_set(NULL, &err), 0);
	TT_ASSERT(!auth_member_key_present());
	/* no key: no such user, so nobody is __system */
	TT_EQ_INT(auth_member_creds(AUTH_SCRAM_SHA256, &creds), -1);
	TT_ASSERT(auth_member_client_new(0, &err) == NULL);
	TT_EQ_INT(err.code, TERR_NOT_IMPLEMENTED);
	terr_clear(&err);

	TT_EQ_INT(auth_member_key_set("c2VjcmV0a2V5MQ==", &err), 0);
	TT_ASSERT(auth_member_key_present());
	TT_ASSERT(auth_member_is_internal_user("__system", "local"));
	TT_ASSERT(!auth_member_is_internal_user("__system", "admin"));
	TT_ASSERT(!auth_member_is_internal_user("system", "local"));
	TT_EQ_INT(auth_member_creds(AUTH_SCRAM_SHA1, &creds), AUTH_CREDS_NO_MECH);
	TT_EQ_INT(auth_member_creds(AUTH_SCRAM_SHA256, &creds), 0);
	{
		bson_iter_t it;
		TT_ASSERT(bson_iter_init_find(&it, &creds, "iterationCount") && bson_iter_as_int64(&it) == 15000);
		TT_ASSERT(bson_iter_init_find(&it, &creds, "storedKey"));
	}
	bson_destroy(&creds);

	/* the right key: both sides agree (twice: the second uses the cache) */
	TT_EQ_INT(converse("c2VjcmV0a2V5MQ==", &server_ok), 0);
	TT_ASSERT(server_ok);
	TT_EQ_INT(converse("c2VjcmV0a2V5MQ==", &server_ok), 0);
	TT_ASSERT(server_ok);
	/* another key: the server refuses the proof */
	TT_EQ_INT(converse("b3RoZXJrZXkyMg==", &server_ok), -1);
	TT_ASSERT(!server_ok);
}

static void
test_scram_client_bad_server(void)
{
	terr_t err = TERR_INIT;
	auth_scram_client_t *c = auth_scram_client_new("__system", "c2VjcmV0a2V5MQ==", &err);
	const char *first = auth_scram_client_first(c);
	const char *cnonce = strstr(first, ",r=") + 3;
	char *msg, *out = NULL;

	TT_ASSERT(strncmp(first, "n,,n=__system,r=", 16) == 0);
	/* verify before final */
	TT_EQ_INT(auth_scram_client_verify(c, "v=AAAA", 6, &err), -1);
	TT_EQ_INT(err.code, TERR_AUTHENTICATION_FAILED);
	terr_clear(&err);
	/* missing attributes */
	TT_EQ_INT(auth_scram_client_final(c, "r=abc", 5, &out, &err), -1);
	TT_EQ_INT(err.code, TERR_AUTHENTICATION_FAILED);
	terr_clear(&err);
	/* a nonce that does not extend ours */
	msg = bson_strdup_printf("r=zz%s,s=c2FsdHNhbHQ=,i=15000", cnonce);
	TT_EQ_INT(auth_scram_client_final(c, msg, strlen(msg), &out, &err), -1);
	TT_ASSERT(strstr(err.msg, "nonce") != NULL);
	terr_clear(&err);
	bson_free(msg);
	/* the server's nonce equal to ours (no part of its own) */
	msg = bson_strdup_printf("r=%s,s=c2FsdHNhbHQ=,i=15000", cnonce);
	TT_EQ_INT(auth_scram_client_final(c, msg, strlen(msg), &out, &err), -1);
	terr_clear(&err);
	bson_free(msg);
	/* an iteration count below 4096 (a peer asking for cheap proofs) */
	msg = bson_strdup_printf("r=%sXYZ,s=c2FsdHNhbHQ=,i=1", cnonce);
	TT_EQ_INT(auth_scram_client_final(c, msg, strlen(msg), &out, &err), -1);
	TT_ASSERT(strstr(err.msg, "iteration") != NULL);
	terr_clear(&err);
	bson_free(msg);
	/* a salt that is not base64 */
	msg = bson_strdup_printf("r=%sXYZ,s=!!!,i=4096", cnonce);
	TT_EQ_INT(auth_scram_client_final(c, msg, strlen(msg), &out, &err), -1);
	terr_clear(&err);
	bson_free(msg);
	/* a good first message, then a server signature that does not verify */
	msg = bson_strdup_printf("r=%sXYZ,s=c2FsdHNhbHQ=,i=4096", cnonce);
	TT_EQ_INT(auth_scram_client_final(c, msg, strlen(msg), &out, &err), 0);
	TT_ASSERT(out != NULL && strncmp(out, "c=biws,r=", 9) == 0 && strstr(out, ",p=") != NULL);
	TT_EQ_INT(auth_scram_client_verify(c, "v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", 46, &err), -1);
	TT_EQ_INT(err.code, TERR_AUTHENTICATION_FAILED);
	terr_clear(&err);
	TT_EQ_INT(auth_scram_client_verify(c, "e=other-error", 13, &err), -1);
	terr_clear(&err);
	bson_free(msg);
	bson_free(out);
	auth_scram_client_free(c);
}

/* ---- the key file's YAML (key rollover) -------------------------------------------------- */

static void
expect_keys(const char *text, size_t n, const char *k0, const char *k1)
{
	auth_keys_t k;
	terr_t err = TERR_INIT;

	TT_EQ_INT(auth_keyfile_parse("f.key", text, strlen(text), &k, &err), 0);
	TT_EQ_INT((int)k.n, (int)n);
	if (k.n >= 1)
		TT_EQ_STR(k.key[0], k0);
	if (k.n >= 2 && k1 != NULL)
		TT_EQ_STR(k.key[1], k1);
	auth_keys_clear(&k);
	TT_ASSERT(k.n == 0 && k.key == NULL);
	terr_clear(&err);
}

static void
expect_parse_error(const char *text, int code, const char *msg_part)
{
	auth_keys_t k;
	terr_t err = TERR_INIT;

	TT_EQ_INT(auth_keyfile_parse("f.key", text, strlen(text), &k, &err), -1);
	TT_EQ_INT(err.code, code);
	TT_ASSERT(err.msg != NULL && strstr(err.msg, msg_part) != NULL);
	TT_ASSERT(k.n == 0 && k.key == NULL);
	terr_clear(&err);
}

static void
test_keyfile_yaml(void)
{
	/* one string: every line is one key, whitespace dropped (as before) */
	expect_keys("abc+/\n DEF=\n", 1, "abc+/DEF=", NULL);
	expect_keys("---\nabcdef\n...\n", 1, "abcdef", NULL);
	expect_keys("# a comment\nabcdef # another\n", 1, "abcdef", NULL);
	expect_keys("'abcdef'\n", 1, "abcdef", NULL);
	/* a block sequence: mongod's rollover format */
	expect_keys("- key1AAAA\n- key2BBBB\n", 2, "key1AAAA", "key2BBBB");
	expect_keys("  -   key1AAAA\n  -   key2BBBB", 2, "key1AAAA", "key2BBBB");
	/* an item over several lines, and the item's value on the next line */
	expect_keys("- key1\n  AAAA\n-\n  key2BBBB\n", 2, "key1AAAA", "key2BBBB");
	/* quoted items, comments between them */
	expect_keys("# rollover\n- \"key1AAAA\"  # old\n\n- 'key2BBBB'\n", 2, "key1AAAA", "key2BBBB");
	/* nested sequences are flattened, as mongod's visitNode */
	expect_keys("- - key1AAAA\n  - key2BBBB\n- key3CCCC\n", 3, "key1AAAA", "key2BBBB");
	/* a flow sequence */
	expect_keys("[key1AAAA, key2BBBB]\n", 2, "key1AAAA", "key2BBBB");
	expect_keys("[ key1AAAA ,\n  key2BBBB ]", 2, "key1AAAA", "key2BBBB");
	/* a single-item sequence */
	expect_keys("- key1AAAA\n", 1, "key1AAAA", NULL);

	/* refusals */
	expect_parse_error("", TERR_KEYFILE_EMPTY, "does not contain any valid keys");
	expect_parse_error("# only a comment\n", TERR_KEYFILE_EMPTY, "does not contain any valid keys");
	expect_parse_error("[]", TERR_KEYFILE_EMPTY, "does not contain any valid keys");
	expect_parse_error("key: value\n", TERR_UNSUPPORTED_FORMAT, "Only strings and sequences are supported");
	expect_parse_error("- key1AAAA\n-\n", TERR_UNSUPPORTED_FORMAT, "Only strings and sequences are supported");
	expect_parse_error("- key1AAAA\n- \n- key2BBBB\n", TERR_UNSUPPORTED_FORMAT, "Only strings and sequences");
	expect_parse_error("- key-1AAAA\n", TERR_UNSUPPORTED_FORMAT, "invalid char in key file f.key");
	expect_parse_error("- key1AAAA\n- key_2\n", TERR_UNSUPPORTED_FORMAT, "invalid char in key file f.key");
	expect_parse_error("abcdef\n- key2BBBB\n", TERR_UNSUPPORTED_FORMAT, "error reading file: f.key");
	expect_parse_error("[key1AAAA, key2BBBB\n", TERR_UNSUPPORTED_FORMAT, "an unclosed sequence");
	expect_parse_error("[key1AAAA] key2BBBB\n", TERR_UNSUPPORTED_FORMAT, "error reading file: f.key");

	/* through a file: the permission rules still come first */
	{
		char *path = write_file("two.key", "- key1AAAA\n- key2BBBB\n", 0600);
		auth_keys_t k;
		terr_t err = TERR_INIT;
		TT_EQ_INT(auth_keyfile_read_keys(path, &k, &err), 0);
		TT_EQ_INT((int)k.n, 2);
		TT_EQ_STR(k.key[1], "key2BBBB");
		auth_keys_clear(&k);
		bson_free(path);
		path = write_file("two-open.key", "- key1AAAA\n- key2BBBB\n", 0644);
		TT_EQ_INT(auth_keyfile_read_keys(path, &k, &err), -1);
		TT_EQ_INT(err.code, TERR_INVALID_PATH);
		terr_clear(&err);
		bson_free(path);
	}
}

/* Key rollover: a member holding [a, b] accepts a SCRAM proof and a Raft
 * handshake made with either key, and a member holding only one of them
 * passes with a member holding both, whichever key comes first. */
static void
test_key_rollover(void)
{
	const char *ab[] = {"a2V5QUFBQUFB", "a2V5QkJCQkJC"};
	const char *ba[] = {"a2V5QkJCQkJC", "a2V5QUFBQUFB"};
	const char *three[] = {"a2V5QUFBQUFB", "a2V5QkJCQkJC", "a2V5Q0NDQ0ND"};
	terr_t err = TERR_INIT;
	bool server_ok;
	bson_t creds;
	uint8_t nc[32], ns[32], hello[REPL_RAFT_AUTH_HELLO_LEN], answer[REPL_RAFT_AUTH_ANSWER_LEN], proof[32];

	TT_EQ_INT(auth_member_keys_set(three, 3, &err), -1);
	TT_EQ_INT(err.code, TERR_BAD_VALUE);
	TT_ASSERT(strstr(err.msg, "Only two keys") != NULL);
	terr_clear(&err);

	TT_EQ_INT(auth_member_keys_set(ab, 2, &err), 0);
	TT_EQ_INT((int)auth_member_key_count(), 2);
	TT_EQ_INT(auth_member_creds(AUTH_SCRAM_SHA256, &creds), 0);
	{
		bson_iter_t it;
		TT_ASSERT(bson_iter_init_find(&it, &creds, "alternate") && BSON_ITER_HOLDS_DOCUMENT(&it));
	}
	bson_destroy(&creds);
	/* SCRAM: a proof with either key passes, a third key does not */
	TT_EQ_INT(converse(ab[0], &server_ok), 0);
	TT_ASSERT(server_ok);
	TT_EQ_INT(converse(ab[1], &server_ok), 0);
	TT_ASSERT(server_ok);
	TT_EQ_INT(converse(three[2], &server_ok), -1);
	TT_ASSERT(!server_ok);

	/* Raft: acceptor [a, b], connector [b] (a member already rolled over) */
	TT_EQ_INT(auth_member_nonce(nc), 0);
	repl_raft_auth_hello(nc, hello);
	TT_EQ_INT(repl_raft_auth_answer(hello, 7, ns, answer), 0);
	TT_EQ_INT(auth_member_keys_set(ab + 1, 1, &err), 0);
	TT_EQ_INT(repl_raft_auth_prove(nc, 7, answer, proof), 0);
	TT_EQ_INT(auth_member_keys_set(ab, 2, &err), 0);
	TT_EQ_INT(repl_raft_auth_check(hello, ns, 7, proof), 0);
	/* acceptor [b], connector [a, b]: the connector proves with b */
	TT_EQ_INT(auth_member_keys_set(ab + 1, 1, &err), 0);
	TT_EQ_INT(repl_raft_auth_answer(hello, 7, ns, answer), 0);
	TT_EQ_INT(auth_member_keys_set(ab, 2, &err), 0);
	TT_EQ_INT(repl_raft_auth_prove(nc, 7, answer, proof), 0);
	TT_EQ_INT(auth_member_keys_set(ab + 1, 1, &err), 0);
	TT_EQ_INT(repl_raft_auth_check(hello, ns, 7, proof), 0);
	/* acceptor [b, a], connector [a, b] */
	TT_EQ_INT(auth_member_keys_set(ba, 2, &err), 0);
	TT_EQ_INT(repl_raft_auth_answer(hello, 7, ns, answer), 0);
	TT_EQ_INT(auth_member_keys_set(ab, 2, &err), 0);
	TT_EQ_INT(repl_raft_auth_prove(nc, 7, answer, proof), 0);
	TT_EQ_INT(auth_member_keys_set(ba, 2, &err), 0);
	TT_EQ_INT(repl_raft_auth_check(hello, ns, 7, proof), 0);
	/* no shared key: acceptor [a], connector [b] */
	TT_EQ_INT(auth_member_keys_set(ab, 1, &err), 0);
	TT_EQ_INT(repl_raft_auth_answer(hello, 7, ns, answer), 0);
	TT_EQ_INT(auth_member_keys_set(ab + 1, 1, &err), 0);
	TT_EQ_INT(repl_raft_auth_prove(nc, 7, answer, proof), -1);
	/* and a proof under b to an acceptor holding only a */
	TT_EQ_INT(auth_member_keys_set(ab + 1, 1, &err), 0);
	TT_EQ_INT(repl_raft_auth_answer(hello, 7, ns, answer), 0);
	TT_EQ_INT(repl_raft_auth_prove(nc, 7, answer, proof), 0);
	TT_EQ_INT(auth_member_keys_set(ab, 1, &err), 0);
	TT_EQ_INT(repl_raft_auth_check(hello, ns, 7, proof), -1);
	TT_EQ_INT(auth_member_key_set("c2VjcmV0a2V5MQ==", &err), 0);
}

/* ---- the Raft handshake's steps ------------------------------------------------------- */

static void
test_handshake_steps(void)
{
	terr_t err = TERR_INIT;
	uint8_t nc[32], ns[32], hello[REPL_RAFT_AUTH_HELLO_LEN], answer[REPL_RAFT_AUTH_ANSWER_LEN], proof[32], bad[REPL_RAFT_AUTH_ANSWER_LEN];

	TT_EQ_INT(auth_member_key_set("c2VjcmV0a2V5MQ==", &err), 0);
	TT_EQ_INT(auth_member_nonce(nc), 0);
	repl_raft_auth_hello(nc, hello);
	TT_ASSERT(memcmp(hello, REPL_RAFT_AUTH_MAGIC, 8) == 0);
	TT_EQ_INT(repl_raft_auth_answer(hello, 7, ns, answer), 0);
	TT_EQ_INT(repl_raft_auth_prove(nc, 7, answer, proof), 0);
	TT_EQ_INT(repl_raft_auth_check(hello, ns, 7, proof), 0);

	/* garbled: a hello without the magic (a peer without the keyFile
	 * handshake sends libraft's messages straight away) */
	memcpy(bad, hello, REPL_RAFT_AUTH_HELLO_LEN);
	bad[0] ^= 1;
	TT_EQ_INT(repl_raft_auth_answer(bad, 7, ns, answer), -1);
	/* the eight zero bytes (a header length of 0 to libraft) are checked */
	memcpy(bad, hello, REPL_RAFT_AUTH_HELLO_LEN);
	bad[9] = 1;
	TT_EQ_INT(repl_raft_auth_answer(bad, 7, ns, answer), -1);
	/* any bit of the answer changed: the connector refuses it */
	TT_EQ_INT(repl_raft_auth_answer(hello, 7, ns, answer), 0);
	for (int i = 0; i < 72; i += 9) {
		/* with one key both MAC slots hold its MAC: a bit of the MACs is
		 * changed in both (one good slot is enough, by design) */
		memcpy(bad, answer, REPL_RAFT_AUTH_ANSWER_LEN);
		bad[i] ^= 0x80;
		if (i >= 40)
			bad[i + 32] ^= 0x80;
		TT_EQ_INT(repl_raft_auth_prove(nc, 7, bad, proof), -1);
	}
	TT_ASSERT(memcmp(answer + 40, answer + 72, 32) == 0);
	/* an answer for another id (the acceptor heard another claim) */
	TT_EQ_INT(repl_raft_auth_prove(nc, 8, answer, proof), -1);
	TT_EQ_INT(repl_raft_auth_prove(nc, 7, answer, proof), 0);
	/* a proof with one bit changed */
	proof[31] ^= 1;
	TT_EQ_INT(repl_raft_auth_check(hello, ns, 7, proof), -1);
	proof[31] ^= 1;
	/* a proof for the claimed id only */
	TT_EQ_INT(repl_raft_auth_check(hello, ns, 8, proof), -1);
	/* reflection: the acceptor's own MAC sent back as the proof */
	TT_EQ_INT(repl_raft_auth_check(hello, ns, 7, answer + 40), -1);

	/* replay: a recorded hello and proof against a new connection (a fresh
	 * challenge ns2) fail */
	{
		uint8_t ns2[32], answer2[REPL_RAFT_AUTH_ANSWER_LEN];
		TT_EQ_INT(repl_raft_auth_answer(hello, 7, ns2, answer2), 0);
		TT_ASSERT(memcmp(ns, ns2, 32) != 0);
		TT_EQ_INT(repl_raft_auth_check(hello, ns2, 7, proof), -1);
		/* and a recorded answer replayed to a connector with a new nonce */
		{
			uint8_t nc2[32];
			TT_EQ_INT(auth_member_nonce(nc2), 0);
			TT_EQ_INT(repl_raft_auth_prove(nc2, 7, answer, proof), -1);
		}
	}

	/* another key: neither side's proof verifies */
	TT_EQ_INT(repl_raft_auth_answer(hello, 7, ns, answer), 0);
	TT_EQ_INT(auth_member_key_set("b3RoZXJrZXkyMg==", &err), 0);
	TT_EQ_INT(repl_raft_auth_prove(nc, 7, answer, proof), -1);
	TT_EQ_INT(auth_member_key_set("c2VjcmV0a2V5MQ==", &err), 0);
	/* no key at all: nothing is computed */
	TT_EQ_INT(auth_member_key_set(NULL, &err), 0);
	TT_EQ_INT(repl_raft_auth_answer(hello, 7, ns, answer), -1);
	TT_EQ_INT(auth_member_key_set("c2VjcmV0a2V5MQ==", &err), 0);
}

/* ---- the wrapped transport on a loopback port ------------------------------------------- */

static struct {
	uv_loop_t loop;
	int accepted;
	raft_id accepted_id;
	int connected, connect_failed;
	int raw_eof;
	uv_stream_t *raw;            /* the raw connector's stream */
	const uint8_t *raw_send;
	size_t raw_len;
	uv_write_t wreq;
	uint8_t rbuf[256];
	int closed;
} T;

static void
on_raft_closed(uv_handle_t *h)
{
	raft_free(h);
}

static void
accept_cb(struct raft_uv_transport *t, raft_id id, const char *address, uv_stream_t *stream)
{
	(void)t;
	(void)address;
	T.accepted++;
	T.accepted_id = id;
	uv_close((uv_handle_t *)stream, on_raft_closed);
}

static void
connect_cb(struct raft_uv_connect *req, uv_stream_t *stream, int status)
{
	(void)req;
	if (status == 0) {
		T.connected++;
		uv_close((uv_handle_t *)stream, on_raft_closed);
	} else {
		T.connect_failed++;
	}
}

static void
raw_alloc(uv_handle_t *h, size_t s, uv_buf_t *b)
{
	(void)h;
	(void)s;
	*b = uv_buf_init((char *)T.rbuf, sizeof(T.rbuf));
}

static void
raw_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	(void)b;
	if (n < 0) {
		T.raw_eof++;
		uv_read_stop(s);
	}
}

static void
raw_written(uv_write_t *w, int status)
{
	(void)w;
	(void)status;
}

/* A connector through libraft's plain TCP transport (its preamble), then
 * raw bytes instead of the handshake. */
static void
raw_connect_cb(struct raft_uv_connect *req, uv_stream_t *stream, int status)
{
	uv_buf_t b;

	(void)req;
	TT_EQ_INT(status, 0);
	if (status != 0)
		return;
	T.raw = stream;
	b = uv_buf_init((char *)T.raw_send, (unsigned)T.raw_len);
	uv_write(&T.wreq, stream, &b, 1, raw_written);
	uv_read_start(stream, raw_alloc, raw_read);
}

static void
run_until(int *counter, int want, int ms)
{
	for (int i = 0; i < ms / 10 && *counter < want; i++) {
		uv_run(&T.loop, UV_RUN_NOWAIT);
		usleep(10 * 1000);
	}
}

static void
on_transport_closed(struct raft_uv_transport *t)
{
	(void)t;
	T.closed++;
}

static void
raw_attempt(struct raft_uv_transport *raw, const char *addr, const uint8_t *bytes, size_t len, int wait_ms)
{
	struct raft_uv_connect req;
	int before = T.accepted, eof = T.raw_eof;

	T.raw = NULL;
	T.raw_send = bytes;
	T.raw_len = len;
	TT_EQ_INT(raw->connect(raw, &req, 1, addr, raw_connect_cb), 0);
	run_until(&T.raw_eof, eof + 1, wait_ms);
	/* the acceptor closed it and never handed it to Raft */
	TT_EQ_INT(T.raw_eof, eof + 1);
	TT_EQ_INT(T.accepted, before);
	if (T.raw != NULL)
		uv_close((uv_handle_t *)T.raw, on_raft_closed);
}

static void
test_transport(void)
{
	struct raft_uv_transport a_in, a, b_in, b, raw;
	struct raft_uv_connect req;
	char a_addr[64], b_addr[64], raw_addr[64];
	terr_t err = TERR_INIT;

	memset(&T, 0, sizeof(T));
	TT_EQ_INT(auth_member_key_set("c2VjcmV0a2V5MQ==", &err), 0);
	TT_EQ_INT(uv_loop_init(&T.loop), 0);
	snprintf(a_addr, sizeof(a_addr), "127.0.0.1:%d", tt_free_port());
	snprintf(b_addr, sizeof(b_addr), "127.0.0.1:%d", tt_free_port());
	snprintf(raw_addr, sizeof(raw_addr), "127.0.0.1:%d", tt_free_port());
	TT_EQ_INT(raft_uv_tcp_init(&a_in, &T.loop), 0);
	TT_EQ_INT(repl_raft_auth_init(&a, &a_in, &T.loop), 0);
	TT_EQ_INT(a.init(&a, 1, a_addr), 0);
	TT_EQ_INT(a.listen(&a, accept_cb), 0);
	TT_EQ_INT(raft_uv_tcp_init(&b_in, &T.loop), 0);
	TT_EQ_INT(repl_raft_auth_init(&b, &b_in, &T.loop), 0);
	TT_EQ_INT(b.init(&b, 2, b_addr), 0);
	TT_EQ_INT(raft_uv_tcp_init(&raw, &T.loop), 0);
	TT_EQ_INT(raw.init(&raw, 3, raw_addr), 0);

	/* an honest connector: both ends hand the connection to Raft */
	TT_EQ_INT(b.connect(&b, &req, 1, a_addr, connect_cb), 0);
	run_until(&T.accepted, 1, 5000);
	run_until(&T.connected, 1, 5000);
	TT_EQ_INT(T.accepted, 1);
	TT_EQ_INT(T.accepted_id, 2);
	TT_EQ_INT(T.connected, 1);

	/* garbled: libraft's messages straight after its preamble (a member
	 * without a keyFile), or a hello with another magic */
	{
		static const uint8_t junk[64] = {1, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0};
		raw_attempt(&raw, a_addr, junk, sizeof(junk), 3000);
	}
	{
		uint8_t hello[REPL_RAFT_AUTH_HELLO_LEN + 32];
		memset(hello, 0x5a, sizeof(hello));
		memcpy(hello, "TMGRAFT0", 8);
		raw_attempt(&raw, a_addr, hello, sizeof(hello), 3000);
	}
	/* a right hello, then a forged proof: closed after the answer */
	{
		uint8_t msg[REPL_RAFT_AUTH_HELLO_LEN + 32], nc[32];
		auth_member_nonce(nc);
		repl_raft_auth_hello(nc, msg);
		memset(msg + REPL_RAFT_AUTH_HELLO_LEN, 0x11, 32);
		raw_attempt(&raw, a_addr, msg, sizeof(msg), 3000);
	}
	/* truncated: half a hello, then silence: closed at the 5 s deadline */
	{
		uint8_t hello[REPL_RAFT_AUTH_HELLO_LEN], nc[32];
		auth_member_nonce(nc);
		repl_raft_auth_hello(nc, hello);
		raw_attempt(&raw, a_addr, hello, 20, REPL_RAFT_AUTH_TIMEOUT_MS + 2000);
	}
	/* after all that the honest connector still gets through */
	TT_EQ_INT(b.connect(&b, &req, 1, a_addr, connect_cb), 0);
	run_until(&T.connected, 2, 5000);
	run_until(&T.accepted, 2, 5000);
	TT_EQ_INT(T.connected, 2);
	TT_EQ_INT(T.accepted, 2);

	a.close(&a, on_transport_closed);
	b.close(&b, on_transport_closed);
	raw.close(&raw, on_transport_closed);
	run_until(&T.closed, 3, 3000);
	TT_EQ_INT(T.closed, 3);
	raft_uv_tcp_close(&a_in);
	raft_uv_tcp_close(&b_in);
	raft_uv_tcp_close(&raw);
	repl_raft_auth_close(&a);
	repl_raft_auth_close(&b);
	uv_run(&T.loop, UV_RUN_DEFAULT);
	TT_EQ_INT(uv_loop_close(&T.loop), 0);
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	tmp = tt_tmpdir("member_auth");
	TT_RUN(test_keyfile_rules);
	TT_RUN(test_system_user);
	TT_RUN(test_scram_client_bad_server);
	TT_RUN(test_handshake_steps);
	TT_RUN(test_keyfile_yaml);
	TT_RUN(test_key_rollover);
	TT_RUN(test_transport);
	auth_member_key_set(NULL, NULL);
	tt_rmdir(tmp);
	bson_free(tmp);
	return tt_finish();
}
