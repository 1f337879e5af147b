#include "pool.h"

#define PB_POOL_MIN(a, b) ((a) < (b) ? (a) : (b))

#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

/* Large blocks straight from mmap, and back to the kernel when freed: glibc otherwise raises its mmap
 * threshold to the size of each large block freed (up to 32 MB), after which such blocks come from the heap
 * and a freed one stays in the process, so a pool that let an outsized sample go kept its memory. */
static void fix_mmap_threshold(void) { mallopt(M_MMAP_THRESHOLD, 1 << 20); }

static uv_once_t mmap_threshold_once = UV_ONCE_INIT;

int pb_pool_init(pb_pool *p, int count, size_t buf_bytes, size_t align) {
  return pb_pool_init_mem(p, count, buf_bytes, align, NULL);
}

int pb_pool_init_mem(pb_pool *p, int count, size_t buf_bytes, size_t align, const pb_pool_mem *mem) {
  uv_once(&mmap_threshold_once, fix_mmap_threshold);
  memset(p, 0, sizeof *p);
  if (mem) p->mem = *mem;
  uv_mutex_init(&p->lock);
  uv_cond_init(&p->available);
  p->bufs = calloc((size_t)count, sizeof *p->bufs);
  if (!p->bufs) {
    pb_pool_close(p);
    return -ENOMEM;
  }
  p->count = count;
  p->buf_bytes = buf_bytes;
  p->align = align;
  for (int i = 0; i < count; i++) {
    p->bufs[i] = (pb_buf){.pool = p};
    if (buf_bytes && pb_buf_reserve(&p->bufs[i], buf_bytes)) {
      pb_pool_close(p);
      return -ENOMEM;
    }
    p->bufs[i].next_free = p->free_list;
    p->free_list = &p->bufs[i];
  }
  p->free_count = count;
  return 0;
}

static void *mem_alloc(pb_pool *p, size_t bytes) {
  if (p->mem.alloc) return p->mem.alloc(p->mem.ctx, bytes);
  return aligned_alloc(p->align, bytes);
}

static void mem_free(pb_pool *p, void *data) {
  if (p->mem.alloc)
    p->mem.free(p->mem.ctx, data);
  else
    free(data);
}

static size_t over_plan(const pb_pool *p, size_t capacity_bytes);
static bool budget_take(pb_pool *p, int64_t delta);

void pb_pool_close(pb_pool *p) {
  for (int i = 0; p->bufs && i < p->count; i++) {
    if (p->bufs[i].data) budget_take(p, -(int64_t)over_plan(p, p->bufs[i].capacity_bytes));
    mem_free(p, p->bufs[i].data);
  }
  free(p->bufs);
  p->bufs = NULL;
  uv_cond_destroy(&p->available);
  uv_mutex_destroy(&p->lock);
}

size_t pb_buf_size_class(size_t bytes) {
  if (bytes <= 4096) return bytes;
  size_t pow2 = 4096; /* the power of two below bytes */
  while (pow2 * 2 < bytes) pow2 *= 2;
  size_t step = pow2 / 8;
  return (bytes + step - 1) / step * step;
}

void pb_pool_expect(pb_pool *p, size_t bytes) {
  atomic_store_explicit(&p->largest_bytes, pb_buf_size_class(bytes), memory_order_relaxed);
}

void pb_pool_plan(pb_pool *p, size_t plan_bytes, pb_mem_budget *budget) {
  p->plan_bytes = plan_bytes ? pb_buf_size_class(plan_bytes) : 0;
  p->budget = budget;
}

/* The part of a capacity past the plan. */
static size_t over_plan(const pb_pool *p, size_t capacity_bytes) {
  return p->plan_bytes && capacity_bytes > p->plan_bytes ? capacity_bytes - p->plan_bytes : 0;
}

/* Takes (delta > 0) or gives back (delta < 0) memory past the plan; false when the budget cannot cover it. */
static bool budget_take(pb_pool *p, int64_t delta) {
  if (delta == 0) return true;
  pb_mem_budget *m = p->budget;
  if (!m) return delta < 0;
  uint64_t now = atomic_load_explicit(&m->over_plan_bytes, memory_order_relaxed), next;
  do {
    next = now + (uint64_t)delta; /* wraps as intended for a negative delta */
    if (delta > 0 && next > m->allowed_bytes) return false;
  } while (!atomic_compare_exchange_weak_explicit(&m->over_plan_bytes, &now, next, memory_order_relaxed,
                                                  memory_order_relaxed));
  return true;
}

/* The capacity to allocate for `bytes`: a size class, and at least the largest its pool has needed so far
 * (up to the plan; past it, just the size class). */
static size_t grown_capacity(pb_pool *p, size_t bytes) {
  bytes = pb_buf_size_class(bytes);
  if (p->plan_bytes && bytes > p->plan_bytes) return bytes;
  size_t largest = atomic_load_explicit(&p->largest_bytes, memory_order_relaxed);
  if (largest > bytes) return largest;
  while (bytes > largest &&
         !atomic_compare_exchange_weak_explicit(&p->largest_bytes, &largest, bytes, memory_order_relaxed,
                                                memory_order_relaxed)) {
  }
  return bytes;
}

