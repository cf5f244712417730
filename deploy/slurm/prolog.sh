#!/bin/sh
# Slurm prolog (slurm.conf: Prolog=/etc/flexwatt/slurm/prolog.sh): start the node agent for the
# job's allocation. Any caps a killed agent left are restored first (--restore), then the
# agent starts in the background; its own lock refuses a second copy (a second job's prolog
# finds --restore refused while the agent runs and leaves it alone). Never fails the job.
# Environment (defaults for deploy/agent.yaml): FLEXWATT (the binary), FLEXWATT_CONFIG,
# FLEXWATT_RUN_DIR (restore file, lock, socket; agent.pid), FLEXWATT_LOG_DIR (audit log;
# agent.log, the agent's stderr).
FLEXWATT=${FLEXWATT:-/usr/local/bin/flexwatt}
CONFIG=${FLEXWATT_CONFIG:-/etc/flexwatt/agent.yaml}
RUN_DIR=${FLEXWATT_RUN_DIR:-/run/flexwatt}
LOG_DIR=${FLEXWATT_LOG_DIR:-/var/log/flexwatt}
mkdir -p "$RUN_DIR" "$LOG_DIR"
"$FLEXWATT" agent --config "$CONFIG" --restore >>"$LOG_DIR/agent.log" 2>&1 || exit 0
nohup "$FLEXWATT" agent --config "$CONFIG" </dev/null >>"$LOG_DIR/agent.log" 2>&1 &
echo $! > "$RUN_DIR/agent.pid"
exit 0
