#!/usr/bin/env bash
# scripts/skipped_tests.sh JUNIT.xml: the tests of a ctest --output-junit report that skipped,
# grouped by reason. A GoogleTest test that calls GTEST_SKIP passes as far as ctest knows; its
# output ("FILE:LINE: Skipped", the reason, "[  SKIPPED ] Suite.Test") tells. A test ctest did not
# run (a skip return code or regular expression) gives ctest's message unless its output says more.
set -euo pipefail
awk '
function unescape(s) {
    gsub(/&lt;/, "<", s); gsub(/&gt;/, ">", s); gsub(/&quot;/, "\"", s); gsub(/&apos;/, "\047", s)
    gsub(/&amp;/, "\\&", s)
    return s
}
/<testcase name="/ {
    name = $0; sub(/.*<testcase name="/, "", name); sub(/".*/, "", name)
    notrun = ($0 ~ /status="notrun"/); skipped = 0; reason = ""; ctest_reason = ""; in_reason = 0
    last = ""
    next
}
/<skipped message="/ {
    ctest_reason = $0; sub(/.*<skipped message="/, "", ctest_reason); sub(/".*/, "", ctest_reason)
    next
}
/<\/testcase>/ {
    if (skipped || notrun) {
        # Skipped by a return code: the last line of its output, which says why.
        if (reason == "" && last != "") reason = last " (" ctest_reason ")"
        if (reason == "") reason = (ctest_reason != "" ? ctest_reason : "no reason given")
        reason = unescape(reason)
        count[reason]++
        names[reason] = names[reason] (count[reason] <= 5 ? "\n    " name : "")
        total++
    }
    next
}
{
    line = $0; sub(/^[ \t]*<system-out>/, "", line)
    if (line ~ /^\[  SKIPPED \]/) { skipped = 1; in_reason = 0; next }
    if (line ~ /: Skipped$/) { in_reason = 1; next }
    if (in_reason && line != "") reason = (reason == "" ? line : reason " " line)
    sub(/<\/system-out>.*/, "", line)
    if (line != "") last = line
}
END {
    if (!total) { print "\nNo test skipped."; exit }
    printf "\n%d test(s) skipped, by reason:\n", total
    n = 0
    for (r in count) order[++n] = r
    # Most frequent reason first (a simple insertion sort: there are few reasons).
    for (i = 2; i <= n; i++) {
        r = order[i]
        for (j = i - 1; j >= 1 && count[order[j]] < count[r]; j--) order[j + 1] = order[j]
        order[j + 1] = r
    }
    for (i = 1; i <= n; i++) {
        r = order[i]
        more = (count[r] > 5) ? "\n    ... and " (count[r] - 5) " more" : ""
        printf "\n%d: %s%s%s\n", count[r], r, names[r], more
    }
}' "$1"
