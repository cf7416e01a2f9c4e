/* sched.c: coordinator/worker scheduling of trial indices (guided self-scheduling).
 *
 * Protocol (on a duplicate of the caller's communicator, so stray messages cannot meet
 * anyone else's):
 *   worker -> 0  TAG_MSG    int64[5] {type, new done, new failed, new interrupted, status}
 *                           type REQ (give me work), PROGRESS, STOP (I saw a stop), ERROR
 *   0 -> worker  TAG_REPLY  uint64[2 + count] {WORK, 0, trial...} or {END, flags}
 *                           exactly one reply per REQ; after END a worker sends nothing
 *   0 -> worker  TAG_CTRL   int64 {CTRL_STOP or CTRL_ABORT}, at most once per worker and
 *                           only before its END (END says whether one was sent, so the
 *                           worker knows whether to wait for it or cancel its receive)
 * A worker always posts the receive for a reply before it sends the request, and posts the
 * CTRL receive at the start, so the coordinator's sends complete without waiting for the
 * worker. Every wait sleeps (MPI_Test + nanosleep backoff): an Open MPI blocking wait polls
 * a whole core, which on a small machine would halve the rank that shares it.
 */
#include "attnsweep/sched.h"

#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "attnsweep/iocheck.h"
#include "attnsweep/signals.h"

enum { TAG_MSG = 7101, TAG_REPLY = 7102, TAG_CTRL = 7103 };
enum { MSG_REQ = 1, MSG_PROGRESS = 2, MSG_STOP = 3, MSG_ERROR = 4 };
enum { REPLY_WORK = 1, REPLY_END = 2 };
enum { END_CTRL_SENT = 1, END_STOP = 2, END_ABORT = 4 };
enum { CTRL_STOP = 1, CTRL_ABORT = 2 };
#define MSG_LEN 5

/* Settings broadcast from rank 0 (homogeneous ranks: sent as bytes). */
typedef struct sched_hdr {
  int32_t status; /* validation result on rank 0 */
  int32_t k, min_chunk, max_chunk, prefetch, batch_max, coordinator_runs, run_width;
  uint64_t total;
  double flush_interval, progress_interval, time_limit;
} sched_hdr;

/* State of one rank during a sweep. */
typedef struct sched {
  MPI_Comm comm; /* duplicate of the caller's communicator */
  int rank, size;
  sched_hdr h;
  const as_sched_ops *ops;
  double t0;             /* MPI_Wtime at the start */
  as_record *batch;      /* batch_max records awaiting the sink */
  int nbatch;            /* records in batch */
  double batch_t0;       /* when the oldest record in batch was finished */
  uint64_t done, failed; /* records produced on this rank; ... failed or nonfinite */
  uint64_t intr;         /* ... cut short by the stop flag */
  uint64_t rep_done;     /* done already reported to the coordinator */
  uint64_t rep_failed;   /* failed already reported */
  uint64_t rep_intr;     /* intr already reported */
  as_status err;         /* first failure of a callback on this rank (AS_OK: none) */
  int stop_seen;         /* this rank knows of a stop */
  uint64_t chunks;       /* rank 0: chunks handed out */
  double service;        /* rank 0: seconds spent servicing messages */
  FILE *progress;        /* rank 0: progress stream (NULL: none) */
  int progress_tty;      /* rank 0: live bar instead of lines */
} sched;

/* ---------------------------------------------------------------- small helpers */

void as_sched_opts_default(as_sched_opts *o) {
  memset(o, 0, sizeof *o);
  o->k = 2;
  o->min_chunk = 1;
  o->max_chunk = 256;
  o->prefetch = 1;
  o->batch_max = 64;
  o->run_width = 1;
  o->flush_interval = 1.0;
  o->progress_interval = 0.0;
  o->progress = NULL;
  o->progress_tty = -1;
  o->coordinator_runs = -1;
  o->time_limit = 0.0;
}

void as_sched_summary_clear(as_sched_summary *s) {
  if (!s) return;
  free(s->rank_done);
  memset(s, 0, sizeof *s);
}

/* Waiting without burning a core: a few quick polls, then sleeps growing from 20 us to
 * 0.5 ms. The cap bounds the latency an idle rank adds to a request. */
typedef struct backoff {
  int spins;
  long ns;
} backoff;

static void backoff_reset(backoff *b) {
  b->spins = 0;
  b->ns = 20000;
}

static void backoff_wait(backoff *b) {
  if (b->spins < 16) {
    b->spins++;
    return;
  }
  struct timespec ts = {0, b->ns};
  nanosleep(&ts, NULL);
  b->ns = b->ns * 2 > 500000 ? 500000 : b->ns * 2;
}

