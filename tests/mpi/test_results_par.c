/* The results file with several ranks: each rank writes a disjoint strided set of rows (in
 * scattered batches, as a worker would) and their bulk slabs, independently; rank 0 then
 * reads the file back without MPI and finds every row and slab equal to what a single process
 * computes. The content checksum is printed: it is the same for 1, 2 and 4 ranks because it
 * is compared against the same in-memory expectation. */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "as_test.h"
#include "attnsweep/par.h"
#include "attnsweep/results.h"

enum { NT = 37, BATCH = 3 };

static void make_record(uint64_t i, int rank, as_record *r) {
  as_record_init(r, NULL);
  r->trial = i;
  r->d = 1 + (int32_t)(i % 4);
  r->n = 3 + (int32_t)(i % 5);
  r->outcome = AS_OUT_REACHED_T;
  r->verdict = (int32_t)(1 + i % 4);
  r->gap = 1.0 / (double)(i + 1);
  r->steps = (int64_t)(i * i);
  r->rank = rank; /* bookkeeping: stripped before comparison */
  r->wall_time = 0.01 * rank;
  snprintf(r->message, sizeof r->message, "row %llu", (unsigned long long)i);
}

static uint64_t tok_count(uint64_t i) {
  return (uint64_t)(1 + i % 4) * (uint64_t)(3 + i % 5);
}

static double tok_value(uint64_t i, uint64_t j) {
  return sin((double)(i * 131 + j));
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  as_par_setup(MPI_COMM_WORLD);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  char path[256] = "";
  if (rank == 0) snprintf(path, sizeof path, "/tmp/as_results_par_%ld.h5", (long)getpid());
  MPI_Bcast(path, (int)sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);

  uint64_t counts[NT];
  for (uint64_t i = 0; i < NT; i++) counts[i] = tok_count(i);
  as_results_info info;
  memset(&info, 0, sizeof info);
  info.n_trials = NT;
  info.master_seed = 11;
  info.spec_text = "seed: 11\n";
  info.overwrite = 1;
  info.bulk_counts[AS_BULK_FINAL] = counts;
  as_results *rf = NULL;
  as_status st = as_results_create(MPI_COMM_WORLD, path, &info, &rf);
  AS_EXPECT(st == AS_OK, "create: %s", as_error_get()->message);

  /* Rows rank, rank + size, ... in batches written in reverse order (point selections). */
  as_record batch[BATCH];
  int k = 0;
  double buf[64];
  for (int64_t i = NT - 1 - ((NT - 1 - rank) % size); rf && i >= 0; i -= size) {
    if (i % size != rank) continue;
    make_record((uint64_t)i, rank, &batch[k++]);
    for (uint64_t j = 0; j < counts[i]; j++) buf[j] = tok_value((uint64_t)i, j);
    st = as_results_write_bulk(rf, AS_BULK_FINAL, (uint64_t)i, buf, counts[i]);
    AS_EXPECT(st == AS_OK, "bulk %lld: %s", (long long)i, as_error_get()->message);
    if (k == BATCH) {
      AS_EXPECT(as_results_write_records(rf, batch, (size_t)k) == AS_OK, "write: %s",
                as_error_get()->message);
      k = 0;
    }
  }
  if (rf && k) AS_EXPECT(as_results_write_records(rf, batch, (size_t)k) == AS_OK, "write tail");
  st = as_results_close(&rf);
  AS_EXPECT(st == AS_OK, "close: %s", as_error_get()->message);

  if (rank == 0) {
    st = as_results_open(MPI_COMM_NULL, path, AS_RESULTS_READ, &rf);
    AS_EXPECT(st == AS_OK, "reopen: %s", as_error_get()->message);
    if (rf) {
      as_record got[NT], want;
      AS_EXPECT(as_results_read_records(rf, 0, NT, got) == AS_OK, "read");
      uint32_t sum = 0;
      for (uint64_t i = 0; i < NT; i++) {
        AS_EXPECT(got[i].rank == (int32_t)(i % (uint64_t)size), "row %llu written by rank %d",
                  (unsigned long long)i, got[i].rank);
        make_record(i, 0, &want);
        as_record_strip_timing(&want);
        as_record_strip_timing(&got[i]);
        AS_EXPECT(memcmp(&got[i], &want, sizeof want) == 0, "row %llu differs",
                  (unsigned long long)i);
        double slab[64];
        AS_EXPECT(as_results_read_bulk(rf, AS_BULK_FINAL, i, slab, counts[i]) == AS_OK, "bulk");
        for (uint64_t j = 0; j < counts[i]; j++)
          AS_EXPECT(slab[j] == tok_value(i, j), "bulk %llu[%llu]", (unsigned long long)i,
                    (unsigned long long)j);
        const unsigned char *b = (const unsigned char *)&got[i];
        for (size_t q = 0; q < sizeof got[i]; q++) sum = sum * 31u + b[q];
      }
      as_results_counts c;
      AS_EXPECT(as_results_count(rf, &c, NULL) == AS_OK && c.done == NT, "all done");
      as_results_segment seg;
      size_t ns = 0;
      AS_EXPECT(as_results_segments(rf, &seg, 1, &ns) == AS_OK && ns == 1 && seg.ranks == size &&
                    seg.trials_done == NT,
                "segment: ranks %d done %llu", seg.ranks, (unsigned long long)seg.trials_done);
      printf("content checksum with %d ranks: %08x\n", size, (unsigned)sum);
      as_results_close(&rf);
    }
    unlink(path);
  }

  int local = as_test_failures_, total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int rc = total ? 1 : 0;
  if (rank == 0) rc = as_test_finish("test_results_par") || rc;
  MPI_Finalize();
  return rc;
}
