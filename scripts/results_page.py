#!/usr/bin/env python3
"""results_page.py: write the last report into docs/results.md.

    results_page.py REPORT.txt COMMAND [SEED_SCRIPTS.txt [QUEUES.txt]]

Replaces what stands between the page's `<!-- report: begin -->` and
`<!-- report: end -->` markers with the date, the command, the machine and
kernel lines of sqbench's report, its summary (every verdict, and the invalid
points), and, if given, the tables of the Python benchmarks (the seed's
scripts, the queues).  scripts/run.sh calls it
after every report; the rest of the page (the dated readings) is left alone.
"""
import datetime
import os
import sys

BEGIN, END = "<!-- report: begin -->", "<!-- report: end -->"


PY_TITLES = ["The seed's Python scripts against the module's cures:",
             "The module's queues against janus, queue.Queue and asyncio.Queue:"]


def section(report_lines, command, py_tables):
    when = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    out = [BEGIN, f"## The last report: {when}", "",
           f"Written by `scripts/run.sh` from `{command}`.", ""]
    head = [line.strip() for line in report_lines
            if line.strip().startswith(("machine :", "kernel  :", "compiler:"))]
    out += [f"- {line}" for line in head] + ([""] if head else [])
    summary = []
    for i, line in enumerate(report_lines):
        if line.startswith("== Summary:"):
            summary = report_lines[i:]
            break
    if summary:
        out += ["```", *[line.rstrip("\n") for line in summary], "```"]
    else:
        out += ["The report has no summary: it was cut short (see the raw output)."]
    for title, lines in zip(PY_TITLES, py_tables):
        if lines:
            out += ["", title, "", "```", *[line.rstrip("\n") for line in lines], "```"]
    out.append(END)
    return "\n".join(out)


def main(argv):
    if len(argv) not in (3, 4, 5):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        report = f.read().splitlines()
    py_tables = []
    for path in argv[3:]:
        lines = []
        if os.path.exists(path):
            with open(path) as f:
                lines = f.read().splitlines()
        py_tables.append(lines)
    page = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "docs", "results.md")
    with open(page) as f:
        text = f.read()
    a, b = text.find(BEGIN), text.find(END)
    if a < 0 or b < a:
        print(f"results_page.py: {page} lacks the report markers", file=sys.stderr)
        return 2
    text = text[:a] + section(report, argv[2], py_tables) + text[b + len(END):]
    tmp = page + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, page)
    print(f"results_page.py: {os.path.normpath(page)} now has this report")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
