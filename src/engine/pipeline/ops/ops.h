/* The `map` image ops of docs/CONTRACT.md §2 (random_resized_crop, resize, center_crop, flip, normalize, to_chw) as
 * pure functions on a packed image view.
 *
 * Nothing here allocates: the caller sizes the output (and, for the antialiased resampler, a scratch
 * buffer) with the *_out_bytes / *_scratch_bytes helpers and passes it in, so a map worker can keep one
 * buffer per op for the whole run.  Randomness comes only from the pb_rng passed in, so a worker seeded
 * per sample reproduces every crop and flip.
 *
 * Semantics follow torchvision (see each function); where they differ it says so.  Errors: functions
 * that can fail return 0 or -EINVAL (bad geometry, wrong layout, NULL data), and pb_ops_why says why. */
#ifndef PB_OPS_H
#define PB_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "config.h"

/* A packed image: row-major [H,W,C] (HWC), or [C,H,W] when `chw`. */
typedef struct pb_image {
  void *data;
  int height, width, channels;
  pb_dtype dtype;
  bool chw;
} pb_image;

/* Bytes of the whole image (0 for a non-positive dimension). */
size_t pb_image_bytes(const pb_image *im);

/* Why the last op call on this thread returned -EINVAL, one line ("3 mean values for a 1-channel image
 * (expected 1 value or one per channel)"); read it right after that call. */
const char *pb_ops_why(void);
/* "op 2 (normalize) failed: <why>" for the map stage's error about op `index` of its ops, which returned
 * rc (-ENOMEM says "out of memory"); consumes the recorded reason. */
void pb_op_failure_text(char *buf, size_t len, int index, pb_op_kind kind, int rc);

/* ---- random_resized_crop (torchvision RandomResizedCrop.get_params) ----
 * Up to 10 attempts: target_area = H*W*U(scale); aspect = exp(U(log ratio)); w = round(sqrt(area*aspect)),
 * h = round(sqrt(area/aspect)) with Python's round (half to even); the first attempt with 0 < w <= W and
 * 0 < h <= H takes top = randint(0, H-h), left = randint(0, W-w) (inclusive).  Otherwise the central crop
 * clamped to the ratio range, and never below one pixel a side (torchvision would round a side of an image
 * under 1/ratio pixels to 0 and fail).  Uniform draws are consumed in exactly that order: 2 per attempt,
 * 2 more when an attempt succeeds. */
typedef double (*pb_uniform_fn)(void *ctx); /* a draw in [0, 1) */

void pb_rrc_params(pb_rng *rng, int H, int W, const double scale[2], const double ratio[2], int *i, int *j,
                   int *h, int *w);
/* The same, drawing from any uniform source (tests script the draws through this). */
void pb_rrc_params_from(pb_uniform_fn uniform, void *ctx, int H, int W, const double scale[2],
                        const double ratio[2], int *i, int *j, int *h, int *w);

/* fused_crop: the decode stage's region for the crop random_resized_crop `crop` draws from rng on an sh x sw
 * image.  per_crop (scale "auto"): decoded at the crop's own DCT scale (pb_crop_denom for its size), its place
 * there pb_crop_scaled's; else at the image's scale, exactly.  *denom the scale to decode at (on top of the
 * image's), rect (x, y, w, h) the region in the image decoded at it.  The decode stage and calibrate both
 * take their regions from here, the map stage redraws the same crop to find it. */
void pb_fused_crop_region(pb_rng *rng, int sh, int sw, const pb_op_cfg *crop, bool per_crop, int *denom, int rect[4]);

/* ---- resampling ----
 * PB_RESAMPLE_BILINEAR: 2x2 taps at half-pixel centres (align_corners=false), edges clamped: what
 *   torch's upsample_bilinear2d computes, and torchvision's tensor path with antialias=False.  When
 *   upscaling it equals PIL's BILINEAR too.  Downscaling by more than 2x it aliases (skips pixels).
 * PB_RESAMPLE_BILINEAR_AA: PIL's BILINEAR (a triangle filter whose support widens by the downscale
 *   factor), which is what torchvision does on PIL images and on tensors with antialias=True (its
 *   default since 0.17).  Separable, so it needs caller scratch.
 * uint8 is computed in fixed point and rounded to nearest; float32/float16 in float. */
typedef enum { PB_RESAMPLE_BILINEAR, PB_RESAMPLE_BILINEAR_AA } pb_resample;

/* The resamplers keep one strip of a row on the stack, which bounds the interleaved channels. */
#define PB_OPS_MAX_CHANNELS 1024

/* Output bytes for `in`'s channels/dtype at out_h x out_w. */
size_t pb_resize_out_bytes(const pb_image *in, int out_h, int out_w);

/* Scratch `pb_crop_resize` needs to resample an h x w window to out_h x out_w (0 for plain bilinear).
 * It grows with h and w, so the value for the whole image covers every crop of it. */
size_t pb_crop_resize_scratch_bytes(const pb_image *in, int h, int w, int out_h, int out_w, pb_resample mode);

