// Thermal zone reading shared by DeviceProfile and the power governor.
#pragma once

#include <vector>

#include "core/env.h"
#include "edgellm/device.h"

namespace edgellm {

std::vector<ThermalZone> read_thermal_zones(const Env& env);

}  // namespace edgellm
