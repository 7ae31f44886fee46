/*
 * tls_password.c -- the PEM pass phrase callback of both TLS layers
 * (tls_password.h).
 */
#include "common/tls_password.h"

#include <string.h>

int
tm_tls_password_cb(char *buf, int size, int rwflag, void *userdata)
{
	const char *pw = userdata;
	int n;

	(void)rwflag;
	if (pw == NULL)
		return 0;
	n = (int)strlen(pw);
	if (n > size)
		n = size;
	memcpy(buf, pw, (size_t)n);
	return n;
}
