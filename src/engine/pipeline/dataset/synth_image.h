/* Deterministic synthetic photographs: what `pipebench gen` encodes as the JPEG dataset.
 *
 * The point is that they cost what real photos cost to store and decode (docs/CONTRACT.md §2: a 500x375 image at
 * quality 90 lands near 100-130 KB), so they imitate the statistics a JPEG encoder sees in photographs rather
 * than any particular scene: a "dead leaves" layout of occluding objects at every scale (sharp edges, a 1/f
 * spectrum), textures whose strength and hue vary per object, smooth shading and colour casts from noise
 * octaves, chroma smoother than luminance, a little sensor noise.  They look like close-ups of lichen or
 * foliage: strongly textured, as a 100-130 KB 500x375 q90 photo has to be.
 *
 * Measured (libjpeg-turbo 2.1.5, 4:2:0, seed 42, 20 images): 500x375 q90 108-126 KB (mean 115); q75 is 0.61x
 * and q95 1.35x the q90 size, as for real textured photographs (grass, gravel); sizes scale with
 * width x height (about 5 bits a pixel at q90 from 224x224 to 1000x750).  Generation takes about 6 ms for
 * 500x375 on one core (integer fixed point; see synth_image.c).
 *
 * Image (seed, index) is a pure function of its arguments: same seed and index, same pixels. */
#ifndef PB_SYNTH_IMAGE_H
#define PB_SYNTH_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "jpeg.h"

/* Largest image pb_synth_rgb makes: JPEG's side limit, and a pixel cap that keeps its scratch and the RGB
 * buffer (PB_SYNTH_BYTES_PER_PIXEL together, about) within reason. */
#define PB_SYNTH_MAX_SIDE 65500
#define PB_SYNTH_MAX_PIXELS (1LL << 28)
#define PB_SYNTH_BYTES_PER_PIXEL 16u

/* Fills rgb (width * height * 3 bytes, packed RGB rows) with image (seed, index).  0; -EINVAL for a size
 * outside 1..PB_SYNTH_MAX_SIDE or above PB_SYNTH_MAX_PIXELS; -ENOMEM when its scratch cannot be allocated. */
int pb_synth_rgb(uint8_t *rgb, int width, int height, uint64_t seed, uint64_t index);

/* Image (seed, index) encoded as a JPEG at `quality` (4:2:0, accurate DCT) with a reusable encoder: use one
 * encoder per thread when writing many images.  *jpeg is malloc'ed (the caller free()s it), *jpeg_bytes its
 * size. */
int pb_synth_jpeg_with(pb_jpeg_encoder *enc, int width, int height, int quality, uint64_t seed, uint64_t index,
                       uint8_t **jpeg, size_t *jpeg_bytes, pb_err *err);

/* The same with an encoder made and freed for this one call (about 0.1 ms more). */
int pb_synth_jpeg(int width, int height, int quality, uint64_t seed, uint64_t index, uint8_t **jpeg,
                  size_t *jpeg_bytes, pb_err *err);

#endif
