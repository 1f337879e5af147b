/* Synthetic photographs (see synth_image.h).
 *
 * An image is a "dead leaves" scene - the classic model of natural-image statistics: opaque ellipses with
 * radii drawn from a density falling as r^-3, stacked until they cover the frame, which yields a 1/f amplitude
 * spectrum, sharp occlusion edges and scale invariance - lit and textured with noise pyramids:
 *   labels      which leaf (object) each pixel shows; each leaf has a luminance, a colour and a texture gain,
 *               varied around a small per-image palette so that colours cohere as in a real scene
 *   lum_coarse  shading: noise octaves of 8 px and coarser, plus the leaves' luminance after a 3x3 blur that
 *               gives their edges the 1-2 px roll-off a lens gives
 *   lum_fine    texture: octaves of 1 to 4 px, scaled per leaf (bark next to sky)
 *   cb, cr      smooth colour shading, octaves of 4 px and coarser, kept at half resolution
 * plus a little per-pixel sensor noise.  Each noise field is a pyramid: a random grid at the coarsest level,
 * upsampled by 2 (Chaikin's [1 3 3 1]/4 filter, which converges to a smooth quadratic B-spline) with fresh
 * noise added at every level; equal amplitude per octave is itself a 1/f amplitude spectrum.
 *
 * Amplitudes were tuned by measuring libjpeg-turbo sizes: 500x375 at q90 lands near 115 KB, and the q75 and q95
 * sizes relative to q90 match those of real, strongly textured photographs.
 *
 * Determinism: per-pixel work is integer.  Doubles only place leaves and their outlines, through +, -, *, /
 * and sqrt (IEEE-exact) and no transcendental libm call, so the pixels do not depend on the libm version; a
 * compiler that fuses multiply-adds (FMA) could move a double by an ulp, which changes a pixel only if a value
 * lands within that ulp of a rounding boundary.
 *
 * Integer ranges: fields stay within +-5000 field units (sum of the octave amplitudes plus a leaf's
 * luminance), so int16 storage and int32 arithmetic cannot overflow. */
#include "synth_image.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
  FP_SHIFT = 4,
  FP = 1 << FP_SHIFT, /* field units per grey level: int16 then spans +-2047 levels, far beyond 0..255 */
  GAIN_ONE = 256,  /* texture gain units: 256 = nominal strength */
  MAX_LEVELS = 18, /* 65500 px halves to <= 8 samples in 15 levels */
  FINE_TOP = 2,    /* lum_fine holds levels 0..2 (1..4 px) */
  COARSE_FROM = 3, /* lum_coarse levels 3 and up (8 px and coarser) */
  CHROMA_FROM = 2, /* chroma noise starts at 4 px: 4:2:0 subsampling would drop finer colour anyway */
  PALETTE_MAX = 6,
};

typedef struct pyramid {
  int levels; /* level 0 is full size; level l+1 is half of level l plus a 2-sample border for the filter */
  int w[MAX_LEVELS], h[MAX_LEVELS];
} pyramid;

typedef struct scratch {
  int16_t *lum_coarse, *lum_fine;           /* full size */
  int16_t *cb, *cr;                         /* pyramid level 1: half size (see compose_row) */
  uint32_t *labels;                         /* full size: leaf id per pixel, 0 = background */
  int16_t *ping, *pong;                     /* pyramid levels >= 1 */
  int16_t *tmp;                             /* one upsampling's (or the blur's) horizontal pass */
  void *block;                              /* the single allocation behind all of them */
} scratch;

/* What a leaf (or the background, leaf 0) looks like. */
typedef struct leaf_look {
  int16_t lum, cb, cr, gain; /* offsets in field units; gain in GAIN_ONE units */
  int16_t tex_cb, tex_cr;    /* chroma that follows the texture, / 256: a material's texture varies in hue too */
} leaf_look;

typedef struct leaves {
  leaf_look *look; /* indexed by label */
  uint32_t count, capacity;
  int32_t gain_scale; /* GAIN_ONE units: brings the frame's mean texture gain to look.texture */
} leaves;

