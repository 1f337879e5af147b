#!/usr/bin/env python3
"""The TensorFlow Profiler's own answer beside pipebench's, on the same captures (issue 35, docs/IMPORT.md).

For each `<name>.xplane.pb` this runs the profile plugin's two tools that answer "why does my GPU wait":
the input-pipeline analyzer (its input-bound share of step time and its conclusion) and the tf.data
bottleneck analysis (the iterator it names and its suggestion), then `pipebench analyze` on the same file,
and prints one markdown table.  With the fixtures' expected.json beside the captures it adds the planted
answer and Python's own measurement of the steps' waiting.

The plugin is a benchmark dependency only.  Its tf.data bottleneck tool was dropped from the xprof builds
(2.20 on); 2.19 still has it:

    python3 -m venv /tmp/tb-venv && /tmp/tb-venv/bin/pip install tensorboard_plugin_profile==2.19.0
    /tmp/tb-venv/bin/python bench/tf_profiler_answer.py --bin build/pipebench tests/fixtures/tfdata/*.xplane.pb
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

from tensorboard_plugin_profile.convert import raw_to_tool_data as plugin


def tool(path, name):
    data, _ = plugin.xspace_to_tool_data([path], name + "^", {})
    if data is None:
        return None
    return json.loads(data)


def plugin_waiting(path):
    """The input-pipeline analyzer's input time as a share of the step time (its averages, to 0.1 ms) and
    the first words of its conclusion."""
    for t in tool(path, "input_pipeline_analyzer") or []:
        p = t.get("p", {})
        if "input_conclusion" in p:
            pct = 100.0 * float(p["infeed_time_ms_avg"]) / float(p["steptime_ms_average"])
            return pct, p["input_conclusion"].split(" because")[0].replace("Your program is ", "")
    return float("nan"), None


def plugin_bottleneck(path):
    """The tf.data bottleneck analysis: the iterator of the slowest input pipeline and its suggestion."""
    for t in tool(path, "tf_data_bottleneck_analysis") or []:
        if [c["id"] for c in t.get("cols", [])][-2:] == ["bottleneck", "suggestion"] and t.get("rows"):
            cells = [c.get("v") for c in t["rows"][0]["c"]]
            long_name = re.search(r"Long Name</u>: ([^<]+)", cells[3])
            suggestion = re.sub(r"<[^>]+>", "", cells[4])
            suggestion = "num_parallel_calls / cache" if "num_parallel_calls" in suggestion else "(link only)"
            return long_name.group(1) if long_name else cells[3], suggestion
    return None, None


def pipebench(binary, path):
    with tempfile.TemporaryDirectory() as out:
        subprocess.run([binary, "analyze", path, "--out", out, "--quiet"], check=True, capture_output=True)
        rep = json.load(open(os.path.join(out, "report.json")))
    advice = rep["source"]["advice"][0]["text"] if rep["source"]["advice"] else ""
    return rep["input_bound_pct"], rep["classification"], rep["bottleneck"]["stage"], advice


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bin", default="build/pipebench")
    ap.add_argument("captures", nargs="+")
    a = ap.parse_args()
    expected = {}
    exp_path = os.path.join(os.path.dirname(a.captures[0]), "expected.json")
    if os.path.exists(exp_path):
        expected = json.load(open(exp_path))["pipelines"]
    print("| capture | planted | Python waiting | plugin: input-bound | plugin: tf.data bottleneck (suggestion) |"
          " pipebench: waiting, class | pipebench: bottleneck | pipebench: tf.data advice |")
    print("|---|---|---|---|---|---|---|---|")
    for path in a.captures:
        name = os.path.basename(path).split(".")[0]
        exp = expected.get(name, {})
        pw, pconc = plugin_waiting(path)
        pb_iter, pb_sugg = plugin_bottleneck(path)
        w, cls, bn, advice = pipebench(a.bin, path)
        print(f"| {name} | {exp.get('bottleneck', '?')} | {exp.get('python_waiting_pct', float('nan')):.1f} % "
              f"| {pw:.1f} % ({pconc}) | {pb_iter} ({pb_sugg}) | {w:.1f} %, {cls} | {bn} | {advice[:70]} |")


if __name__ == "__main__":
    sys.exit(main())
