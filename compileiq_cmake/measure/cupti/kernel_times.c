/* compileiq_cmake: per-kernel GPU time of any CUDA program, without rebuilding it.
 *
 * Loaded by the CUDA driver through CUDA_INJECTION64_PATH=<this library>: the driver calls
 * InitializeInjection() at cuInit. It records every kernel execution with the CUPTI activity API
 * (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: kernels keep running concurrently; start/end are GPU
 * timestamps) and, at process exit, writes one line per kernel (mangled name) to the file named by
 * COMPILEIQ_KERNEL_TIMES:  <launches> TAB <total ns> TAB <name>
 * The first line is "# compileiq kernel times v1" so that a file from a run that never reached exit
 * (crash, kill) is told apart from a run without kernels (header only). */
#include <cupti.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUFFER_SIZE (8u * 1024u * 1024u)
#define ALIGNMENT 8u

typedef struct {
  char *name;
  unsigned long long launches;
  unsigned long long ns;
} Entry;

static Entry *entries;
static size_t count, capacity;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int failed;

static void add(const char *name, unsigned long long ns) {
  pthread_mutex_lock(&lock);
  for (size_t i = 0; i < count; ++i) {
    if (strcmp(entries[i].name, name) == 0) {
      entries[i].launches += 1;
      entries[i].ns += ns;
      pthread_mutex_unlock(&lock);
      return;
    }
  }
  if (count == capacity) {
    size_t grown = capacity ? 2 * capacity : 64;
    Entry *more = realloc(entries, grown * sizeof(Entry));
    if (!more) {
      failed = 1;
      pthread_mutex_unlock(&lock);
      return;
    }
    entries = more;
    capacity = grown;
  }
  entries[count].name = strdup(name ? name : "<unnamed>");
  entries[count].launches = 1;
  entries[count].ns = ns;
  count += 1;
  pthread_mutex_unlock(&lock);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
  *buffer = aligned_alloc(ALIGNMENT, BUFFER_SIZE);
  *size = *buffer ? BUFFER_SIZE : 0;
  *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
  (void)context;
  (void)stream;
  (void)size;
  CUpti_Activity *record = NULL;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)record;
      add(k->name, k->end > k->start ? k->end - k->start : 0);
    }
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS && dropped)
    failed = 1;
  free(buffer);
}

static void at_exit(void) {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  const char *path = getenv("COMPILEIQ_KERNEL_TIMES");
  if (!path || !*path)
    return;
  FILE *out = fopen(path, "w");
  if (!out)
    return;
  fprintf(out, "# compileiq kernel times v1%s\n", failed ? " incomplete" : "");
  for (size_t i = 0; i < count; ++i)
    fprintf(out, "%llu\t%llu\t%s\n", entries[i].launches, entries[i].ns, entries[i].name);
  fclose(out);
}

int InitializeInjection(void) {
  if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS)
    return 0;
  if (cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
    return 0;
  atexit(at_exit);
  return 1;
}
