#include "pool.h"

#define PB_POOL_MIN(a, b) ((a) < (b) ? (a) : (b))

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

int pb_pool_init(pb_pool *p, int count, size_t buf_bytes, size_t align) {
  return pb_pool_init_mem(p, count, buf_bytes, align, NULL);
}

int pb_pool_init_mem(pb_pool *p, int count, size_t buf_bytes, size_t align, const pb_pool_mem *mem) {
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

void pb_pool_close(pb_pool *p) {
  for (int i = 0; p->bufs && i < p->count; i++) mem_free(p, p->bufs[i].data);
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

int pb_buf_grow(pb_buf *b, size_t bytes, size_t keep_bytes) {
  if (b->capacity_bytes >= bytes && b->data) return 0;
  size_t align = b->pool->align;
  /* Grown to a size class, not to the byte, and at least to the largest its pool has needed so far.
   * Samples of varying size would otherwise grow each buffer again and again by a few bytes, and every
   * freed, slightly smaller block is a hole that no later (larger) request fits, so the heap crept up for
   * the whole run (found by bench/soak.py).  Now a buffer grows at most once more after its pool has met
   * its largest sample. */
  bytes = pb_buf_size_class(bytes);
  size_t largest = atomic_load_explicit(&b->pool->largest_bytes, memory_order_relaxed);
  if (largest > bytes) bytes = largest;
  while (bytes > largest &&
         !atomic_compare_exchange_weak_explicit(&b->pool->largest_bytes, &largest, bytes, memory_order_relaxed,
                                                memory_order_relaxed)) {
  }
  size_t rounded = (bytes + align - 1) / align * align; /* aligned_alloc wants a multiple */
  void *data = mem_alloc(b->pool, rounded ? rounded : align);
  if (!data) return -ENOMEM;
  if (keep_bytes && b->data) memcpy(data, b->data, PB_POOL_MIN(keep_bytes, b->capacity_bytes));
  mem_free(b->pool, b->data);
  b->data = data;
  b->capacity_bytes = bytes;
  return 0;
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