/* One image's random "look": what varies between photographs besides the noise itself. */
typedef struct look {
  int mean_y;     /* mean luminance, field units */
  int coarse_amp; /* per shading octave */
  int fine_amp[FINE_TOP + 1];
  int chroma_amp; /* per chroma octave */
  int tint_cb, tint_cr;
  int corr_cb, corr_cr; /* chroma += luminance * corr / 256: shadows and lights take a colour cast */
  int sensor_amp;       /* per-pixel noise, field units */
  int texture;          /* overall texture gain, GAIN_ONE units */
  int palette_size;
  leaf_look palette[PALETTE_MAX];
} look;

/* ---- random helpers (pb_rng; doubles only through + - * / and sqrt, which IEEE makes exact) ---- */

static uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static double uniform(pb_rng *r, double lo, double hi) { return lo + (hi - lo) * pb_rng_uniform(r); }

static int uniform_int(pb_rng *r, int lo, int hi) { /* [lo, hi] */
  return lo + (int)(pb_rng_next(r) % (uint64_t)(hi - lo + 1));
}

static double triangular(pb_rng *r, double half_width) { /* -hw..hw, peaked at 0: a cheap near-gaussian */
  return half_width * (pb_rng_uniform(r) - pb_rng_uniform(r));
}

static int fp(double grey_levels) { return (int)(grey_levels * FP + (grey_levels < 0 ? -0.5 : 0.5)); }

static int16_t clamp16(double v) { return (int16_t)(v < -32000 ? -32000 : v > 32000 ? 32000 : v); }

/* Adds uniform noise in [-amp, amp) to n values, four 16-bit draws from each 64-bit number. */
static void add_noise(int16_t *p, size_t n, int amp, pb_rng *r) {
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    uint64_t x = pb_rng_next(r);
    for (int k = 0; k < 4; k++) {
      int32_t u = (int32_t)((x >> (16 * k)) & 0xFFFF) - 32768;
      p[i + k] = (int16_t)(p[i + k] + ((u * amp) >> 15));
    }
  }
  for (uint64_t x = pb_rng_next(r); i < n; i++, x >>= 16)
    p[i] = (int16_t)(p[i] + ((((int32_t)(x & 0xFFFF) - 32768) * amp) >> 15));
}

/* ---- pyramids ---- */

static void pyramid_sizes(pyramid *p, int w, int h) {
  p->w[0] = w;
  p->h[0] = h;
  p->levels = 1;
  /* Always a level 1: the chroma fields live there. */
  while (p->levels < 2 || (p->levels < MAX_LEVELS && PB_MAX(p->w[p->levels - 1], p->h[p->levels - 1]) > 8)) {
    int l = p->levels++;
    p->w[l] = (p->w[l - 1] + 1) / 2 + 2;
    p->h[l] = (p->h[l - 1] + 1) / 2 + 2;
  }
}

/* Horizontal half of the x2 upsampling: sample j of level l+1 sits at 2j - 1.5 in level l, so each output is
 * 3/4 of its nearer input and 1/4 of the farther one. */
static void upsample_rows(const int16_t *in, int iw, int ih, int16_t *out, int ow) {
  for (int y = 0; y < ih; y++) {
    const int16_t *s = in + (size_t)y * iw;
    int16_t *d = out + (size_t)y * ow;
    int j = 0;
    for (; 2 * j + 1 < ow; j++) {
      d[2 * j] = (int16_t)((s[j] + 3 * s[j + 1] + 2) >> 2);
      d[2 * j + 1] = (int16_t)((3 * s[j + 1] + s[j + 2] + 2) >> 2);
    }
    if (2 * j < ow) d[2 * j] = (int16_t)((s[j] + 3 * s[j + 1] + 2) >> 2);
  }
}

static void upsample_cols(const int16_t *tmp, int16_t *out, int ow, int oh) {
  for (int y = 0; y < oh; y++) {
    int i = y / 2;
    const int16_t *near = tmp + (size_t)(i + 1) * ow;
    const int16_t *far = tmp + (size_t)(y & 1 ? i + 2 : i) * ow;
    int16_t *d = out + (size_t)y * ow;
    for (int x = 0; x < ow; x++) d[x] = (int16_t)((3 * near[x] + far[x] + 2) >> 2);
  }
}

