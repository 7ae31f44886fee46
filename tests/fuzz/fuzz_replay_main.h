/*
 * fuzz_replay_main.h -- the main() a fuzz target gets outside libFuzzer:
 * run every file (or every file in each directory) named on the command line
 * through LLVMFuzzerTestOneInput once, and print "N passed, N failed".  The
 * seed corpora run this way as regression tests in every build.  Include it
 * at the end of a fuzz target under #ifdef FUZZ_REPLAY_MAIN.
 *
 * A target that defines FUZZ_HAVE_MUTATOR (and LLVMFuzzerCustomMutator)
 * also gets `-mutations=N` (default 0): after each file, N inputs made by
 * chaining the mutator from that file (back to the file every 8 steps),
 * each seeded by its file's position in sorted order, its step and
 * `-seed=S` (default 0) -- a fixed-seed fuzzing run, the same inputs on
 * every machine.
 */
#ifndef TAMGA_FUZZ_REPLAY_MAIN_H
#define TAMGA_FUZZ_REPLAY_MAIN_H
#include <dirent.h>
#include <sys/stat.h>

static long replay_mutations;
static unsigned long replay_seq, replay_seed;

static void
run_mutations(const uint8_t *orig, size_t n)
{
#ifdef FUZZ_HAVE_MUTATOR
	size_t cap = 65536, len = 0;
	uint8_t *buf;

	if (replay_mutations <= 0 || n > cap)
		return;
	buf = malloc(cap);
	for (long i = 0; i < replay_mutations; i++) {
		if (i % 8 == 0) {
			memcpy(buf, orig, n);
			len = n;
		}
		len = LLVMFuzzerCustomMutator(buf, len, cap, (unsigned)((replay_seq + replay_seed * 7919u) * 100003u + (unsigned long)i));
		LLVMFuzzerTestOneInput(buf, len);
	}
	free(buf);
#else
	(void)orig;
	(void)n;
#endif
}

static int
run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (f == NULL)
		return -1;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	replay_seq++;
	run_mutations(buf, (size_t)n);
	free(buf);
	return 0;
}

static int
name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
main(int argc, char **argv)
{
	int i, files = 0, bad = 0;

	for (i = 1; i < argc; i++) {
		struct stat st;
		if (strncmp(argv[i], "-mutations=", 11) == 0) {
			replay_mutations = atol(argv[i] + 11);
			continue;
		}
		if (strncmp(argv[i], "-seed=", 6) == 0) {
			replay_seed = strtoul(argv[i] + 6, NULL, 10);
			continue;
		}
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			/* sorted, so the seeds of -mutations do not depend on readdir */
			DIR *d = opendir(argv[i]);
			struct dirent *e;
			char **names = NULL;
			size_t nn = 0;
			while (d != NULL && (e = readdir(d)) != NULL) {
				if (e->d_name[0] == '.')
					continue;
				names = realloc(names, (nn + 1) * sizeof(*names));
				names[nn++] = strdup(e->d_name);
			}
			if (d)
				closedir(d);
			if (nn > 0)
				qsort(names, nn, sizeof(*names), name_cmp);
			for (size_t k = 0; k < nn; k++) {
				char p[4096];
				snprintf(p, sizeof(p), "%s/%s", argv[i], names[k]);
				if (run_file(p) == 0)
					files++;
				else
					bad++;
				free(names[k]);
			}
			free(names);
		} else if (run_file(argv[i]) == 0) {
			files++;
		} else {
			bad++;
		}
	}
	printf("%d passed, %d failed\n", files, bad);
	return bad || files == 0 ? 1 : 0;
}
#endif
