/*
 * fuzz_replay_main.h -- the main() a fuzz target gets outside libFuzzer:
 * run every file (or every file in each directory) named on the command line
 * through LLVMFuzzerTestOneInput once, and print "N passed, N failed".  The
 * seed corpora run this way as regression tests in every build.  Include it
 * at the end of a fuzz target under #ifdef FUZZ_REPLAY_MAIN.
 */
#ifndef TAMGA_FUZZ_REPLAY_MAIN_H
#define TAMGA_FUZZ_REPLAY_MAIN_H
#include <dirent.h>
#include <sys/stat.h>

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
	free(buf);
	return 0;
}

int
main(int argc, char **argv)
{
	int i, files = 0, bad = 0;

	for (i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			DIR *d = opendir(argv[i]);
			struct dirent *e;
			while (d != NULL && (e = readdir(d)) != NULL) {
				char p[4096];
				if (e->d_name[0] == '.')
					continue;
				snprintf(p, sizeof(p), "%s/%s", argv[i], e->d_name);
				if (run_file(p) == 0)
					files++;
				else
					bad++;
			}
			if (d)
				closedir(d);
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
