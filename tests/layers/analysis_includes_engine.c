/* Not part of any build: the layer check (CMakeLists.txt, test layers.back_edge_refused) compiles this with
 * the analysis layer's include directories and expects it to fail, because the analysis must not see the
 * engine (docs/ARCHITECTURE.md "Layers").  If this ever compiles, a back-edge has become possible. */
#include "engine.h"

int pb_layer_probe(void) { return 0; }