/* Writes into `out` a noise field of level `bottom`'s size whose level l carries noise of amplitude amp[l]
 * (field units), for levels bottom..top. */
static void fractal(int16_t *out, const pyramid *p, int bottom, int top, const int *amp, pb_rng *r,
                    scratch *s) {
  int16_t *cur = top == bottom ? out : s->ping, *spare = s->pong;
  size_t n = (size_t)p->w[top] * (size_t)p->h[top];
  memset(cur, 0, n * sizeof *cur);
  add_noise(cur, n, amp[top], r);
  for (int l = top - 1; l >= bottom; l--) {
    int16_t *dst = l == bottom ? out : spare;
    upsample_rows(cur, p->w[l + 1], p->h[l + 1], s->tmp, p->w[l]);
    upsample_cols(s->tmp, dst, p->w[l], p->h[l]);
    if (amp[l]) add_noise(dst, (size_t)p->w[l] * (size_t)p->h[l], amp[l], r);
    spare = cur;
    cur = dst;
  }
}

/* A field of level `bottom`'s size with the same amplitude on every level from `from` to the top. */
static void fractal_from(int16_t *out, const pyramid *p, int bottom, int from, int amp_each, pb_rng *r,
                         scratch *s) {
  int amp[MAX_LEVELS] = {0};
  for (int l = from; l < p->levels; l++) amp[l] = amp_each;
  fractal(out, p, bottom, p->levels - 1, amp, r, s);
}

static int scratch_alloc(scratch *s, const pyramid *p) {
  size_t full = (size_t)p->w[0] * (size_t)p->h[0], level1 = (size_t)p->w[1] * (size_t)p->h[1];
  size_t tmp = (size_t)PB_MAX(p->h[1], p->h[0]) * (size_t)p->w[0]; /* an upsampling's, or the blur's */
  s->block = malloc(full * sizeof(uint32_t) + (2 * full + 4 * level1 + tmp) * sizeof(int16_t));
  if (!s->block) return -ENOMEM;
  s->labels = s->block;
  int16_t *q = (int16_t *)(s->labels + full);
  s->lum_coarse = q;
  s->lum_fine = q + full;
  s->cb = q + 2 * full;
  s->cr = s->cb + level1;
  s->ping = s->cr + level1;
  s->pong = s->ping + level1;
  s->tmp = s->pong + level1;
  return 0;
}

/* ---- the image's look ---- */

/* The scene's few dominant materials: leaves are variations on these, so colours cohere. */
static void pick_palette(look *lk, pb_rng *r) {
  lk->palette_size = uniform_int(r, 3, PALETTE_MAX);
  for (int i = 0; i < lk->palette_size; i++) {
    leaf_look *p = &lk->palette[i];
    p->lum = (int16_t)fp(triangular(r, 70));
    p->cb = (int16_t)fp(triangular(r, 30));
    p->cr = (int16_t)fp(triangular(r, 30));
    /* Most materials are textured, some smooth (sky, paint): a wide spread of texture per leaf. */
    p->gain = (int16_t)(uniform(r, 0.15, 1.6) * GAIN_ONE);
    p->tex_cb = (int16_t)(triangular(r, 0.5) * 256);
    p->tex_cr = (int16_t)(triangular(r, 0.5) * 256);
  }
}

