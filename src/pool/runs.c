/* runs.c: page runs (see runs.h). Each run keeps its free slots on a list
 * linked through their first word, and hands out never-used slots in
 * order after those (`fresh`), so a new run touches only its header page
 * and the slots it gives. One mutex guards every run of an allocator. */
#include "pool/runs.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "prim/prim.h"
#include "tarn/status.h"

#if defined(__SANITIZE_ADDRESS__)
#define RUNS_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RUNS_OFF 1
#endif
#endif

/* The header, in the run's first page. */
struct run {
  struct run *prev, *next;         /* the class's open runs */
  struct run *all_prev, *all_next; /* every run of the allocator */
  size_t cap;                      /* slot bytes */
  size_t slots, used, fresh;       /* slots; in use; never handed out: from */
  void *free;                      /* freed slots */
};

struct tarn__runs {
  pthread_mutex_t lock;
  size_t page;
  struct run *open[RUNS_MAX_PAGES + 1]; /* by slot pages */
  struct run *all;
};

int tarn__runs_create(size_t page, tarn__runs **out) {
  *out = NULL;
#ifdef RUNS_OFF
  (void)page;
  return 0;
#else
  if (page == 0 || page * (8 * RUNS_MAX_PAGES + 1) > RUNS_BYTES) return 0;
  tarn__runs *r = calloc(1, sizeof *r);
  if (r == NULL) return TARN_ENOMEM;
  if (pthread_mutex_init(&r->lock, NULL) != 0) {
    free(r);
    return TARN_ENOMEM;
  }
  r->page = page;
  *out = r;
  return 0;
#endif
}

bool tarn__runs_serves(const tarn__runs *runs, size_t cap) {
  return runs != NULL && cap != 0 && cap % runs->page == 0 &&
         cap / runs->page <= RUNS_MAX_PAGES;
}

static void open_add(tarn__runs *a, struct run *r) {
  struct run **head = &a->open[r->cap / a->page];
  r->prev = NULL;
  r->next = *head;
  if (*head != NULL) (*head)->prev = r;
  *head = r;
}

static void open_remove(tarn__runs *a, struct run *r) {
  if (r->prev != NULL)
    r->prev->next = r->next;
  else
    a->open[r->cap / a->page] = r->next;
  if (r->next != NULL) r->next->prev = r->prev;
}

/* A new run of `cap`-byte slots, open and in the list of all, or NULL. */
static struct run *run_new(tarn__runs *a, size_t cap) {
  void *base = NULL;
  if (tarn__vm_map_aligned(RUNS_BYTES, RUNS_BYTES, &base) != 0) return NULL;
  struct run *r = base;
  *r = (struct run){.cap = cap, .slots = (RUNS_BYTES - a->page) / cap};
  r->all_next = a->all;
  if (a->all != NULL) a->all->all_prev = r;
  a->all = r;
  open_add(a, r);
  return r;
}

static void run_unmap(tarn__runs *a, struct run *r) {
  if (r->all_prev != NULL)
    r->all_prev->all_next = r->all_next;
  else
    a->all = r->all_next;
  if (r->all_next != NULL) r->all_next->all_prev = r->all_prev;
  tarn__vm_unreserve(r, RUNS_BYTES);
}

void *tarn__runs_alloc(tarn__runs *a, size_t cap) {
  pthread_mutex_lock(&a->lock);
  struct run *r = a->open[cap / a->page];
  if (r == NULL) r = run_new(a, cap);
  void *slot = NULL;
  if (r != NULL) {
    if (r->free != NULL) {
      slot = r->free;
      r->free = *(void **)slot;
    } else {
      slot = (char *)r + a->page + r->fresh * cap;
      r->fresh++;
    }
    if (++r->used == r->slots) open_remove(a, r);
  }
  pthread_mutex_unlock(&a->lock);
  return slot;
}

void tarn__runs_free(tarn__runs *a, void *buf) {
  struct run *r = (struct run *)((uintptr_t)buf & ~(uintptr_t)(RUNS_BYTES - 1));
  pthread_mutex_lock(&a->lock);
  *(void **)buf = r->free;
  r->free = buf;
  if (r->used-- == r->slots) open_add(a, r); /* it was full: open again */
  /* An empty run goes, unless it is the class's only open one (a buffer
   * freed and made again would map and unmap a run each time). */
  if (r->used == 0 && (r->prev != NULL || r->next != NULL)) {
    open_remove(a, r);
    run_unmap(a, r);
  }
  pthread_mutex_unlock(&a->lock);
}

void tarn__runs_destroy(tarn__runs *a) {
  if (a == NULL) return;
  while (a->all != NULL) run_unmap(a, a->all);
  pthread_mutex_destroy(&a->lock);
  free(a);
}
