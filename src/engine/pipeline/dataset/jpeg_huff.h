/* A faster Huffman (entropy) decoder for baseline and progressive JPEGs, plugged into libjpeg in place of its
 * own (jpeg_huff.c, jpeg_phuff.c).  libjpeg-turbo's Huffman decoding is two thirds of a fused decode's time; this one
 * produces the same coefficients, so every pixel libjpeg then computes (IDCT, upsampling, colour) is
 * unchanged.  Used by the region decoder (jpeg_region.c). */
#ifndef PB_JPEG_HUFF_H
#define PB_JPEG_HUFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
/* jpeglib.h needs stdio.h and size_t first */
#include <jpeglib.h>

typedef struct pb_jpeg_huff pb_jpeg_huff;

pb_jpeg_huff *pb_jpeg_huff_new(void); /* NULL when out of memory */
void pb_jpeg_huff_free(pb_jpeg_huff *h);

/* After jpeg_start_decompress, before the first row: takes over the scan's entropy decoding when the
 * image is one that this decoder handles (baseline sequential Huffman, 8-bit, one scan, with or without a
 * restart interval) and libjpeg's source holds the rest of the file, `data` of `bytes` (jpeg_mem_src).  Returns
 * whether it did; when not, libjpeg's own decoder stays.  Uses c->client_data.
 * The caller ends the image with jpeg_abort_decompress, not jpeg_finish_decompress: the bit reader
 * keeps its position to itself, so libjpeg's source is not advanced past the scan.  libjpeg's warnings
 * should be errors (an emit_message that longjmps on level -1), as they are to the region decoder: then
 * corrupt data fails as it fails in libjpeg's careful path.  (If they return, the rest of the scan
 * decodes as zeros, as in libjpeg.) */
bool pb_jpeg_huff_attach(pb_jpeg_huff *h, j_decompress_ptr c, const uint8_t *data, size_t bytes);

/* A progressive image (8-bit, Huffman), read in buffered-image mode: after jpeg_start_decompress, before
 * jpeg_consume_input, takes over the entropy decoding of its scans (jpeg_phuff.c), each as libjpeg sets it
 * up; libjpeg still reads the markers between them.  `data` of `bytes` is the whole file, libjpeg's source
 * (jpeg_mem_src).  skip_1x1_ac: at 1/8, the AC scans of components the 1x1 IDCT decodes are stepped over
 * (only their DC is needed).  Returns whether it took over; uses c->client_data.  Warnings should be errors,
 * as for pb_jpeg_huff_attach. */
bool pb_jpeg_huff_attach_progressive(pb_jpeg_huff *h, j_decompress_ptr c, const uint8_t *data, size_t bytes,
                                     bool skip_1x1_ac);

/* Tests: the AC refinement of progressive scans takes at most path `most` (0: portable C; 1: SSSE3 masks;
 * 2, the default: also BMI2's pdep where it is fast), so that each is checked on a CPU that has them all. */
void pb_jpeg_huff_refine_path(int most);

/* Tests and benchmarks: turn pipebench's own entropy decoding off (libjpeg's own then decodes every image, and
 * a progressive one at 1/8 reads its every scan: jpeg_region.c) or on again; PB_DEBUG_LIBJPEG_HUFFMAN=1 in the
 * environment starts it off.  pb_jpeg_huff_is_allowed says which. */
void pb_jpeg_huff_allow(bool on);
bool pb_jpeg_huff_is_allowed(void);

#endif