static void pick_look(look *lk, pb_rng *r) {
  /* Ranges keep a 500x375 q90 image within about +-12% of 115 KB while still varying like a photo set. */
  lk->mean_y = fp(uniform(r, 100, 145));
  lk->coarse_amp = fp(uniform(r, 8, 14));
  /* Strong at 2-4 px, weaker per pixel: texture, not white noise. */
  const double fine[FINE_TOP + 1] = {30.0, 50.0, 45.0};
  for (int l = 0; l <= FINE_TOP; l++) lk->fine_amp[l] = fp(fine[l]);
  lk->texture = (int)(uniform(r, 0.9, 1.1) * GAIN_ONE);
  lk->chroma_amp = fp(uniform(r, 2, 5));
  lk->tint_cb = fp(uniform(r, -10, 10));
  lk->tint_cr = fp(uniform(r, -10, 10));
  lk->corr_cb = (int)uniform(r, -40, 40);
  lk->corr_cr = (int)uniform(r, -40, 40);
  lk->sensor_amp = fp(uniform(r, 1.5, 2.5));
  pick_palette(lk, r);
}

/* ---- dead leaves ---- */

typedef struct ellipse {
  double cx, cy;    /* centre, pixels */
  double A, B, C;   /* A dx^2 + B dx dy + C dy^2 <= 1 inside */
  double half_h;    /* half its vertical extent */
} ellipse;

static void unit_vector(pb_rng *r, double *ux, double *uy) {
  double x, y, n2;
  do {
    x = uniform(r, -1, 1);
    y = uniform(r, -1, 1);
    n2 = x * x + y * y;
  } while (n2 > 1 || n2 < 0.01);
  double n = sqrt(n2);
  *ux = x / n;
  *uy = y / n;
}

static void random_ellipse(ellipse *e, int w, int h, double r_min_px, double r_max_px, pb_rng *r) {
  /* Radius with density ~ r^-3 on [r_min_px, r_max_px] (the scale-invariant choice), by inverting its CDF. */
  double lo = 1 / (r_min_px * r_min_px), hi = 1 / (r_max_px * r_max_px);
  double a = 1 / sqrt(lo - pb_rng_uniform(r) * (lo - hi)), b = a * uniform(r, 0.4, 1.0);
  double ux, uy;
  unit_vector(r, &ux, &uy);
  e->cx = uniform(r, -a, w + a);
  e->cy = uniform(r, -a, h + a);
  double ia = 1 / (a * a), ib = 1 / (b * b);
  e->A = ux * ux * ia + uy * uy * ib;
  e->B = 2 * ux * uy * (ia - ib);
  e->C = uy * uy * ia + ux * ux * ib;
  e->half_h = sqrt(a * a * uy * uy + b * b * ux * ux);
}

/* First pixel index at or right of x, clipped to [0, limit]: ceil() without a libm call (baseline x86-64
 * has no rounding instruction). */
static int first_at_or_after(double x, int limit) {
  if (x <= 0) return 0;
  if (x >= limit) return limit;
  int i = (int)x;
  return i < x ? i + 1 : i;
}

static int last_at_or_before(double x, int limit) { /* floor(x) clipped to [-1, limit] */
  if (x < 0) return -1;
  if (x >= limit) return limit;
  return (int)x;
}

/* Labels the unlabelled pixels of row[x0..x1]; returns how many.  Four at a time with GCC/Clang vector
 * extensions (SSE2 on any x86-64, NEON on arm64): this is the hottest loop, and -O2 does not vectorise it. */
typedef uint32_t label_vec __attribute__((vector_size(16)));

static size_t label_span(uint32_t *row, int x0, int x1, uint32_t id) {
  label_vec ids = {id, id, id, id}, count = {0, 0, 0, 0};
  int x = x0;
  for (; x + 3 <= x1; x += 4) {
    label_vec was;
    memcpy(&was, row + x, sizeof was);
    label_vec empty = (label_vec)(was == 0); /* all ones where unlabelled */
    was |= empty & ids;
    memcpy(row + x, &was, sizeof was);
    count -= empty;
  }
  size_t painted = (size_t)count[0] + count[1] + count[2] + count[3];
  for (; x <= x1; x++) { /* branch-free: whether a pixel is taken is random */
    uint32_t was = row[x];
    row[x] = was ? was : id;
    painted += !was;
  }
  return painted;
}

/* Labels the still-unlabelled pixels whose centres the ellipse covers (leaves are drawn front to back, so the
 * first leaf to claim a pixel is the one in front); returns how many, row by row from the ellipse's equation. */
