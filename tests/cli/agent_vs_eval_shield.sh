#!/usr/bin/env bash
# tests/cli/agent_vs_eval.sh with the limiter's budget shield on in the agent and in eval: the
# agent's loop acts at every tick as eval's does (ControlLoop::acts_now), so for the same seed
# its trace rows and rates are still eval's.
# Usage: agent_vs_eval_shield.sh FLEXWATT_BIN SOURCE_DIR [OUT_JSON]
FW_AGENT_SHIELD=1 exec bash "$(dirname "$0")/agent_vs_eval.sh" "$@"
