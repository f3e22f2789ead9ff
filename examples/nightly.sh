#!/usr/bin/env bash
# Nightly regression gate, as a user would run it from cron or a CI job (as root):
#   0 3 * * *  cd /opt/idsbench && RULES=/var/lib/suricata/rules/suricata.rules examples/nightly.sh
# 1. search the sensor's NDR with the newest rules (run `suricata-update` before, or point RULES at
#    the file your rule feed writes), into RESULTS/<UTC time>;
# 2. index every night's campaign (RESULTS/index.duckdb);
# 3. gate: against the previous night (`compare --fail-on`) and on the whole trend
#    (`trend --fail-on-regression`, which also writes RESULTS/trend.html).
# Exit status: 0 all gates passed, 1 a gate failed (one line per failed condition on stderr),
# 2 bad input (a missing rule file, a metric no campaign has...).
set -uo pipefail

RULES=${RULES:-/var/lib/suricata/rules/suricata.rules}
RESULTS=${RESULTS:-results/nightly}
IDSBENCH=${IDSBENCH:-idsbench}
TRACE=${TRACE:-builtin:mixed?packets=20000}
FAIL_ON=${FAIL_ON:-ndr_pps:-5%,sensor_us_per_pkt:+5%}
MIN_EFFECT=${MIN_EFFECT:-2}

if [ ! -r "$RULES" ]; then
    echo "nightly: rule file $RULES is not readable; set RULES=PATH (e.g. what suricata-update writes)" >&2
    exit 2
fi
stamp=$(date -u +%Y%m%dT%H%M%SZ)
spec=$(mktemp --suffix=.toml)
trap 'rm -f "$spec"' EXIT
cat > "$spec" <<EOF
name = "nightly"
description = "NDR of Suricata bare metal with the newest rules ($RULES)"
samples = 1

[traffic]
traces = ["$TRACE"]
replayers = [1]
rate = "topspeed"

[sensor]
rules = ["builtin:events", "$RULES"]

[setup]
kinds = ["baremetal"]
cpus = 1.0

[search]
tolerances = [0, 0.01]
precision = 0.05
trial_s = 3
final_s = 10
warm = true
EOF

mkdir -p "$RESULTS"
"$IDSBENCH" search "$spec" --out "$RESULTS/$stamp" || exit 2
"$IDSBENCH" index "$RESULTS" >/dev/null || exit 2

status=0
previous=$(find "$RESULTS" -mindepth 1 -maxdepth 1 -type d -name '2*' ! -name "$stamp" | sort | tail -n 1)
if [ -n "$previous" ]; then
    "$IDSBENCH" compare "$previous" "$RESULTS/$stamp" --min-effect "$MIN_EFFECT" --fail-on "$FAIL_ON" \
        --root "$RESULTS" >"$RESULTS/$stamp/compare.txt"
    rc=$?; [ $rc -gt $status ] && status=$rc
fi
"$IDSBENCH" trend --index "$RESULTS" --min-effect "$MIN_EFFECT" --fail-on-regression --format html \
    >"$RESULTS/trend.html"
rc=$?; [ $rc -gt $status ] && status=$rc
echo "nightly: $RESULTS/$stamp indexed; gates exit $status (trend page: $RESULTS/trend.html)" >&2
exit $status