static size_t paint_leaf(uint32_t *labels, int w, int h, const ellipse *e, uint32_t id) {
  int y0 = first_at_or_after(e->cy - e->half_h - 0.5, h), y1 = last_at_or_before(e->cy + e->half_h - 0.5, h - 1);
  double inv_2a = 0.5 / e->A, four_a = 4 * e->A;
  size_t painted = 0;
  for (int y = y0; y <= y1; y++) {
    double dy = y + 0.5 - e->cy, bq = e->B * dy;
    double disc = bq * bq - four_a * (e->C * dy * dy - 1);
    if (disc < 0) continue;
    double sq = sqrt(disc);
    double xa = e->cx + (-bq - sq) * inv_2a - 0.5, xb = e->cx + (-bq + sq) * inv_2a - 0.5;
    int x0 = first_at_or_after(xa, w), x1 = last_at_or_before(xb, w - 1);
    painted += label_span(labels + (size_t)y * (size_t)w, x0, x1, id);
  }
  return painted;
}

static leaf_look vary(const leaf_look *base, pb_rng *r) {
  leaf_look l;
  l.lum = clamp16(base->lum + fp(triangular(r, 28)));
  l.cb = clamp16(base->cb + fp(triangular(r, 6)));
  l.cr = clamp16(base->cr + fp(triangular(r, 6)));
  l.gain = clamp16(base->gain * uniform(r, 0.6, 1.4));
  l.tex_cb = base->tex_cb;
  l.tex_cr = base->tex_cr;
  return l;
}

static int grow_leaves(leaves *lv) {
  uint32_t cap = lv->capacity ? 2 * lv->capacity : 4096;
  leaf_look *p = realloc(lv->look, cap * sizeof *p);
  if (!p) return -ENOMEM;
  lv->look = p;
  lv->capacity = cap;
  return 0;
}

/* Draws leaves until 99% of the frame is covered (the last few gaps show the background, leaf 0). */
static int make_leaves(scratch *s, leaves *lv, int w, int h, const look *lk, pb_rng *r) {
  size_t n = (size_t)w * (size_t)h, covered = 0, target = n - n / 100;
  /* Leaves from 4 px: finer detail is the texture's job, and every leaf costs a few hundred ns. */
  const double r_min_px = 4.0, r_max_px = PB_MAX(r_min_px, 0.4 * PB_MIN(w, h));
  size_t limit = 4 * n + 64; /* each leaf covers >= 0 pixels; a stop in case many draws miss the frame */
  memset(s->labels, 0, n * sizeof *s->labels);
  if (grow_leaves(lv) < 0) return -ENOMEM;
  lv->look[0] = lk->palette[0];
  lv->count = 1;
  int64_t gain_sum = 0; /* over the frame's pixels */
  while (covered < target && lv->count < limit) {
    if (lv->count == lv->capacity && grow_leaves(lv) < 0) return -ENOMEM;
    ellipse e;
    random_ellipse(&e, w, h, r_min_px, r_max_px, r);
    uint32_t id = lv->count++;
    lv->look[id] = vary(&lk->palette[uniform_int(r, 0, lk->palette_size - 1)], r);
    size_t painted = paint_leaf(s->labels, w, h, &e, id);
    covered += painted;
    gain_sum += (int64_t)painted * lv->look[id].gain;
  }
  gain_sum += (int64_t)(n - covered) * lv->look[0].gain;
  /* Texture normalised to its mean over the frame: every image carries about the same amount of texture,
   * which is what keeps JPEG sizes in a narrow band. */
  int64_t mean = PB_MAX(gain_sum / (int64_t)n, 1);
  lv->gain_scale = (int32_t)PB_MIN((int64_t)lk->texture * GAIN_ONE / mean, 16 * GAIN_ONE);
  return 0;
}

/* Adds the leaves' luminance to lum_coarse through a [1 2 1] x [1 2 1] / 16 blur: in-focus photographs still
 * spread an edge over a pixel or two, and JPEG sizes depend on it. */
