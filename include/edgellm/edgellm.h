// edgellm: an on-device LLM runtime over llama.cpp. Include this for the whole public API.
#pragma once

#include "edgellm/cloud.h"
#include "edgellm/conversation.h"
#include "edgellm/device.h"
#include "edgellm/log.h"
#include "edgellm/lora.h"
#include "edgellm/model.h"
#include "edgellm/package.h"
#include "edgellm/planner.h"
#include "edgellm/platform.h"
#include "edgellm/power.h"
#include "edgellm/policy.h"
#include "edgellm/quantize.h"
#include "edgellm/runtime.h"
#include "edgellm/session.h"
#include "edgellm/status.h"
#include "edgellm/synth.h"
