#include "analysis.h"
void pb_critical_path(pb_report *r, const pb_analysis *a) { (void)r; (void)a; }
