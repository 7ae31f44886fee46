/*
 * tls_password.h -- the pass phrase callback OpenSSL calls when a PEM key
 * file is encrypted, shared by the main port's TLS (server/tls.c) and TLS
 * between members (repl/member_tls.c): both set it on their SSL_CTX with
 * the configured password (`--tlsCertificateKeyFilePassword`,
 * `--tlsClusterPassword`) as its user data while they load the key.
 */
#ifndef TAMGA_COMMON_TLS_PASSWORD_H
#define TAMGA_COMMON_TLS_PASSWORD_H

/*
 * OpenSSL's pem_password_cb: copies the NUL-terminated pass phrase
 * userdata (borrowed; NULL: none configured, which fails the decryption)
 * into buf, at most size bytes, and answers its length.  rwflag is
 * ignored (keys are only read).
 */
int tm_tls_password_cb(char *buf, int size, int rwflag, void *userdata);

#endif