/* Resample the window [top, top+h) x [left, left+w) of `in` to out->height x out->width, reading the
 * window in place (no crop copy); the window's edges are the image edges, as after torchvision's crop.
 * The caller sets out->data/height/width; channels, dtype and layout are copied from `in`. */
int pb_crop_resize(const pb_image *in, int top, int left, int h, int w, pb_image *out, pb_resample mode,
                   void *scratch);
/* Plain bilinear; needs no scratch. */
int pb_crop_resize_bilinear(const pb_image *in, int top, int left, int h, int w, pb_image *out);

/* random_resized_crop as one call: params from `rng`, then the window resampled to out->height x
 * out->width (size x size).  Scratch: pb_crop_resize_scratch_bytes(in, in->height, in->width, size, size,
 * mode).  The chosen window is returned in *rect (top, left, h, w) when rect is not NULL. */
int pb_random_resized_crop(const pb_image *in, pb_rng *rng, const double scale[2], const double ratio[2],
                           pb_image *out, pb_resample mode, void *scratch, int rect[4]);

/* ---- resize ----
 * torchvision's Resize(int): the shorter side becomes `size`, the longer int(size * long / short). */
void pb_resize_shorter_dims(int H, int W, int size, int *out_h, int *out_w);
/* Resize the whole image to out->height x out->width (pick them with pb_resize_shorter_dims, or size x
 * size as the config's shape inference does). */
int pb_resize(const pb_image *in, pb_image *out, pb_resample mode, void *scratch);

/* ---- center_crop ----
 * torchvision: top = int(round((H - size) / 2.0)) (half to even), left likewise; a side shorter than size
 * is first zero-padded by (size-H)//2 before and the rest after, so *top / *left come out negative. */
void pb_center_crop_params(int H, int W, int size_h, int size_w, int *top, int *left);
/* Copy the out->height x out->width window at (top, left) of `in`, zero outside the image.  Any layout
 * and dtype; out->data must not overlap in->data. */
int pb_crop_pad(const pb_image *in, int top, int left, pb_image *out);
int pb_center_crop(const pb_image *in, pb_image *out);

/* ---- flip ----
 * One draw per sample whatever p is, so changing p does not shift later draws; flips when u < p (as
 * torchvision's `torch.rand(1) < p`): p = 0 never, p = 1 always. */
bool pb_flip_draw(pb_rng *rng, double p);
/* Mirror left-right.  out may be in (in place); otherwise they must not overlap. Any layout and dtype. */
int pb_hflip(const pb_image *in, pb_image *out);
/* Returns 1 when flipped, 0 when not (out then holds a copy unless out == in), or -EINVAL. */
int pb_random_flip(const pb_image *in, pb_image *out, pb_rng *rng, double p);

/* ---- normalize ----
 * (x - mean[c]) / std[c] per channel, in pixel units; a single mean/std value applies to every channel.
 * To float32 or float16 (IEEE binary16, round to nearest even, overflow to inf).  out_dtype uint8 passes
 * uint8 through unchanged (and rounds/saturates a float input to 0..255 without normalizing).
 * In place (out->data == in->data) works when the output element is no wider than the input's. */
size_t pb_normalize_out_bytes(const pb_image *in, pb_dtype out_dtype);
int pb_normalize(const pb_image *in, pb_image *out, const double *mean, int nmean, const double *std, int nstd,
                 pb_dtype out_dtype);

/* ---- to_chw ----  HWC -> CHW, any dtype; out must not overlap in.  A CHW input is copied. */
int pb_to_chw(const pb_image *in, pb_image *out);

/* ---- flip, normalize and to_chw in one pass ----
 * What pb_hflip (when `flip`), pb_normalize to float32/float16 and (when `chw`) pb_to_chw give in sequence,
 * value for value, reading a uint8 HWC image of at most 4 channels once and writing out once (the map
 * stage's last ops are usually these three: one pass instead of three).  out must not overlap in.
 * -EINVAL for any other input or dtype (the caller then runs the ops one by one). */
int pb_flip_normalize_chw(const pb_image *in, pb_image *out, bool flip, const double *mean, int nmean,
                          const double *std, int nstd, pb_dtype out_dtype, bool chw);
/* The same values, written around the cache where it can (float32 CHW rows on 32-byte boundaries): for a
 * destination this core will not read again, a batch slot (fuse_map).  Ends with a store fence. */
int pb_flip_normalize_chw_stream(const pb_image *in, pb_image *out, bool flip, const double *mean, int nmean,
                                 const double *std, int nstd, pb_dtype out_dtype, bool chw);

/* ---- IEEE half ---- */
uint16_t pb_float_to_half(float f);
float pb_half_to_float(uint16_t h);

/* Tests: false makes the resamplers use only their portable C loops, true (the default) lets them use
 * the CPU's vector units where they have kernels for it; both give the same pixels. */
void pb_ops_allow_simd(bool on);

#endif