static as_status wait_sleeping(MPI_Request *req, MPI_Status *status) {
  as_status st = AS_OK;
  backoff b;
  backoff_reset(&b);
  for (;;) {
    int flag = 0;
    AS_MPI_CHECK(MPI_Test(req, &flag, status));
    if (flag) break;
    backoff_wait(&b);
  }
cleanup:
  return st;
}

/* ---------------------------------------------------------------- running and sinking */

static as_status flush_batch(sched *s) {
  as_status st = AS_OK;
  if (s->nbatch == 0) return AS_OK;
  int n = s->nbatch;
  s->nbatch = 0; /* sunk exactly once, even if the sink fails */
  as_status sst = s->ops->sink(s->batch, n, s->ops->ctx);
  AS_CHECK(sst == AS_OK, sst, "sink of %d records failed on rank %d", n, s->rank);
cleanup:
  return st;
}

static int flush_due(const sched *s, double now) {
  return s->nbatch > 0 && now - s->batch_t0 >= s->h.flush_interval;
}

/* Flush when due; a failure becomes the rank's sticky error. */
static void flush_if_due(sched *s) {
  if (s->err == AS_OK && flush_due(s, MPI_Wtime())) s->err = flush_batch(s);
}

/* Run one trial into the batch. Returns the callback's failure (the record is dropped). */
static as_status run_one(sched *s, uint64_t trial) {
  as_status st = AS_OK;
  AS_ASSERT(s->nbatch < s->h.batch_max); /* a full batch is flushed before the next trial */
  as_record *rec = &s->batch[s->nbatch];
  memset(rec, 0, sizeof *rec);
  as_error_context_set(s->rank, (int64_t)trial);
  double t = MPI_Wtime();
  as_status rst = s->ops->run(trial, rec, s->ops->ctx);
  AS_CHECK(rst == AS_OK, rst, "trial %" PRIu64 " failed on rank %d", trial, s->rank);
  AS_CHECK(rec->trial == trial, AS_ERR_INTERNAL,
           "run callback filled the record of trial %" PRIu64 " for trial %" PRIu64, rec->trial,
           trial);
  double now = MPI_Wtime();
  if (!(rec->wall_time > 0)) rec->wall_time = now - t;
  rec->rank = s->rank;
  s->done++;
  if (rec->outcome == AS_OUT_FAILED || rec->outcome == AS_OUT_NONFINITE) s->failed++;
  if (rec->outcome == AS_OUT_INTERRUPTED) s->intr++;
  if (s->nbatch == 0) s->batch_t0 = now;
  s->nbatch++;
  as_error_context_set(s->rank, -1);
  if (s->nbatch >= s->h.batch_max || s->h.flush_interval <= 0) AS_TRY(flush_batch(s));
cleanup:
  return st;
}

/* Run the leading trials of trials[0..count) (ops->run_batch when given, else one) into the
 * batch; *used: how many. Returns the callback's failure (the records are dropped). */
static as_status run_some(sched *s, const uint64_t *trials, int count, int *used) {
  as_status st = AS_OK;
  *used = 1;
  if (count > s->h.run_width) count = s->h.run_width;
  if (!s->ops->run_batch || count <= 1) return run_one(s, trials[0]);
  if (s->nbatch + count > s->h.batch_max) AS_TRY(flush_batch(s));
  as_record *rec = &s->batch[s->nbatch];
  memset(rec, 0, (size_t)count * sizeof *rec);
  as_error_context_set(s->rank, (int64_t)trials[0]);
  double t = MPI_Wtime();
  int u = 0;
  as_status rst = s->ops->run_batch(trials, count, rec, &u, s->ops->ctx);
  AS_CHECK(rst == AS_OK, rst, "trials %" PRIu64 "... failed on rank %d", trials[0], s->rank);
  AS_CHECK(u >= 1 && u <= count, AS_ERR_INTERNAL, "run_batch used %d of %d trials", u, count);
  double now = MPI_Wtime();
  for (int k = 0; k < u; k++) {
    AS_CHECK(rec[k].trial == trials[k], AS_ERR_INTERNAL,
             "run_batch filled the record of trial %" PRIu64 " for trial %" PRIu64, rec[k].trial,
             trials[k]);
    if (!(rec[k].wall_time > 0)) rec[k].wall_time = (now - t) / u;
    rec[k].rank = s->rank;
    s->done++;
    if (rec[k].outcome == AS_OUT_FAILED || rec[k].outcome == AS_OUT_NONFINITE) s->failed++;
    if (rec[k].outcome == AS_OUT_INTERRUPTED) s->intr++;
  }
  if (s->nbatch == 0) s->batch_t0 = now;
  s->nbatch += u;
  *used = u;
  as_error_context_set(s->rank, -1);
  if (s->nbatch >= s->h.batch_max || s->h.flush_interval <= 0) AS_TRY(flush_batch(s));
cleanup:
  return st;
}

/* ---------------------------------------------------------------- progress (rank 0) */

