#!/bin/sh
# Slurm epilog (slurm.conf: Epilog=/etc/flexwatt/slurm/epilog.sh): stop the node agent (SIGTERM:
# it restores the caps it found before exiting), then --restore as a backstop if it died.
FLEXWATT=${FLEXWATT:-/usr/local/bin/flexwatt}
CONFIG=${FLEXWATT_CONFIG:-/etc/flexwatt/agent.yaml}
if [ -f /run/flexwatt/agent.pid ]; then
  pid=$(cat /run/flexwatt/agent.pid)
  kill -TERM "$pid" 2>/dev/null
  for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
  kill -KILL "$pid" 2>/dev/null
  rm -f /run/flexwatt/agent.pid
fi
"$FLEXWATT" agent --config "$CONFIG" --restore
exit 0
