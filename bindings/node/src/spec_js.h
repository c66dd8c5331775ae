// Speculative decoding from JS (spec_js.cc): the generate options' `speculative` and the
// stats' specDrafted, specAccepted, specForced and decodeCalls.
#pragma once

#include "edgellm/session.h"
#include "napi_util.h"

namespace edgellm::node {

// options.speculative: false (off), true (the defaults) or {ngram, jump, maxDraft, adaptive};
// false with a TypeError pending.
bool read_speculative(napi_env env, napi_value options, SpeculativeOptions* out);
void set_spec_stats(napi_env env, napi_value stats, const Stats& s);

}  // namespace edgellm::node