static void fmt_duration(char *buf, size_t len, double sec) {
  if (!(sec >= 0) || sec > 1e9) {
    snprintf(buf, len, "?");
    return;
  }
  long t = (long)(sec + 0.5);
  if (t >= 3600)
    snprintf(buf, len, "%ldh%02ldm%02lds", t / 3600, (t / 60) % 60, t % 60);
  else if (t >= 60)
    snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
  else
    snprintf(buf, len, "%lds", t);
}

/* Whether the live bar suits stream f when the caller did not say (progress_tty -1): f is a
 * terminal, or f is the pipe through which the mpiexec that started this rank forwards its
 * stderr (Open MPI: OMPI_COMM_WORLD_RANK is set, stderr is a pipe to the parent mpiexec,
 * which writes it to its own stderr) and that stderr is a terminal. A rank under orted (a
 * remote node), srun or --output-filename does not pass. (The ranks' stdout is a pty of
 * Open MPI's even when nobody watches, so it says nothing.) Linux /proc; elsewhere isatty. */
static int bar_suits(FILE *f) {
  int fd = f ? fileno(f) : -1;
  if (fd < 0) return 0;
  if (isatty(fd)) return 1;
  struct stat sb;
  if (!getenv("OMPI_COMM_WORLD_RANK") || fstat(fd, &sb) != 0 || !S_ISFIFO(sb.st_mode)) return 0;
  char path[64], comm[64] = "";
  long ppid = (long)getppid();
  snprintf(path, sizeof path, "/proc/%ld/comm", ppid);
  FILE *cf = fopen(path, "r");
  if (!cf) return 0;
  if (!fgets(comm, sizeof comm, cf)) comm[0] = '\0';
  fclose(cf);
  comm[strcspn(comm, "\n")] = '\0';
  if (strcmp(comm, "mpiexec") != 0 && strcmp(comm, "mpirun") != 0 && strcmp(comm, "orterun") != 0 &&
      strcmp(comm, "prterun") != 0)
    return 0;
  snprintf(path, sizeof path, "/proc/%ld/fd/2", ppid);
  int pfd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK);
  if (pfd < 0) return 0;
  int tty = isatty(pfd);
  close(pfd);
  return tty;
}

/* One progress report. done counts finished trials only: a trial cut short by a stop
 * (interrupted, its row left pending) is not done; the last line names them. */
static void progress_line(FILE *f, int tty, uint64_t done, uint64_t total, uint64_t failed,
                          uint64_t interrupted, double elapsed, int final) {
  /* Nothing scheduled here (e.g. every trial ran on groups of ranks, whose phase reports
   * itself): no "0/0 (100.0%)" line. */
  if (!f || total == 0) return;
  double pct = total ? 100.0 * (double)done / (double)total : 100.0;
  double rate = elapsed > 0 ? (double)done / elapsed : 0.0;
  char eta[32], intr[64] = "";
  fmt_duration(eta, sizeof eta, rate > 0 ? (double)(total - done) / rate : -1.0);
  if (interrupted) snprintf(intr, sizeof intr, " interrupted %" PRIu64 " (not done)", interrupted);
  if (tty) {
    char bar[21];
    int fill = total ? (int)(20.0 * (double)done / (double)total) : 20;
    for (int i = 0; i < 20; i++) bar[i] = i < fill ? '#' : '.';
    bar[20] = '\0';
    fprintf(
        f, "\r[%s] %" PRIu64 "/%" PRIu64 " (%.1f%%) %.1f trials/s ETA %s failures %" PRIu64 "%s   ",
        bar, done, total, pct, rate, eta, failed, intr);
    if (final) fputc('\n', f);
  } else {
    fprintf(f,
            "attnsweep: %" PRIu64 "/%" PRIu64 " (%.1f%%) %.1f trials/s ETA %s failures %" PRIu64
            "%s\n",
            done, total, pct, rate, eta, failed, intr);
  }
  fflush(f);
}

/* ---------------------------------------------------------------- worker (rank > 0) */

static as_status send_msg(sched *s, int type, int32_t status) {
  as_status st = AS_OK;
  int64_t m[MSG_LEN] = {type, (int64_t)(s->done - s->rep_done),
                        (int64_t)(s->failed - s->rep_failed), (int64_t)(s->intr - s->rep_intr),
                        status};
  s->rep_done = s->done;
  s->rep_failed = s->failed;
  s->rep_intr = s->intr;
  AS_MPI_CHECK(MPI_Send(m, MSG_LEN, MPI_INT64_T, 0, TAG_MSG, s->comm));
cleanup:
  return st;
}

