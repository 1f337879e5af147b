/* A pool of equal-sized, aligned buffers allocated once before the run.
 * Taking one when none is free waits (that wait is backpressure, counted as blocked-out time by the
 * caller); cancellation wakes the waiters.  Buffers go back with pb_buf_release from any thread. */
#ifndef PB_POOL_H
#define PB_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

typedef struct pb_pool pb_pool;

/* Where a pool's buffers come from when not from aligned_alloc (pinned host memory on a GPU). alloc
 * returns memory aligned at least to a page, or NULL. */
typedef struct pb_pool_mem {
  void *(*alloc)(void *ctx, size_t bytes);
  void (*free)(void *ctx, void *p);
  void *ctx;
} pb_pool_mem;

/* Memory a run allows past its plan, shared by the pools of a run: a buffer grown beyond its pool's planned
 * size (an image larger than any the plan saw) takes the excess from here, and gives it back on release, so
 * the pooled memory never passes limits.max_memory_mb whatever the samples turn out to be. */
typedef struct pb_mem_budget {
  _Atomic uint64_t over_plan_bytes; /* live now */
  uint64_t allowed_bytes;           /* the most over_plan_bytes may reach */
} pb_mem_budget;

typedef struct pb_buf {
  pb_pool *pool;
  void *data;
  size_t capacity_bytes;
  struct pb_buf *next_free;
} pb_buf;

struct pb_pool {
  uv_mutex_t lock;
  uv_cond_t available;
  pb_buf *bufs;
  int count, free_count, waiting;
  pb_buf *free_list;
  bool cancelled;
  size_t buf_bytes;
  size_t align;
  _Atomic size_t largest_bytes; /* the largest capacity any of its buffers grew to (pb_buf_grow) */
  size_t plan_bytes;            /* 0, or the size the memory plan counted per buffer (pb_pool_plan) */
  pb_mem_budget *budget;        /* where a buffer past plan_bytes takes the excess (NULL: none allowed) */
  pb_pool_mem mem;              /* alloc NULL: aligned_alloc/free */
};

/* count buffers of buf_bytes each, aligned to `align` (a power of two >= sizeof(void*)).  buf_bytes 0
 * makes growable buffers allocated on first use (pb_buf_reserve): for payloads whose size varies, the
 * buffers grow to the largest payload during warm-up and are reused from then on. */
int pb_pool_init(pb_pool *p, int count, size_t buf_bytes, size_t align);
/* The same with buffers from `mem` (NULL: the default allocator). */
int pb_pool_init_mem(pb_pool *p, int count, size_t buf_bytes, size_t align, const pb_pool_mem *mem);
/* Bounds a pool of growable buffers by the memory plan: buffers grow to a common size (see pb_buf_grow) only
 * up to plan_bytes; one that must hold more takes the excess from `budget` for as long as it holds it
 * (its memory is freed on release, so the excess is not kept), and when the budget cannot cover it the
 * reserve fails with -E2BIG instead of allocating.  Call before the first buffer is used. */
void pb_pool_plan(pb_pool *p, size_t plan_bytes, pb_mem_budget *budget);
/* Makes b hold at least `bytes` (its contents are not kept).  0, -ENOMEM, or -E2BIG for a buffer past its
 * pool's plan that the run's memory budget cannot cover. */
int pb_buf_reserve(pb_buf *b, size_t bytes);
/* The same, keeping the first keep_bytes of its contents. */
int pb_buf_grow(pb_buf *b, size_t bytes, size_t keep_bytes);
/* The capacity a buffer grows to for `bytes`: up to 4 KB exact, above it rounded up to an eighth of the
 * power of two below (at most 12.5 % more), so buffers holding samples of varying size settle on a few
 * sizes. */
size_t pb_buf_size_class(size_t bytes);
/* Tells a pool of growable buffers the size its payloads will need (e.g. the largest file of a dataset
 * read whole): buffers then get it at their first use instead of growing to it one sample at a time. */
void pb_pool_expect(pb_pool *p, size_t bytes);
void pb_pool_close(pb_pool *p);
/* memcpy for a large payload whose destination this core will not read again soon (a batch being
 * collated): above 64 KiB it stores around the cache (non-temporal stores), so the destination's lines
 * are neither read from memory first nor left to evict the source.  Ends with a store fence, so a queue
 * hand-off after it publishes the bytes as a memcpy's would. */
void pb_copy_streaming(void *dst, const void *src, size_t bytes);
/* A free buffer, waiting for one if needed; NULL once the pool is cancelled. */
pb_buf *pb_pool_get(pb_pool *p);
/* A free buffer or NULL right away. */
pb_buf *pb_pool_try_get(pb_pool *p);
/* Returns b to its pool; NULL is ignored (elements whose payload is shared carry no buffer). */
void pb_buf_release(pb_buf *b);
void pb_pool_cancel(pb_pool *p);
int pb_pool_free_count(pb_pool *p);

#endif
