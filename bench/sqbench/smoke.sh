#!/usr/bin/env bash
# smoke.sh: sqbench runs every experiment on tiny sizes and writes a sound
# CSV; bad input gets a one-line error and a non-zero exit, never a crash.
# CTest runs it as sqbench_smoke (bench/CMakeLists.txt).
#
#   bash smoke.sh PATH/TO/sqbench [PATH/TO/plot.py]
#
# Checks:
#   - `sqbench report --quick` on tiny sizes exits 0 and writes sqbench.csv:
#     the exact header, 8 fields a row, status ok|limit|skipped|invalid
#     (invalid: a C1 point that failed a validity guard), every
#     experiment id (S1-S5, C1, C2, U1, W1, O1, Q1, Q2; W2 where the build has an
#     event-loop backend) present;
#   - bad input: an unknown experiment or option, malformed lists, unwritable
#     --csv folders, a thread the system refuses (ulimit -v): exit 1 or 2
#     (never a signal), one line on stderr, no CSV;
#   - if /usr/bin/python3 has matplotlib: plot.py on that CSV draws square.png.
# Prints each failure and exits 1 if there was any.
set -uo pipefail

SQBENCH=${1:?usage: smoke.sh PATH/TO/sqbench [PATH/TO/plot.py]}
PLOT=${2:-$(dirname "${BASH_SOURCE[0]}")/plot.py}
PYTHON=${SQBENCH_PYTHON:-/usr/bin/python3}
EXPECT_IDS=(S1 S2 S3 S4 S5 C1 C2 U1 W1 O1 Q1 Q2)
HEADER="experiment,variant,threads,x,run,metric,value,status"