static as_status worker_loop(sched *s) {
  as_status st = AS_OK;
  const int cap = s->h.max_chunk + s->h.prefetch + 1;
  uint64_t *reply = NULL, *queue = NULL;
  MPI_Request rreq = MPI_REQUEST_NULL, creq = MPI_REQUEST_NULL;
  int64_t ctrl = 0;
  int qhead = 0, qlen = 0;
  int req_out = 0, ended = 0, ctrl_done = 0, halted = 0, end_flags = 0;
  int err_reported = 0, stop_reported = 0;
  double last_msg = MPI_Wtime();
  const volatile sig_atomic_t *flag = as_signals_flag();

  reply = malloc((size_t)(s->h.max_chunk + 2) * sizeof *reply);
  queue = malloc((size_t)cap * sizeof *queue);
  AS_CHECK_ALLOC(reply);
  AS_CHECK_ALLOC(queue);
  AS_MPI_CHECK(MPI_Irecv(&ctrl, 1, MPI_INT64_T, 0, TAG_CTRL, s->comm, &creq));

  for (;;) {
    /* The reply to the outstanding request: wait for it only when there is nothing to run. */
    if (req_out) {
      int got = 0;
      MPI_Status mst;
      if (qlen == 0) {
        backoff b;
        backoff_reset(&b);
        for (;;) {
          AS_MPI_CHECK(MPI_Test(&rreq, &got, &mst));
          if (got) break;
          flush_if_due(s); /* records must not wait for a slow coordinator */
          backoff_wait(&b);
        }
      } else {
        AS_MPI_CHECK(MPI_Test(&rreq, &got, &mst));
      }
      if (got) {
        int count = 0;
        req_out = 0;
        last_msg = MPI_Wtime();
        AS_MPI_CHECK(MPI_Get_count(&mst, MPI_UINT64_T, &count));
        AS_CHECK(count >= 2, AS_ERR_INTERNAL, "short reply (%d words) from the coordinator", count);
        if (reply[0] == REPLY_WORK) {
          int n = count - 2;
          AS_CHECK(n >= 1 && qlen + n <= cap, AS_ERR_INTERNAL, "bad chunk of %d trials", n);
          if (qhead + qlen + n > cap) {
            memmove(queue, queue + qhead, (size_t)qlen * sizeof *queue);
            qhead = 0;
          }
          memcpy(queue + qhead + qlen, reply + 2, (size_t)n * sizeof *queue);
          qlen += n;
        } else {
          ended = 1;
          end_flags = (int)reply[1];
          if (end_flags & END_STOP) s->stop_seen = 1;
          if (end_flags & (END_STOP | END_ABORT)) halted = 1;
        }
      }
    }

    /* A stop or abort announced by the coordinator. */
    if (!ctrl_done) {
      int got = 0;
      AS_MPI_CHECK(MPI_Test(&creq, &got, MPI_STATUS_IGNORE));
      if (got) {
        ctrl_done = 1;
        halted = 1;
        if (ctrl == CTRL_STOP) {
          s->stop_seen = 1;
          stop_reported = 1; /* the coordinator knows */
          as_signals_request_stop();
        }
      }
    }

    /* Our own signal or failure: tell the coordinator (never after END). */
    if (*flag && !s->stop_seen) s->stop_seen = 1;
    if (s->stop_seen || s->err != AS_OK) halted = 1;
    if (!ended && s->stop_seen && !stop_reported) {
      AS_TRY(send_msg(s, MSG_STOP, 0));
      stop_reported = 1;
    }
    if (!ended && s->err != AS_OK && !err_reported) {
      AS_TRY(send_msg(s, MSG_ERROR, (int32_t)s->err));
      err_reported = 1;
    }
    if (halted) qlen = 0; /* abandon the trials not started */

    if (ended && !req_out && qlen == 0) break;

    /* Ask for more while still holding `prefetch` trials (hides the round trip), or to
     * collect the END when halted. */
    if (!ended && !req_out && (qlen <= s->h.prefetch || halted)) {
      AS_MPI_CHECK(
          MPI_Irecv(reply, s->h.max_chunk + 2, MPI_UINT64_T, 0, TAG_REPLY, s->comm, &rreq));
      AS_TRY(send_msg(s, MSG_REQ, 0));
      req_out = 1;
      last_msg = MPI_Wtime();
    } else if (!ended && s->h.progress_interval > 0 && s->done > s->rep_done &&
               MPI_Wtime() - last_msg >= 0.5 * s->h.progress_interval) {
      AS_TRY(send_msg(s, MSG_PROGRESS, 0));
      last_msg = MPI_Wtime();
    }

    if (qlen > 0) {
      int used = 1;
      as_status rst = run_some(s, queue + qhead, qlen, &used);
      qhead += used;
      qlen -= used;
      if (qlen == 0) qhead = 0;
      if (rst != AS_OK && s->err == AS_OK) s->err = rst;
      flush_if_due(s);
    } else {
      flush_if_due(s);
    }
  }

  /* The CTRL receive: it was either matched, or it is coming (END says so), or it never will. */
  if (!ctrl_done) {
    if (end_flags & END_CTRL_SENT) {
      AS_TRY(wait_sleeping(&creq, MPI_STATUS_IGNORE));
      if (ctrl == CTRL_STOP) {
        s->stop_seen = 1;
        as_signals_request_stop();
      }
    } else {
      AS_MPI_CHECK(MPI_Cancel(&creq));
      AS_MPI_CHECK(MPI_Wait(&creq, MPI_STATUS_IGNORE));
    }
    ctrl_done = 1;
  }
cleanup:
  free(reply);
  free(queue);
  return st;
}

