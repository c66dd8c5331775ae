// The conversation methods of NativeModel (native_conversation.cc).
#pragma once

#include "napi.h"

#include <vector>

namespace edgellm::node {

// conversationCreate, conversationLoad, conversationSend, conversationEdit,
// conversationPrepare, conversationSave, conversationFree.
std::vector<napi_property_descriptor> conversation_methods();

}  // namespace edgellm::node
