/* replay_main.c: a main() for the fuzz targets without libFuzzer (any
 * compiler): feeds every file named on the command line, and every file in
 * every directory named there (in name order), to LLVMFuzzerTestOneInput
 * once.  A broken invariant aborts, as under libFuzzer; so this re-checks
 * a committed corpus, or reproduces one crash file:
 *
 *     tests/fuzz/fuzz_sem_replay tests/fuzz/corpus/sem
 *     SQF_FUZZ_TRACE=1 tests/fuzz/fuzz_sem_replay crash-0123abcd...
 *
 * Exits 1 if it found no input at all (a corpus path gone wrong should not
 * pass as an empty success). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long replayed;

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    static uint8_t buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf, f);
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        perror(path);
        return 1;
    }
    LLVMFuzzerTestOneInput(buf, n);
    replayed++;
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return 1;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            names = realloc(names, cap * sizeof *names);
            if (!names) abort();
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n]) abort();
        snprintf(names[n], len, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) bad |= run_file(names[i]);
        free(names[i]);
    }
    free(names);
    return bad;
}

int main(int argc, char **argv)
{
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            bad = 1;
        } else if (S_ISDIR(st.st_mode)) {
            bad |= run_dir(argv[i]);
        } else {
            bad |= run_file(argv[i]);
        }
    }
    printf("%s: %ld input(s) replayed%s\n", argv[0], replayed,
           bad ? ", some could not be read" : ", every check passed");
    if (replayed == 0) {
        fprintf(stderr, "%s: no input found (usage: %s CORPUS_DIR_OR_FILE...)\n", argv[0], argv[0]);
        return 1;
    }
    return bad;
}