static void add_leaf_luminance(scratch *s, const leaves *lv, int w, int h) {
  for (int y = 0; y < h; y++) {
    const uint32_t *lab = s->labels + (size_t)y * (size_t)w;
    int16_t *t = s->tmp + (size_t)y * (size_t)w;
    for (int x = 0; x < w; x++) {
      int l = lv->look[lab[x > 0 ? x - 1 : x]].lum, m = lv->look[lab[x]].lum;
      int rr = lv->look[lab[x + 1 < w ? x + 1 : x]].lum;
      t[x] = (int16_t)(l + 2 * m + rr);
    }
  }
  for (int y = 0; y < h; y++) {
    const int16_t *up = s->tmp + (size_t)(y > 0 ? y - 1 : y) * (size_t)w;
    const int16_t *mid = s->tmp + (size_t)y * (size_t)w;
    const int16_t *down = s->tmp + (size_t)(y + 1 < h ? y + 1 : y) * (size_t)w;
    int16_t *d = s->lum_coarse + (size_t)y * (size_t)w;
    for (int x = 0; x < w; x++) d[x] = (int16_t)(d[x] + ((up[x] + 2 * mid[x] + down[x] + 8) >> 4));
  }
}

/* ---- composing RGB ---- */

/* Photographs roll off into shadows and highlights rather than clip hard. */
static int32_t soft_knee(int32_t y) {
  const int32_t lo = 20 * FP, hi = 235 * FP;
  if (y < lo) return lo + (y - lo) / 2;
  if (y > hi) return hi + (y - hi) / 2;
  return y;
}

