/* tamgad.c -- the server binary; the wire protocol lands with issue 3. */
#include <stdio.h>
int main(void) { fprintf(stderr, "tamgad: not built yet\n"); return 1; }
