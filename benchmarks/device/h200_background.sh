#!/usr/bin/env bash
# Runs a long benchmark script on the device machine beyond one call's 10 minutes: `start LOG CMD...` starts
# CMD in a session of its own (setsid: it outlives the call) and returns; `collect LOG SECONDS DIR...` waits
# up to SECONDS for it to end (or to be near the call's limit), then copies each DIR's files to $OUT and
# prints the log's end. Each call brings back what is there so far, so nothing is lost if a later call fails.
set -u
verb=$1 log=$2; shift 2
case $verb in
  start) setsid nohup "$@" > "$log" 2>&1 < /dev/null & echo "started pid $!";;
  collect) seconds=$1; shift
           end=$((SECONDS + seconds))
           while [ $SECONDS -lt $end ] && pgrep -f h200_time_box.sh > /dev/null; do sleep 5; done
           for dir in "$@"; do cp -r "$dir"/. "${OUT:-/tmp}/" 2>/dev/null; done
           pgrep -f h200_time_box.sh > /dev/null && echo "still running" || echo "finished"
           tail -40 "$log";;
esac