/* ---------------------------------------------------------------- coordinator (rank 0) */

typedef struct coord {
  const uint64_t *order; /* trials, longest first */
  uint64_t n, next;      /* how many; first not yet handed out */
  int P;                 /* ranks that run trials */
  unsigned char *ended;  /* per rank: END sent */
  unsigned char *ctrl;   /* per rank: CTRL sent */
  int active;            /* workers not yet ended */
  int stopping, aborting;
  uint64_t w_done, w_failed, w_intr; /* reported by workers (w_intr: interrupted) */
  uint64_t *reply;                   /* max_chunk + 2 words */
} coord;

static uint64_t gss_chunk(const sched *s, const coord *c) {
  uint64_t rem = c->n - c->next;
  uint64_t div = (uint64_t)s->h.k * (uint64_t)c->P;
  uint64_t ch = (rem + div - 1) / div;
  const uint64_t w = (uint64_t)s->h.run_width; /* whole batches: chunks of multiples of w */
  ch = (ch + w - 1) / w * w;
  if (ch < (uint64_t)s->h.min_chunk) ch = (uint64_t)s->h.min_chunk;
  if (ch > (uint64_t)s->h.max_chunk) ch = (uint64_t)s->h.max_chunk;
  if (ch > rem) ch = rem;
  AS_ASSERT(ch >= 1); /* called only while trials remain (c->next < c->n) */
  return ch;
}

static as_status coord_reply(sched *s, coord *c, int w) {
  as_status st = AS_OK;
  if (c->stopping || c->aborting || c->next == c->n) {
    c->reply[0] = REPLY_END;
    c->reply[1] = (uint64_t)((c->ctrl[w] ? END_CTRL_SENT : 0) | (c->stopping ? END_STOP : 0) |
                             (c->aborting ? END_ABORT : 0));
    AS_MPI_CHECK(MPI_Send(c->reply, 2, MPI_UINT64_T, w, TAG_REPLY, s->comm));
    c->ended[w] = 1;
    c->active--;
  } else {
    uint64_t ch = gss_chunk(s, c);
    c->reply[0] = REPLY_WORK;
    c->reply[1] = 0;
    memcpy(c->reply + 2, c->order + c->next, (size_t)ch * sizeof *c->reply);
    if (s->ops->assigned) s->ops->assigned(w, c->order + c->next, (int)ch, s->ops->ctx);
    c->next += ch;
    s->chunks++;
    AS_MPI_CHECK(MPI_Send(c->reply, (int)ch + 2, MPI_UINT64_T, w, TAG_REPLY, s->comm));
  }
cleanup:
  return st;
}

/* Handle every message waiting. *handled: how many. */
static as_status coord_service(sched *s, coord *c, int *handled) {
  as_status st = AS_OK;
  double t = MPI_Wtime();
  *handled = 0;
  /* Alone (one rank), nobody sends: no probe (it drove MPI's progress engine between every
   * batch of a one-rank run: 0.4% of a 16,000-trial paper-setting run). */
  for (; s->size > 1;) {
    int got = 0;
    MPI_Status mst;
    AS_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, TAG_MSG, s->comm, &got, &mst));
    if (!got) break;
    int64_t m[MSG_LEN];
    int w = mst.MPI_SOURCE;
    AS_MPI_CHECK(MPI_Recv(m, MSG_LEN, MPI_INT64_T, w, TAG_MSG, s->comm, MPI_STATUS_IGNORE));
    AS_CHECK(w > 0 && w < s->size && !c->ended[w], AS_ERR_INTERNAL,
             "message of type %" PRId64 " from rank %d after its end", m[0], w);
    c->w_done += (uint64_t)m[1];
    c->w_failed += (uint64_t)m[2];
    c->w_intr += (uint64_t)m[3];
    switch (m[0]) {
    case MSG_REQ:
      AS_TRY(coord_reply(s, c, w));
      break;
    case MSG_STOP:
      c->stopping = 1;
      break;
    case MSG_ERROR:
      c->aborting = 1;
      break;
    default:
      break; /* MSG_PROGRESS: counts only */
    }
    (*handled)++;
  }
  /* Service time: the probes included, so it is what one request really costs rank 0. */
  if (*handled) s->service += MPI_Wtime() - t;
cleanup:
  return st;
}