TMP=$(mktemp -d "${TMPDIR:-/tmp}/sqbench-smoke.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

failures=0
fail() {
    echo "smoke: FAIL: $*" >&2
    failures=$((failures + 1))
}
ok() {
    echo "smoke: ok: $*"
}

# --- the quick report on tiny sizes ---------------------------------------------
OUT="$TMP/report"
start=$SECONDS
"$SQBENCH" report --quick --n 4,8 --threads 1,2 --duration 0.02 --runs 5 --no-callgrind \
    --no-plots --csv "$OUT" >"$TMP/report.out" 2>"$TMP/report.err"
rc=$?
echo "smoke: sqbench report took $((SECONDS - start)) s"
CSV="$OUT/sqbench.csv"
if [[ $rc -ne 0 ]]; then
    fail "sqbench report exited $rc; its stderr:"
    cat "$TMP/report.err" >&2
else
    ok "sqbench report exited 0"
fi
if [[ ! -f "$CSV" ]]; then
    fail "no $CSV"
else
    head=$(head -n 1 "$CSV")
    if [[ "$head" == "$HEADER" ]]; then ok "header"; else fail "header is '$head', not '$HEADER'"; fi
    # Every row: 8 fields, a known status, numbers where numbers belong.
    bad=$(awk -F, 'NR > 1 && (NF != 8 || $8 !~ /^(ok|limit|skipped|invalid)$/ || $3 !~ /^[0-9]+$/ ||
                               $5 !~ /^[0-9]+$/ || $1 == "" || $2 == "" || $6 == "") {
                       print NR ": " $0; n++; if (n == 5) exit }' "$CSV")
    if [[ -z "$bad" ]]; then ok "every row has 8 fields and a known status"; else fail "malformed rows:"$'\n'"$bad"; fi
    rows=$(($(wc -l <"$CSV") - 1))
    if [[ $rows -gt 0 ]]; then ok "$rows rows"; else fail "no rows"; fi
    # An "ok" value is a finite number.
    badv=$(awk -F, 'NR > 1 && $8 == "ok" && $7 !~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/ { print NR ": " $0; n++; if (n == 5) exit }' "$CSV")
    if [[ -z "$badv" ]]; then ok "every ok row has a number"; else fail "ok rows without a number:"$'\n'"$badv"; fi
    ids=" $(awk -F, 'NR > 1 { print $1 }' "$CSV" | sort -u | tr '\n' ' ')"
    # W2 needs an event-loop backend; without one the report must say so.
    if grep -q "W2: not run" "$TMP/report.out"; then
        ok "W2 not run, and the report says why"
    else
        EXPECT_IDS+=(W2 W2c)
    fi
    missing=()
    for id in "${EXPECT_IDS[@]}"; do
        [[ "$ids" == *" $id "* ]] || missing+=("$id")
    done
    if [[ ${#missing[@]} -eq 0 ]]; then
        ok "every experiment present: ${EXPECT_IDS[*]}"
    else
        fail "experiments missing from the CSV: ${missing[*]}"
    fi
    [[ ! -e "$CSV.tmp" ]] || fail "a temporary $CSV.tmp was left behind"
fi
[[ ! -e "$OUT/square.png" ]] || fail "--no-plots drew plots"

# --- bad input --------------------------------------------------------------------
# expect_error NAME WANT_RC COMMAND...: exits WANT_RC ("nonzero": 1..127),
# one line on stderr (blank lines aside).
expect_error() {
    local name=$1 want=$2
    shift 2
    "$@" >"$TMP/err.out" 2>"$TMP/err.err"
    local rc=$? lines
    lines=$(grep -c . "$TMP/err.err")
    if [[ $rc -ge 128 ]]; then
        fail "$name: killed by a signal (exit $rc)"
    elif [[ $want == nonzero && ($rc -eq 0) ]] || [[ $want != nonzero && $rc -ne $want ]]; then
        fail "$name: exit $rc, expected $want"
    elif [[ $lines -ne 1 ]]; then
        fail "$name: $lines lines on stderr, expected one:"$'\n'"$(cat "$TMP/err.err")"
    else
        ok "$name: exit $rc, $(grep . "$TMP/err.err")"
    fi
}
SQ=("$SQBENCH")
expect_error "unknown experiment" 1 "${SQ[@]}" nosuch --no-plots
expect_error "--n 1,,2" 1 "${SQ[@]}" s2 --n 1,,2 --no-plots
expect_error "--n empty" 1 "${SQ[@]}" s2 --n "" --no-plots
expect_error "--threads a" 1 "${SQ[@]}" c1 --threads a --no-plots
expect_error "unknown option" 1 "${SQ[@]}" report --bogus
expect_error "unwritable --csv" nonzero "${SQ[@]}" s2 --n 2 --runs 5 --csv /proc/nonexistent/dir --no-plots
[[ ! -e /proc/nonexistent/dir/sqbench.csv ]] || fail "unwritable --csv: a sqbench.csv appeared"
# A folder that exists but where nobody, root included, can create a file.
expect_error "--csv /proc" nonzero "${SQ[@]}" s2 --n 2 --runs 5 --csv /proc --no-plots
[[ ! -e /proc/sqbench.csv ]] || fail "--csv /proc: a sqbench.csv appeared"
# More threads than the address space allows: pthread_create refuses one.
limited() { (ulimit -v 400000 && exec timeout 120 "$SQBENCH" "$@"); }
expect_error "refused thread" nonzero limited s1 --n 20000 --runs 5 --csv "$TMP/refused" --no-plots
[[ ! -e "$TMP/refused/sqbench.csv" ]] || fail "refused thread: a sqbench.csv was written"
# A folder that exists but cannot be written (unless we are root, who can).
RO="$TMP/readonly"
mkdir -p "$RO"
chmod 555 "$RO"
if [[ ! -w "$RO" ]]; then
    expect_error "read-only --csv" nonzero "${SQ[@]}" s2 --n 2 --runs 5 --csv "$RO" --no-plots
    [[ ! -e "$RO/sqbench.csv" ]] || fail "read-only --csv: a sqbench.csv appeared"
fi
chmod 755 "$RO"
# A CSV path inside a regular file.
touch "$TMP/afile"
expect_error "--csv under a file" nonzero "${SQ[@]}" s2 --n 2 --runs 5 --csv "$TMP/afile/sub" --no-plots
[[ ! -e "$TMP/afile/sub/sqbench.csv" ]] || fail "--csv under a file: a sqbench.csv appeared"

# --- plots --------------------------------------------------------------------------
if [[ -f "$CSV" ]] && [[ -x "$PYTHON" ]] && "$PYTHON" -c "import matplotlib" 2>/dev/null; then
    if "$PYTHON" "$PLOT" "$OUT" 2>"$TMP/plot.err" && [[ -s "$OUT/square.png" ]]; then
        pngs=("$OUT"/*.png)
        ok "plot.py drew ${#pngs[@]} PNG files, square.png among them"
    else
        fail "plot.py did not draw square.png: $(cat "$TMP/plot.err")"
    fi
else
    echo "smoke: $PYTHON has no matplotlib: plot.py not checked"
fi

if [[ $failures -gt 0 ]]; then
    echo "smoke: $failures check(s) failed" >&2
    exit 1
fi
echo "smoke: all checks passed"