int pb_buf_grow(pb_buf *b, size_t bytes, size_t keep_bytes) {
  if (b->capacity_bytes >= bytes && b->data) return 0;
  pb_pool *p = b->pool;
  size_t align = p->align;
  /* Grown to a size class, not to the byte, and at least to the largest its pool has needed so far.
   * Samples of varying size would otherwise grow each buffer again and again by a few bytes, and every
   * freed, slightly smaller block is a hole that no later (larger) request fits, so the heap crept up for
   * the whole run (found by bench/soak.py).  Now a buffer grows at most once more after its pool has met
   * its largest sample. */
  bytes = grown_capacity(p, bytes);
  int64_t excess = (int64_t)over_plan(p, bytes) - (int64_t)over_plan(p, b->data ? b->capacity_bytes : 0);
  if (!budget_take(p, excess)) return -E2BIG;
  size_t rounded = (bytes + align - 1) / align * align; /* aligned_alloc wants a multiple */
  void *data = mem_alloc(p, rounded ? rounded : align);
  if (!data) {
    budget_take(p, -excess);
    return -ENOMEM;
  }
  if (keep_bytes && b->data) memcpy(data, b->data, PB_POOL_MIN(keep_bytes, b->capacity_bytes));
  mem_free(p, b->data);
  b->data = data;
  b->capacity_bytes = bytes;
  return 0;
}

/* A buffer past its pool's plan goes back empty: the excess returns to the budget (and to the kernel). */
static void shrink_to_plan(pb_buf *b) {
  size_t excess = over_plan(b->pool, b->capacity_bytes);
  if (!excess || !b->data) return;
  mem_free(b->pool, b->data);
  b->data = NULL;
  b->capacity_bytes = 0;
  budget_take(b->pool, -(int64_t)excess);
}

int pb_buf_reserve(pb_buf *b, size_t bytes) { return pb_buf_grow(b, bytes, 0); }

static pb_buf *take_locked(pb_pool *p) {
  pb_buf *b = p->free_list;
  p->free_list = b->next_free;
  b->next_free = NULL;
  p->free_count--;
  return b;
}

pb_buf *pb_pool_get(pb_pool *p) {
  pb_buf *b = NULL;
  uv_mutex_lock(&p->lock);
  while (!p->free_list && !p->cancelled) {
    p->waiting++;
    pb_thread_waits++;
    uv_cond_wait(&p->available, &p->lock);
    p->waiting--;
  }
  if (!p->cancelled) b = take_locked(p);
  uv_mutex_unlock(&p->lock);
  return b;
}

pb_buf *pb_pool_try_get(pb_pool *p) {
  pb_buf *b = NULL;
  uv_mutex_lock(&p->lock);
  if (p->free_list && !p->cancelled) b = take_locked(p);
  uv_mutex_unlock(&p->lock);
  return b;
}

void pb_buf_release(pb_buf *b) {
  if (!b) return;
  pb_pool *p = b->pool;
  shrink_to_plan(b);
  uv_mutex_lock(&p->lock);
  b->next_free = p->free_list;
  p->free_list = b;
  p->free_count++;
  if (p->waiting) uv_cond_signal(&p->available);
  uv_mutex_unlock(&p->lock);
}

void pb_pool_cancel(pb_pool *p) {
  uv_mutex_lock(&p->lock);
  p->cancelled = true;
  uv_cond_broadcast(&p->available);
  uv_mutex_unlock(&p->lock);
}

int pb_pool_free_count(pb_pool *p) {
  uv_mutex_lock(&p->lock);
  int n = p->free_count;
  uv_mutex_unlock(&p->lock);
  return n;
}

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>

void pb_copy_streaming(void *dst, const void *src, size_t bytes) {
  if (bytes < (64u << 10)) {
    memcpy(dst, src, bytes);
    return;
  }
  uint8_t *d = dst;
  const uint8_t *s = src;
  size_t head = (16u - ((uintptr_t)d & 15u)) & 15u; /* streaming stores need 16-byte aligned targets */
  memcpy(d, s, head);
  d += head, s += head, bytes -= head;
  size_t n = bytes & ~(size_t)63;
  for (size_t i = 0; i < n; i += 64) {
    __m128i a = _mm_loadu_si128((const __m128i *)(s + i)), b = _mm_loadu_si128((const __m128i *)(s + i + 16));
    __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32)), e = _mm_loadu_si128((const __m128i *)(s + i + 48));
    _mm_stream_si128((__m128i *)(d + i), a);
    _mm_stream_si128((__m128i *)(d + i + 16), b);
    _mm_stream_si128((__m128i *)(d + i + 32), c);
    _mm_stream_si128((__m128i *)(d + i + 48), e);
  }
  memcpy(d + n, s + n, bytes - n);
  _mm_sfence(); /* non-temporal stores are weakly ordered: finish them before the buffer is handed on */
}
#else
void pb_copy_streaming(void *dst, const void *src, size_t bytes) { memcpy(dst, src, bytes); }
#endif