static as_status coord_loop(sched *s, const uint64_t *order, int self_runs) {
  as_status st = AS_OK;
  coord c;
  memset(&c, 0, sizeof c);
  c.order = order;
  c.n = s->h.total;
  c.P = self_runs ? s->size : s->size - 1;
  c.active = s->size - 1;
  c.ended = calloc((size_t)s->size, 1);
  c.ctrl = calloc((size_t)s->size, 1);
  c.reply = malloc((size_t)(s->h.max_chunk + 2) * sizeof *c.reply);
  AS_CHECK_ALLOC(c.ended);
  AS_CHECK_ALLOC(c.ctrl);
  AS_CHECK_ALLOC(c.reply);
  const volatile sig_atomic_t *flag = as_signals_flag();
  int ctrl_sent = 0;
  double next_progress = s->t0 + s->h.progress_interval;
  backoff b;
  backoff_reset(&b);

  for (;;) {
    int handled = 0;
    AS_TRY(coord_service(s, &c, &handled));
    double now = MPI_Wtime();
    if (*flag) c.stopping = 1;
    if (s->h.time_limit > 0 && now - s->t0 >= s->h.time_limit && !c.stopping) {
      c.stopping = 1;
      as_signals_request_stop();
    }
    if (s->err != AS_OK) c.aborting = 1;
    if (c.stopping) {
      s->stop_seen = 1;
      as_signals_request_stop(); /* rank 0's own code sees the stop like every worker */
    }
    if ((c.stopping || c.aborting) && !ctrl_sent) {
      int64_t code = c.aborting ? CTRL_ABORT : CTRL_STOP;
      for (int w = 1; w < s->size; w++) {
        if (c.ended[w]) continue;
        AS_MPI_CHECK(MPI_Send(&code, 1, MPI_INT64_T, w, TAG_CTRL, s->comm));
        c.ctrl[w] = 1;
      }
      ctrl_sent = 1;
    }
    if (s->h.progress_interval > 0 && now >= next_progress) {
      uint64_t intr = s->intr + c.w_intr;
      progress_line(s->progress, s->progress_tty, s->done + c.w_done - intr, c.n,
                    s->failed + c.w_failed, intr, now - s->t0, 0);
      next_progress = now + s->h.progress_interval;
    }
    if (self_runs && !c.stopping && !c.aborting && c.next < c.n) {
      /* One trial (or one batch of small trials) at a time, so requests wait little. */
      int used = 1;
      const uint64_t left = c.n - c.next;
      as_status rst = run_some(s, c.order + c.next,
                               left < (uint64_t)s->h.run_width ? (int)left : s->h.run_width, &used);
      if (s->ops->assigned) s->ops->assigned(0, c.order + c.next, used, s->ops->ctx);
      c.next += (uint64_t)used;
      s->chunks += (uint64_t)used;
      if (rst != AS_OK && s->err == AS_OK) s->err = rst;
      flush_if_due(s);
      backoff_reset(&b);
      continue;
    }
    flush_if_due(s);
    if (c.active == 0) break;
    if (handled)
      backoff_reset(&b);
    else
      backoff_wait(&b);
  }
cleanup:
  free(c.ended);
  free(c.ctrl);
  free(c.reply);
  return st;
}

/* ---------------------------------------------------------------- set-up and the collective */

typedef struct keyed {
  double cost;
  uint64_t trial;
} keyed;

/* Decreasing cost, ties (and NaN, which sorts last) by increasing index: a total order, so
 * qsort's instability does not matter. */
