// NativeModel's LoRA methods (native_lora.cc).
#pragma once

#include <vector>

#include "napi.h"

namespace edgellm::node {

std::vector<napi_property_descriptor> lora_methods();

}  // namespace edgellm::node
