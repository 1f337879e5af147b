/* Not part of any build: the layer check (CMakeLists.txt, test layers.back_edge_refused) compiles this with
 * the reports layer's include directories and expects it to fail: a view must not reach the live run's
 * queues, pools or threads (docs/ARCHITECTURE.md "Layers"). */
#include "queue.h"

int pb_layer_probe(void) { return 0; }