static int cmp_keyed(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  int xn = isnan(x->cost), yn = isnan(y->cost);
  if (xn != yn) return xn - yn;
  if (!xn && x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
  return (x->trial > y->trial) - (x->trial < y->trial);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* Rank 0: check the settings, order the work. *order_out set on success. */
static as_status prepare(const as_sched_opts *o, const as_sched_ops *ops, const uint64_t *todo,
                         uint64_t n, sched_hdr *h, uint64_t **order_out) {
  as_status st = AS_OK;
  keyed *kv = NULL;
  uint64_t *order = NULL;
  AS_CHECK(o->k >= 1 && o->min_chunk >= 1 && o->max_chunk >= o->min_chunk &&
               o->max_chunk <= (1 << 24) && o->prefetch >= 0 && o->prefetch <= (1 << 24) &&
               o->batch_max >= 1 && o->run_width >= 1 && o->run_width <= o->batch_max,
           AS_ERR_ARG,
           "scheduler options: need k >= 1, 1 <= min_chunk <= max_chunk <= 2^24, prefetch >= 0, "
           "1 <= run_width <= batch_max (got k %d, min_chunk %d, max_chunk %d, prefetch %d, "
           "batch_max %d, run_width %d)",
           o->k, o->min_chunk, o->max_chunk, o->prefetch, o->batch_max, o->run_width);
  AS_CHECK(o->flush_interval >= 0 && o->progress_interval >= 0 && o->time_limit >= 0, AS_ERR_ARG,
           "scheduler options: intervals and time limit must be >= 0");
  AS_CHECK(n == 0 || todo != NULL, AS_ERR_ARG, "to-do list is NULL with %" PRIu64 " trials", n);
  (void)ops;
  order = malloc((size_t)(n ? n : 1) * sizeof *order);
  AS_CHECK_ALLOC(order);
  if (n) {
    memcpy(order, todo, (size_t)n * sizeof *order);
    qsort(order, (size_t)n, sizeof *order, cmp_u64);
    for (uint64_t i = 1; i < n; i++)
      AS_CHECK(order[i] != order[i - 1], AS_ERR_ARG,
               "trial %" PRIu64 " appears twice in the to-do list", order[i]);
    if (ops->cost) {
      kv = malloc((size_t)n * sizeof *kv);
      AS_CHECK_ALLOC(kv);
      for (uint64_t i = 0; i < n; i++) {
        kv[i].trial = todo[i];
        kv[i].cost = ops->cost(todo[i], ops->ctx);
      }
      qsort(kv, (size_t)n, sizeof *kv, cmp_keyed);
      for (uint64_t i = 0; i < n; i++) order[i] = kv[i].trial;
    } else {
      memcpy(order, todo, (size_t)n * sizeof *order);
    }
  }
  h->k = o->k;
  h->min_chunk = o->min_chunk;
  h->max_chunk = o->max_chunk;
  h->prefetch = o->prefetch;
  h->batch_max = o->batch_max;
  h->coordinator_runs = o->coordinator_runs;
  h->run_width = o->run_width;
  h->total = n;
  h->flush_interval = o->flush_interval;
  h->progress_interval = o->progress_interval;
  h->time_limit = o->time_limit;
  *order_out = order;
  order = NULL;
cleanup:
  free(kv);
  free(order);
  return st;
}

/* Relay the first error (lowest failing rank) to every rank; returns its status. The other
 * ranks record it with its own place, rank, trial and message (as_error_relay), so whichever
 * rank reports it (rank 0) prints what the failing rank would have printed. */
static as_status relay_error(sched *s, int first) {
  as_status st = AS_OK;
  struct {
    int32_t status, line, rank, pad;
    int64_t trial;
    char file[256], func[128], message[AS_ERRMSG_MAX];
  } e;
  memset(&e, 0, sizeof e);
  if (s->rank == first) {
    const as_error *mine = as_error_get();
    e.status = (int32_t)s->err;
    if (mine->status != AS_OK) {
      e.line = mine->line;
      e.rank = mine->rank;
      e.trial = mine->trial;
      snprintf(e.file, sizeof e.file, "%s", mine->file ? mine->file : "?");
      snprintf(e.func, sizeof e.func, "%s", mine->func ? mine->func : "?");
      snprintf(e.message, sizeof e.message, "%s", mine->message);
    } else {
      e.rank = s->rank;
      e.trial = -1;
      snprintf(e.message, sizeof e.message, "%s", as_status_message(s->err));
    }
  }
  AS_MPI_CHECK(MPI_Bcast(&e, (int)sizeof e, MPI_BYTE, first, s->comm));
  e.file[sizeof e.file - 1] = e.func[sizeof e.func - 1] = e.message[sizeof e.message - 1] = '\0';
  if (s->rank != first)
    as_error_relay((as_status)e.status, e.file, e.line, e.func, e.rank, e.trial, e.message);
  st = (as_status)e.status;
cleanup:
  return st;
}

as_status as_sched_run(MPI_Comm comm, const uint64_t *todo, uint64_t n_todo,
                       const as_sched_opts *opts, const as_sched_ops *ops, as_sched_summary *out) {
  as_status st = AS_OK;
  sched s;
  uint64_t *order = NULL;
  as_sched_opts defaults;
  memset(&s, 0, sizeof s);
  s.comm = MPI_COMM_NULL;
  if (out) memset(out, 0, sizeof *out);
  if (!opts) {
    as_sched_opts_default(&defaults);
    opts = &defaults;
  }

  AS_MPI_CHECK(MPI_Comm_dup(comm, &s.comm));
  AS_MPI_CHECK(MPI_Comm_set_errhandler(s.comm, MPI_ERRORS_RETURN));
  AS_MPI_CHECK(MPI_Comm_rank(s.comm, &s.rank));
  AS_MPI_CHECK(MPI_Comm_size(s.comm, &s.size));
  s.ops = ops;

  /* Rank 0 validates and orders; everyone learns the verdict and the settings. */
  {
    as_status local = AS_OK;
    if (s.rank == 0) {
      local = prepare(opts, ops ? ops : &(as_sched_ops){0}, todo, n_todo, &s.h, &order);
      s.h.status = (int32_t)local;
      s.progress = opts->progress;
      s.progress_tty = opts->progress_tty;
      if (s.progress_tty < 0) s.progress_tty = bar_suits(s.progress);
    }
    AS_MPI_CHECK(MPI_Bcast(&s.h, (int)sizeof s.h, MPI_BYTE, 0, s.comm));
    if (s.rank != 0) local = (as_status)s.h.status;
    if (local == AS_OK && (!ops || !ops->run || !ops->sink))
      local = as_error_set(AS_ERR_ARG, __FILE__, __LINE__, __func__,
                           "scheduler: run and sink callbacks are required");
    int lst = (int)local, gst = 0;
    AS_MPI_CHECK(MPI_Allreduce(&lst, &gst, 1, MPI_INT, MPI_MIN, s.comm));
    if (gst != AS_OK) {
      st = as_error_set((as_status)gst, __FILE__, __LINE__, __func__,
                        "scheduler arguments rejected on another rank");
      goto cleanup;
    }
  }

  s.batch = malloc((size_t)s.h.batch_max * sizeof *s.batch);
  AS_CHECK_ALLOC(s.batch); /* (a failure here strands the other ranks, like any MPI failure) */
  AS_MPI_CHECK(MPI_Barrier(s.comm));
  s.t0 = MPI_Wtime();

  int self_runs = s.size == 1 || s.h.coordinator_runs == 1 ||
                  (s.h.coordinator_runs < 0 && s.size <= AS_SCHED_COORD_RUNS_MAX);
  if (s.rank == 0)
    AS_TRY(coord_loop(&s, order, self_runs));
  else
    AS_TRY(worker_loop(&s));

  /* Every finished record reaches the sink, whatever happened. */
  if (s.nbatch > 0) {
    as_status fst = flush_batch(&s);
    if (s.err == AS_OK) s.err = fst;
  }
  if (*as_signals_flag()) s.stop_seen = 1;

  /* Totals, the first failing rank and the stop, reduced without spinning (ranks arrive at
   * different times; the early ones sleep). */
  {
    uint64_t cnt[4] = {s.done, s.failed, s.intr, (uint64_t)s.stop_seen}, gcnt[4];
    int fail_rank = s.err != AS_OK ? s.rank : s.size, first = s.size;
    MPI_Request rq[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    AS_MPI_CHECK(MPI_Iallreduce(cnt, gcnt, 4, MPI_UINT64_T, MPI_SUM, s.comm, &rq[0]));
    AS_MPI_CHECK(MPI_Iallreduce(&fail_rank, &first, 1, MPI_INT, MPI_MIN, s.comm, &rq[1]));
    AS_TRY(wait_sleeping(&rq[0], MPI_STATUS_IGNORE));
    AS_TRY(wait_sleeping(&rq[1], MPI_STATUS_IGNORE));
    double r0[3] = {MPI_Wtime() - s.t0, (double)s.chunks, s.service};
    /* The last progress line, with the exact totals (the workers' last trials are reported
     * only by this reduction); interrupted trials are not done. */
    if (s.rank == 0 && s.h.progress_interval > 0)
      progress_line(s.progress, s.progress_tty, gcnt[0] - gcnt[2], s.h.total, gcnt[1], gcnt[2],
                    r0[0], 1);
    AS_MPI_CHECK(MPI_Bcast(r0, 3, MPI_DOUBLE, 0, s.comm));
    uint64_t *rank_done = NULL;
    if (s.rank == 0) {
      rank_done = calloc((size_t)s.size, sizeof *rank_done);
      AS_CHECK_ALLOC(rank_done);
    }
    int grc = MPI_Gather(&s.done, 1, MPI_UINT64_T, rank_done, 1, MPI_UINT64_T, 0, s.comm);
    if (out) {
      out->nranks = s.size;
      out->total = s.h.total;
      out->done = gcnt[0];
      out->failed = gcnt[1];
      out->interrupted = gcnt[2];
      out->not_run = s.h.total > gcnt[0] ? s.h.total - gcnt[0] : 0;
      out->chunks = (uint64_t)r0[1];
      out->my_done = s.done;
      out->stopped = gcnt[3] > 0;
      out->elapsed = r0[0];
      out->coord_service = r0[2];
      out->rank_done = rank_done;
    } else {
      free(rank_done);
    }
    AS_MPI_CHECK(grc);
    if (first < s.size) {
      st = relay_error(&s, first);
    } else if (gcnt[3] > 0 && gcnt[0] - gcnt[2] < s.h.total) {
      st = as_error_set(AS_ERR_INTERRUPTED, __FILE__, __LINE__, __func__,
                        "sweep stopped: %" PRIu64 " of %" PRIu64 " trials done", gcnt[0] - gcnt[2],
                        s.h.total);
    }
  }

cleanup:
  free(order);
  free(s.batch);
  if (s.comm != MPI_COMM_NULL) MPI_Comm_free(&s.comm);
  return st;
}
