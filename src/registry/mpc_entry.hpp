#pragma once
// The registry entry of `mpc` (controllers/mpc_controller.hpp on a GrpoTwin).

#include "registry/controller_registry.hpp"

namespace fw::registry {

ControllerEntry mpc_entry();

}  // namespace fw::registry
