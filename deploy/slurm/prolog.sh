#!/bin/sh
# Slurm prolog (slurm.conf: Prolog=/etc/flexwatt/slurm/prolog.sh): start the node agent for the
# job's allocation. Any caps a killed agent left are restored first (--restore), then the
# agent starts in the background; its own lock refuses a second copy.
FLEXWATT=${FLEXWATT:-/usr/local/bin/flexwatt}
CONFIG=${FLEXWATT_CONFIG:-/etc/flexwatt/agent.yaml}
mkdir -p /run/flexwatt
"$FLEXWATT" agent --config "$CONFIG" --restore || exit 0   # never fail the job for the agent
nohup "$FLEXWATT" agent --config "$CONFIG" >>/var/log/flexwatt-agent.log 2>&1 &
echo $! > /run/flexwatt/agent.pid
exit 0
