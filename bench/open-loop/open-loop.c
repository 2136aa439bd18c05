/*
 * open-loop: HTTP/1.1 load at a fixed rate whose arrivals are spaced in microseconds.
 *
 * wrk and autocannon pace a fixed rate with millisecond timers: every connection whose wait ends
 * in the same millisecond sends in the same pass, so a "fixed rate" arrives as a burst of
 * rate/1000 requests each millisecond. This tool schedules request i at t0 + the i-th arrival
 * time (Poisson by default, or evenly spaced), sends it on a free keep-alive connection at that
 * instant (a timerfd with 1 ns slack), and measures each latency from the scheduled time, so a
 * request that waits for a connection is counted as late, not hidden (no coordinated omission).
 *
 * Usage: open-loop --addr HOST:PORT --requests FILE --rate R --duration S --connections C
 *                  [--arrivals poisson|uniform] [--pick fifo|lifo] [--seed N] [--timeout S] [--slow-ms MS]
 * FILE holds one or more complete HTTP/1.1 requests separated by NUL bytes, sent in turn.
 * Prints one line: OPEN_LOOP_JSON {...} (the fields of wrk's summary the bench reads, plus
 * "late": requests that found no free connection at their time, and "in_window": the answers that
 * came by the end of the run's duration, as wrk counts them; "requests" counts every answer, the
 * ones that came later, up to --timeout after it, too, and their latencies are in the percentiles,
 * read to 1 µs up to 2.1 s and to 1 ms beyond). With --slow-ms, "slow" groups
 * the requests at least that slow by when they were scheduled (gaps under 50 ms: one episode): a
 * stall of the target is one large episode, queueing many small ones.
 *
 * A request goes out on the free connection that has been free longest (--pick fifo, the default),
 * so a rate below what the connections could carry is spread over all of them, as wrk's
 * connections and a closed loop spread it. With --pick lifo it takes the one freed last, as an
 * HTTP client's keep-alive pool usually does: a light load then stays on a few connections, and a
 * server that owns each connection in one of several processes gets most of it in one of them.
 *
 * Answers are read by content-length or chunked framing; 1xx interim answers are skipped. A
 * close-delimited or malformed answer counts as a read error and the connection is replaced.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define HIST_US (1 << 21) /* 1 µs buckets up to about 2.1 s, then hist_ms */
#define HIST_MS (600 * 1000) /* 1 ms buckets up to 10 min; longer latencies land in the last (max is exact) */
#define TIMER_TAG UINT64_MAX

typedef struct {
  const char *data;
  size_t len;
} request_t;

typedef struct {
  int fd;
  int busy;          /* a request is out on it */
  int64_t intended;  /* the request's scheduled time, ns */
  const request_t *req;
  size_t written;    /* bytes of req written so far */
  char *buf;
  size_t len, cap;
} conn_t;

static struct sockaddr_storage addr;
static socklen_t addr_len;
static int ep;
static request_t *reqs;
static size_t nreqs, next_req;
static conn_t *conns;
static int nconns;
static int *idle;  /* the free connections: a ring or a stack (--pick) */
static int nidle;
/* --pick fifo: the free connections are a ring from idle_head; lifo: a stack. */
static int pick_lifo, idle_head;
static int64_t *backlog; /* scheduled times waiting for a connection (ring) */
static size_t backlog_cap, backlog_head, backlog_len;
static uint32_t *hist, *hist_ms;
static uint64_t completed, in_window, non2xx, late, err_connect, err_read, err_write, err_timeout, inflight;
static double latency_sum_us;
static uint64_t latency_max_us;
static int64_t t_start, t_end;
/* --slow-ms: requests at least this slow, kept to be grouped into episodes at the end (0: off). */
static int64_t slow_us;
typedef struct {
  int64_t at_us;   /* scheduled time, from the start */
  int64_t took_us; /* latency */
} slow_t;
static slow_t *slow;
static size_t nslow, slow_cap;
#define SLOW_MAX (1 << 20)
#define EPISODE_GAP_US 50000 /* slow requests scheduled closer than this belong to one episode */
#define EPISODES_SHOWN 20