static uint8_t to_u8(int32_t v) { /* field units to a byte, rounded and clamped */
  v = (v + FP / 2) >> FP_SHIFT;
  return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

static int32_t noise8(uint64_t x, int lane, int amp) { /* uniform in [-amp, amp) from byte `lane` of x */
  return (((int32_t)((x >> (8 * lane)) & 0xFF) - 128) * amp) >> 7;
}

/* One row of RGB.  Chroma shading is read at half resolution: level-1 sample j sits at pixel 2j - 1.5, so
 * pixel x takes sample x/2 + 1 - the 2x2 blocks 4:2:0 subsampling averages anyway. */
static void compose_row(uint8_t *rgb, const scratch *s, const leaves *lv, const pyramid *p, int y,
                        const look *lk, pb_rng *r) {
  size_t row = (size_t)y * (size_t)p->w[0];
  const uint32_t *labels = s->labels + row;
  const int16_t *coarse = s->lum_coarse + row, *fine = s->lum_fine + row;
  const int16_t *cb_row = s->cb + (size_t)(y / 2 + 1) * (size_t)p->w[1] + 1;
  const int16_t *cr_row = s->cr + (size_t)(y / 2 + 1) * (size_t)p->w[1] + 1;
  int chroma_noise = lk->sensor_amp / 2;
  uint64_t x64 = 0;
  for (int x = 0; x < p->w[0]; x++, rgb += 3) {
    const leaf_look *leaf = &lv->look[labels[x]];
    int32_t gain = (leaf->gain * lv->gain_scale) >> 8;
    int32_t tex = (fine[x] * gain) >> 8, lum = coarse[x] + tex; /* lum: relative to the mean */
    int32_t cb = lk->tint_cb + leaf->cb + cb_row[x >> 1] + ((lum * lk->corr_cb + tex * leaf->tex_cb) >> 8);
    int32_t cr = lk->tint_cr + leaf->cr + cr_row[x >> 1] + ((lum * lk->corr_cr + tex * leaf->tex_cr) >> 8);
    /* Sensor noise: a luminance part shared by the channels and a weaker part of each channel's own;
     * four 8-bit draws a pixel, so one 64-bit number serves two pixels. */
    x64 = (x & 1) ? x64 >> 32 : pb_rng_next(r);
    int32_t yy = soft_knee(lk->mean_y + lum) + noise8(x64, 0, lk->sensor_amp);
    /* JFIF YCbCr -> RGB, coefficients x 1024. */
    rgb[0] = to_u8(yy + ((1436 * cr) >> 10) + noise8(x64, 1, chroma_noise));
    rgb[1] = to_u8(yy - ((352 * cb + 731 * cr) >> 10) + noise8(x64, 2, chroma_noise));
    rgb[2] = to_u8(yy + ((1815 * cb) >> 10) + noise8(x64, 3, chroma_noise));
  }
}

static void make_fields(scratch *s, const pyramid *p, const look *lk, pb_rng *r) {
  fractal_from(s->lum_coarse, p, 0, COARSE_FROM, lk->coarse_amp, r, s);
  int fine_top = PB_MIN(FINE_TOP, p->levels - 1), amp[MAX_LEVELS] = {0};
  for (int l = 0; l <= fine_top; l++) amp[l] = lk->fine_amp[l];
  fractal(s->lum_fine, p, 0, fine_top, amp, r, s);
  fractal_from(s->cb, p, 1, CHROMA_FROM, lk->chroma_amp, r, s);
  fractal_from(s->cr, p, 1, CHROMA_FROM, lk->chroma_amp, r, s);
}

/* ---- public ---- */

static int valid_size(int width, int height) {
  return width >= 1 && height >= 1 && width <= PB_SYNTH_MAX_SIDE && height <= PB_SYNTH_MAX_SIDE &&
         (int64_t)width * height <= PB_SYNTH_MAX_PIXELS;
}

int pb_synth_rgb(uint8_t *rgb, int width, int height, uint64_t seed, uint64_t index) {
  if (!rgb || !valid_size(width, height)) return -EINVAL;
  pyramid p;
  pyramid_sizes(&p, width, height);
  scratch s;
  if (scratch_alloc(&s, &p) < 0) return -ENOMEM;
  pb_rng r;
  pb_rng_seed(&r, mix64(mix64(seed) + index)); /* mix64 is a bijection: distinct index, distinct stream */
  look lk;
  pick_look(&lk, &r);
  make_fields(&s, &p, &lk, &r);
  leaves lv = {0};
  int rc = make_leaves(&s, &lv, width, height, &lk, &r);
  if (rc == 0) {
    add_leaf_luminance(&s, &lv, width, height);
    for (int y = 0; y < height; y++) compose_row(rgb + (size_t)y * (size_t)width * 3u, &s, &lv, &p, y, &lk, &r);
  }
  free(lv.look);
  free(s.block);
  return rc;
}

int pb_synth_jpeg_with(pb_jpeg_encoder *enc, int width, int height, int quality, uint64_t seed, uint64_t index,
                       uint8_t **jpeg, size_t *jpeg_bytes, pb_err *err) {
  if (!valid_size(width, height))
    return pb_err_set(err, "synthetic image: %dx%d (expected sides of 1 to %d pixels, at most %lld pixels)",
                      width, height, PB_SYNTH_MAX_SIDE, (long long)PB_SYNTH_MAX_PIXELS);
  uint8_t *rgb = malloc((size_t)width * (size_t)height * 3u);
  if (!rgb || pb_synth_rgb(rgb, width, height, seed, index) < 0) {
    free(rgb);
    return pb_err_setc(err, -ENOMEM, "synthetic image: out of memory for %dx%d (expected about %zu MB free)", width,
                       height, (size_t)width * (size_t)height * PB_SYNTH_BYTES_PER_PIXEL / 1000000u + 1u);
  }
  int rc = pb_jpeg_encode_rgb(enc, rgb, width, height, quality, jpeg, jpeg_bytes, err);
  free(rgb);
  return rc;
}

int pb_synth_jpeg(int width, int height, int quality, uint64_t seed, uint64_t index, uint8_t **jpeg,
                  size_t *jpeg_bytes, pb_err *err) {
  pb_jpeg_encoder *enc = NULL;
  int rc = pb_jpeg_encoder_init(&enc, err);
  if (rc < 0) return rc;
  rc = pb_synth_jpeg_with(enc, width, height, quality, seed, index, jpeg, jpeg_bytes, err);
  pb_jpeg_encoder_free(enc);
  return rc;
}
