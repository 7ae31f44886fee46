/* tamga.c -- the command-line tool (import, export, stats). */
#include <stdio.h>
int main(void) { fprintf(stderr, "tamga: not built yet\n"); return 1; }