static void die(const char *what) {
  fprintf(stderr, "open-loop: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void usage(const char *msg) {
  fprintf(stderr, "open-loop: %s\nusage: open-loop --addr HOST:PORT --requests FILE --rate R --duration S --connections C "
                  "[--arrivals poisson|uniform] [--seed N] [--timeout S] [--slow-ms MS]\n", msg);
  exit(2);
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ULL;
static double uniform01(void) {
  /* xorshift64*: (0, 1] */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  uint64_t r = rng_state * 0x2545F4914F6CDD1DULL;
  return ((double)(r >> 11) + 1.0) / 9007199254740992.0;
}

static void resolve(const char *hostport) {
  char host[256];
  const char *colon = strrchr(hostport, ':');
  if (colon == NULL || colon == hostport || (size_t)(colon - hostport) >= sizeof host) usage("--addr must be HOST:PORT");
  memcpy(host, hostport, (size_t)(colon - hostport));
  host[colon - hostport] = 0;
  struct addrinfo hints = {0}, *res;
  hints.ai_socktype = SOCK_STREAM;
  int rc = getaddrinfo(host, colon + 1, &hints, &res);
  if (rc != 0) {
    fprintf(stderr, "open-loop: cannot resolve %s: %s\n", hostport, gai_strerror(rc));
    exit(1);
  }
  memcpy(&addr, res->ai_addr, res->ai_addrlen);
  addr_len = res->ai_addrlen;
  freeaddrinfo(res);
}

static void load_requests(const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) die(path);
  struct stat st;
  if (fstat(fileno(f), &st) != 0) die(path);
  char *all = malloc((size_t)st.st_size + 1);
  if (all == NULL || fread(all, 1, (size_t)st.st_size, f) != (size_t)st.st_size) die(path);
  fclose(f);
  all[st.st_size] = 0;
  size_t cap = 8;
  reqs = malloc(cap * sizeof *reqs);
  for (size_t at = 0; at < (size_t)st.st_size;) {
    size_t len = strlen(all + at);
    if (len > 0) {
      if (nreqs == cap) reqs = realloc(reqs, (cap *= 2) * sizeof *reqs);
      reqs[nreqs].data = all + at;
      reqs[nreqs].len = len;
      nreqs++;
    }
    at += len + 1;
  }
  if (nreqs == 0) usage("the requests file holds no request");
}

static void watch(int fd, uint32_t events, uint64_t tag, int op) {
  struct epoll_event ev = {.events = events, .data.u64 = tag};
  if (epoll_ctl(ep, op, fd, &ev) != 0) die("epoll_ctl");
}

static void close_conn(int i) {
  if (conns[i].fd >= 0) {
    epoll_ctl(ep, EPOLL_CTL_DEL, conns[i].fd, NULL);
    close(conns[i].fd);
  }
  conns[i].fd = -1;
  conns[i].busy = 0;
  conns[i].len = 0;
}

/* Connects connection i (blocking, then non-blocking); on failure counts a connect error. */
static int open_conn(int i) {
  int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("socket");
  if (connect(fd, (struct sockaddr *)&addr, addr_len) != 0) {
    close(fd);
    err_connect++;
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) die("fcntl");
  conns[i].fd = fd;
  conns[i].busy = 0;
  conns[i].len = 0;
  watch(fd, EPOLLIN, (uint64_t)i, EPOLL_CTL_ADD);
  return 0;
}

/* The next free connection (nidle > 0). */
static int take_idle(void) {
  if (pick_lifo) return idle[--nidle];
  int i = idle[idle_head];
  idle_head = (idle_head + 1) % nconns;
  nidle--;
  return i;
}

static void make_idle(int i) {
  if (!pick_lifo) {
    idle[(idle_head + nidle++) % nconns] = i;
    return;
  }
  idle[nidle++] = i;
}

static void backlog_push(int64_t t) {
  if (backlog_len == backlog_cap) {
    size_t cap = backlog_cap == 0 ? 1024 : backlog_cap * 2;
    int64_t *b = malloc(cap * sizeof *b);
    for (size_t k = 0; k < backlog_len; k++) b[k] = backlog[(backlog_head + k) % (backlog_cap == 0 ? 1 : backlog_cap)];
    free(backlog);
    backlog = b;
    backlog_cap = cap;
    backlog_head = 0;
  }
  backlog[(backlog_head + backlog_len) % backlog_cap] = t;
  backlog_len++;
}

static int64_t backlog_pop(void) {
  int64_t t = backlog[backlog_head];
  backlog_head = (backlog_head + 1) % backlog_cap;
  backlog_len--;
  return t;
}

static void fail_request(int i, uint64_t *counter);

/* Writes what is left of connection i's request; waits for EPOLLOUT when the socket is full. */
static void flush_request(int i) {
  conn_t *c = &conns[i];
  while (c->written < c->req->len) {
    ssize_t n = write(c->fd, c->req->data + c->written, c->req->len - c->written);
    if (n > 0) {
      c->written += (size_t)n;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      watch(c->fd, EPOLLIN | EPOLLOUT, (uint64_t)i, EPOLL_CTL_MOD);
      return;
    }
    fail_request(i, &err_write);
    return;
  }
}

static void send_on(int i, int64_t intended) {
  conn_t *c = &conns[i];
  c->busy = 1;
  c->intended = intended;
  c->req = &reqs[next_req];
  next_req = (next_req + 1) % nreqs;
  c->written = 0;
  inflight++;
  flush_request(i);
}

/*
 * Hands a due request to a free connection, or to the backlog when none is free. A free
 * connection that must be reopened and cannot be loses the request (counted as a connect error)
 * and stays free for the next one.
 */
static void dispatch(int64_t intended) {
  if (nidle == 0) {
    late++;
    backlog_push(intended);
    return;
  }
  int i = take_idle();
  if (conns[i].fd < 0 && open_conn(i) != 0) {
    make_idle(i);
    return;
  }
  send_on(i, intended);
}

/* A free connection takes the oldest waiting request, or goes back to the idle stack. */
static void release(int i) {
  if (backlog_len > 0 && (conns[i].fd >= 0 || open_conn(i) == 0)) send_on(i, backlog_pop());
  else make_idle(i);
}

/* The request out on connection i is lost: counted, the connection closed and free (reopened when next used). */
static void fail_request(int i, uint64_t *counter) {
  (*counter)++;
  if (conns[i].busy) inflight--;
  close_conn(i);
  make_idle(i);
}

static int64_t parse_hex(const char *p, const char *end, const char **after) {
  int64_t v = 0;
  int digits = 0;
  while (p < end) {
    char ch = *p;
    int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
    if (d < 0) break;
    if (++digits > 15) return -2;
    v = v * 16 + d;
    p++;
  }
  *after = p;
  return digits == 0 ? -2 : v;
}

/* The value of header `name` (lowercase, with its colon) in head[0..len), or NULL. */
static const char *header_value(const char *head, size_t len, const char *name, size_t name_len) {
  for (const char *p = head; p + name_len + 1 < head + len; p++) {
    if (p[0] == '\n' && strncasecmp(p + 1, name, name_len) == 0) {
      const char *v = p + 1 + name_len;
      while (*v == ' ' || *v == '\t') v++;
      return v;
    }
  }
  return NULL;
}

/*
 * Length of the complete answer at the start of buf[0..len): > 0 when complete, 0 when more bytes
 * are needed, -1 when malformed or close-delimited. *status gets the status code.
 */
static int64_t answer_length(const char *buf, size_t len, int *status) {
  const char *end = memmem(buf, len, "\r\n\r\n", 4);
  if (end == NULL) return len > 65536 ? -1 : 0;
  size_t head_len = (size_t)(end - buf) + 4;
  if (len < 12 || memcmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ') return -1;
  int code = 0;
  for (int k = 9; k < 12; k++) {
    if (buf[k] < '0' || buf[k] > '9') return -1;
    code = code * 10 + (buf[k] - '0');
  }
  *status = code;
  if (code >= 100 && code < 200) return (int64_t)head_len;
  const char *cl = header_value(buf, head_len, "content-length:", 15);
  if (cl != NULL) {
    int64_t n = 0;
    int digits = 0;
    while (*cl >= '0' && *cl <= '9') {
      if (++digits > 15) return -1;
      n = n * 10 + (*cl++ - '0');
    }
    if (digits == 0) return -1;
    return len >= head_len + (size_t)n ? (int64_t)(head_len + (size_t)n) : 0;
  }
  const char *te = header_value(buf, head_len, "transfer-encoding:", 18);
  if (te == NULL || strncasecmp(te, "chunked", 7) != 0) return code == 204 || code == 304 ? (int64_t)head_len : -1;
  const char *p = buf + head_len, *stop = buf + len;
  for (;;) {
    const char *after;
    const char *line_end = memmem(p, (size_t)(stop - p), "\r\n", 2);
    if (line_end == NULL) return 0;
    int64_t size = parse_hex(p, line_end, &after);
    if (size < 0) return -1;
    p = line_end + 2;
    if (size == 0) {
      /* trailers, if any, then the blank line */
      for (;;) {
        const char *e = memmem(p, (size_t)(stop - p), "\r\n", 2);
        if (e == NULL) return 0;
        if (e == p) return (int64_t)(e + 2 - buf);
        p = e + 2;
      }
    }
    if ((size_t)(stop - p) < (size_t)size + 2) return 0;
    p += size;
    if (p[0] != '\r' || p[1] != '\n') return -1;
    p += 2;
  }
}

static void complete(int i, int status, int64_t t) {
  conn_t *c = &conns[i];
  int64_t us = (t - c->intended) / 1000;
  if (us < 0) us = 0;
  if (us < HIST_US) hist[us]++;
  else hist_ms[us / 1000 < HIST_MS ? us / 1000 : HIST_MS - 1]++;
  latency_sum_us += (double)us;
  if ((uint64_t)us > latency_max_us) latency_max_us = (uint64_t)us;
  completed++;
  if (t <= t_end) in_window++; /* the rate is what was answered within the run, as wrk counts it */
  if (slow_us > 0 && us >= slow_us && nslow < SLOW_MAX) {
    if (nslow == slow_cap) {
      slow_cap = slow_cap == 0 ? 1024 : slow_cap * 2;
      slow = realloc(slow, slow_cap * sizeof *slow);
      if (slow == NULL) die("realloc");
    }
    slow[nslow].at_us = (c->intended - t_start) / 1000;
    slow[nslow].took_us = us;
    nslow++;
  }
  if (status < 200 || status > 399) non2xx++;
  c->busy = 0;
  inflight--;
  release(i);
}

static void on_readable(int i) {
  conn_t *c = &conns[i];
  for (;;) {
    if (c->cap - c->len < 16384) {
      c->cap = c->cap == 0 ? 65536 : c->cap * 2;
      c->buf = realloc(c->buf, c->cap);
      if (c->buf == NULL) die("realloc");
    }
    size_t room = c->cap - c->len;
    ssize_t n = read(c->fd, c->buf + c->len, room);
    if (n > 0) {
      c->len += (size_t)n;
      if ((size_t)n < room) break; /* drained: epoll (level-triggered) says when there is more */
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    /* closed or failed: a request out on it is lost */
    if (c->busy) fail_request(i, &err_read);
    else close_conn(i); /* an idle connection the server closed: reopened when next used */
    return;
  }
  int64_t t = now_ns();
  while (c->len > 0) {
    int status = 0;
    int64_t n = answer_length(c->buf, c->len, &status);
    if (n == 0) return;
    if (n < 0 || !c->busy) {
      fail_request(i, &err_read);
      return;
    }
    memmove(c->buf, c->buf + n, c->len - (size_t)n);
    c->len -= (size_t)n;
    if (status >= 100 && status < 200) continue;
    complete(i, status, t);
    if (c->len > 0) {
      fail_request(i, &err_read); /* bytes beyond the answer: not ours */
      return;
    }
  }
}

static int by_time(const void *a, const void *b) {
  int64_t x = ((const slow_t *)a)->at_us, y = ((const slow_t *)b)->at_us;
  return x < y ? -1 : x > y;
}

typedef struct {
  int64_t at_us, end_us, max_us;
  uint64_t requests;
} episode_t;

static int by_requests(const void *a, const void *b) {
  uint64_t x = ((const episode_t *)a)->requests, y = ((const episode_t *)b)->requests;
  return x > y ? -1 : x < y;
}

/*
 * The slow requests grouped by when they were scheduled: a run of them with gaps under
 * EPISODE_GAP_US is one episode (a stall of the target shows as one, queueing as many small
 * ones). Printed as JSON, the largest EPISODES_SHOWN by requests, then in time order.
 */
static void print_episodes(void) {
  qsort(slow, nslow, sizeof *slow, by_time);
  episode_t *eps = malloc((nslow + 1) * sizeof *eps);
  size_t n = 0;
  for (size_t k = 0; k < nslow; k++) {
    if (n == 0 || slow[k].at_us - eps[n - 1].end_us >= EPISODE_GAP_US) {
      eps[n].at_us = eps[n].end_us = slow[k].at_us;
      eps[n].max_us = 0;
      eps[n].requests = 0;
      n++;
    }
    episode_t *e = &eps[n - 1];
    e->end_us = slow[k].at_us;
    if (slow[k].took_us > e->max_us) e->max_us = slow[k].took_us;
    e->requests++;
  }
  qsort(eps, n, sizeof *eps, by_requests);
  size_t shown = n < EPISODES_SHOWN ? n : EPISODES_SHOWN;
  qsort(eps, shown, sizeof *eps, by_time);
  printf(",\"slow\":{\"ms\":%.3f,\"requests\":%zu,\"episodes\":%zu,\"largest\":[", (double)slow_us / 1000, nslow, n);
  for (size_t k = 0; k < shown; k++) {
    printf("%s{\"at_ms\":%.1f,\"span_ms\":%.1f,\"requests\":%llu,\"max_ms\":%.2f}", k == 0 ? "" : ",",
           (double)eps[k].at_us / 1000, (double)(eps[k].end_us - eps[k].at_us) / 1000, (unsigned long long)eps[k].requests,
           (double)eps[k].max_us / 1000);
  }
  printf("]}");
  free(eps);
}

static uint64_t percentile(double q) {
  uint64_t want = (uint64_t)ceil(q * (double)completed);
  if (want == 0) want = 1;
  uint64_t seen = 0;
  for (uint64_t us = 0; us < HIST_US; us++) {
    seen += hist[us];
    if (seen >= want) return us;
  }
  for (uint64_t ms = HIST_US / 1000; ms < HIST_MS; ms++) {
    seen += hist_ms[ms];
    if (seen >= want) return ms * 1000 < latency_max_us ? ms * 1000 : latency_max_us;
  }
  return latency_max_us;
}

static int have_pwait2 = 1;

/*
 * Waits for events until the monotonic time `wake` (ns): epoll_pwait2's nanosecond timeout where
 * the kernel has it (one system call), else a timerfd armed at `wake` (*armed: the time it is set
 * for, -1 when it fired). Returns the number of events, 0 on a timeout or an interrupt.
 */
static void arm(int tfd, int64_t at);
static int wait_events(int tfd, struct epoll_event *evs, int max, int64_t wake, int64_t *armed) {
  if (have_pwait2) {
    int64_t left = wake - now_ns();
    if (left < 0) left = 0;
    struct timespec ts = {.tv_sec = left / 1000000000LL, .tv_nsec = left % 1000000000LL};
    int n = epoll_pwait2(ep, evs, max, &ts, NULL);
    if (n >= 0) return n;
    if (errno == EINTR) return 0;
    if (errno != ENOSYS) die("epoll_pwait2");
    have_pwait2 = 0;
  }
  if (wake != *armed) {
    arm(tfd, wake);
    *armed = wake;
  }
  int n = epoll_wait(ep, evs, max, -1);
  if (n < 0) {
    if (errno == EINTR) return 0;
    die("epoll_wait");
  }
  return n;
}

static void arm(int tfd, int64_t at) {
  struct itimerspec its = {0};
  its.it_value.tv_sec = at / 1000000000LL;
  its.it_value.tv_nsec = at % 1000000000LL;
  if (its.it_value.tv_sec == 0 && its.it_value.tv_nsec == 0) its.it_value.tv_nsec = 1;
  if (timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL) != 0) die("timerfd_settime");
}

int main(int argc, char **argv) {
  const char *hostport = NULL, *file = NULL, *arrivals = "poisson";
  double rate = 0, duration = 0, timeout = 5;
  long connections = 0;
  for (int k = 1; k < argc; k++) {
    const char *a = argv[k];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      printf("usage: open-loop --addr HOST:PORT --requests FILE --rate R --duration S --connections C "
             "[--arrivals poisson|uniform] [--pick fifo|lifo] [--seed N] [--timeout S] [--slow-ms MS]\n");
      return 0;
    }
    if (k + 1 >= argc) usage("every option takes a value");
    const char *v = argv[++k];
    char *endp = NULL;
    if (strcmp(a, "--addr") == 0) hostport = v;
    else if (strcmp(a, "--requests") == 0) file = v;
    else if (strcmp(a, "--arrivals") == 0) {
      if (strcmp(v, "poisson") != 0 && strcmp(v, "uniform") != 0) usage("--arrivals is poisson or uniform");
      arrivals = v;
    } else if (strcmp(a, "--rate") == 0) {
      rate = strtod(v, &endp);
      if (*endp != 0 || !(rate > 0)) usage("--rate must be a positive number");
    } else if (strcmp(a, "--duration") == 0) {
      duration = strtod(v, &endp);
      if (*endp != 0 || !(duration > 0)) usage("--duration must be a positive number of seconds");
    } else if (strcmp(a, "--pick") == 0) {
      if (strcmp(v, "fifo") != 0 && strcmp(v, "lifo") != 0) usage("--pick is fifo or lifo");
      pick_lifo = strcmp(v, "lifo") == 0;
    } else if (strcmp(a, "--timeout") == 0) {
      timeout = strtod(v, &endp);
      if (*endp != 0 || !(timeout > 0)) usage("--timeout must be a positive number of seconds");
    } else if (strcmp(a, "--slow-ms") == 0) {
      double ms = strtod(v, &endp);
      if (*endp != 0 || !(ms > 0)) usage("--slow-ms must be a positive number of milliseconds");
      slow_us = (int64_t)(ms * 1000);
    } else if (strcmp(a, "--connections") == 0) {
      connections = strtol(v, &endp, 10);
      if (*endp != 0 || connections < 1 || connections > 100000) usage("--connections must be 1 to 100000");
    } else if (strcmp(a, "--seed") == 0) {
      unsigned long long seed = strtoull(v, &endp, 10);
      if (*endp != 0) usage("--seed must be a whole number");
      rng_state = seed * 0x9E3779B97F4A7C15ULL + 1;
    } else usage("unknown option");
  }
  if (hostport == NULL || file == NULL || rate == 0 || duration == 0 || connections == 0)
    usage("--addr, --requests, --rate, --duration and --connections are required");
  resolve(hostport);
  load_requests(file);
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

  ep = epoll_create1(EPOLL_CLOEXEC);
  if (ep < 0) die("epoll_create1");
  int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (tfd < 0) die("timerfd_create");
  watch(tfd, EPOLLIN, TIMER_TAG, EPOLL_CTL_ADD);
  nconns = (int)connections;
  conns = calloc((size_t)nconns, sizeof *conns);
  idle = malloc((size_t)nconns * sizeof *idle);
  hist = calloc(HIST_US, sizeof *hist);
  hist_ms = calloc(HIST_MS, sizeof *hist_ms);
  if (conns == NULL || idle == NULL || hist == NULL || hist_ms == NULL) die("calloc");
  for (int i = nconns - 1; i >= 0; i--) {
    conns[i].fd = -1;
    if (open_conn(i) != 0) {
      fprintf(stderr, "open-loop: cannot connect to %s: %s\n", hostport, strerror(errno));
      return 1;
    }
    make_idle(i);
  }

  int uniform = strcmp(arrivals, "uniform") == 0;
  double gap_ns = 1e9 / rate;
  t_start = now_ns() + 1000000; /* 1 ms to settle */
  t_end = t_start + (int64_t)(duration * 1e9);
  double next = (double)t_start;
  int64_t give_up = t_end + (int64_t)(timeout * 1e9);
  struct epoll_event evs[256];
  int64_t armed = -1;
  for (;;) {
    int64_t t = now_ns();
    while (next < (double)t_end && next <= (double)t) {
      dispatch((int64_t)next);
      next += uniform ? gap_ns : -log(uniform01()) * gap_ns;
    }
    /* Requests that waited while connections failed go out on those freed since. */
    while (backlog_len > 0 && nidle > 0) {
      int i = take_idle();
      if (conns[i].fd < 0 && open_conn(i) != 0) {
        make_idle(i);
        break;
      }
      send_on(i, backlog_pop());
    }
    int sending = next < (double)t_end;
    if (!sending && inflight == 0 && backlog_len == 0) break;
    if (t >= give_up) {
      err_timeout += inflight + backlog_len;
      break;
    }
    int64_t wake = sending ? (int64_t)next : give_up;
    int n = wait_events(tfd, evs, 256, wake, &armed);
    for (int k = 0; k < n; k++) {
      uint64_t tag = evs[k].data.u64;
      if (tag == TIMER_TAG) {
        uint64_t expirations;
        if (read(tfd, &expirations, sizeof expirations) < 0 && errno != EAGAIN) die("read timerfd");
        armed = -1;
        continue;
      }
      int i = (int)tag;
      if (conns[i].fd < 0) continue;
      if (evs[k].events & EPOLLOUT) {
        if (conns[i].busy && conns[i].written < conns[i].req->len) flush_request(i);
        if (conns[i].fd >= 0 && conns[i].written >= conns[i].req->len) watch(conns[i].fd, EPOLLIN, (uint64_t)i, EPOLL_CTL_MOD);
      }
      if (conns[i].fd >= 0 && (evs[k].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) on_readable(i);
    }
  }
  double seconds = duration;
  printf("OPEN_LOOP_JSON {\"requests\":%llu,\"in_window\":%llu,\"duration_us\":%lld,\"errors\":{\"connect\":%llu,\"read\":%llu,\"write\":%llu,"
         "\"status\":%llu,\"timeout\":%llu},\"latency_us\":{\"mean\":%.3f,\"max\":%llu,\"p50\":%llu,\"p99\":%llu,\"p999\":%llu},"
         "\"late\":%llu,\"arrivals\":\"%s\",\"start_monotonic_ns\":%lld",
         (unsigned long long)completed, (unsigned long long)in_window, (long long)(seconds * 1e6), (unsigned long long)err_connect,
         (unsigned long long)err_read, (unsigned long long)err_write, (unsigned long long)non2xx,
         (unsigned long long)err_timeout, completed == 0 ? 0.0 : latency_sum_us / (double)completed,
         (unsigned long long)latency_max_us, (unsigned long long)percentile(0.50), (unsigned long long)percentile(0.99),
         (unsigned long long)percentile(0.999), (unsigned long long)late, arrivals, (long long)t_start);
  if (slow_us > 0) print_episodes();
  printf("}\n");
  return 0;
}
