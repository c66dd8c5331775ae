// Images and audio from JS (media_js.cc): the generate options' `images` and `audio`, and the
// media fields of a model's info and a generation's stats.
#pragma once

#include <vector>

#include "edgellm/session.h"
#include "napi_util.h"

namespace edgellm::node {

// Appends options.images then options.audio to `out`; false with a TypeError pending.
bool read_media(napi_env env, napi_value options, std::vector<Media>* out);
void set_media_info(napi_env env, napi_value info, const ModelInfo& mi);
void set_media_stats(napi_env env, napi_value stats, const Stats& s);

}  // namespace edgellm::node
