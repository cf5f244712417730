#pragma once
// The JSON fragments shared by the verbs' machine output live in experiment/json_fields.hpp;
// this header keeps their cli:: names for the verbs that use them.

#include "experiment/json_fields.hpp"

namespace fw::cli {
using experiment::cost_report_json;
using experiment::num_or_null;
}  // namespace fw::cli
