#include "spec_js.h"

namespace edgellm::node {

bool read_speculative(napi_env env, napi_value options, SpeculativeOptions* out) {
  auto v = get_prop(env, options, "speculative");
  if (!v) return true;
  napi_valuetype t = napi_undefined;
  napi_typeof(env, *v, &t);
  if (t == napi_boolean) {
    bool on = true;
    napi_get_value_bool(env, *v, &on);
    if (!on) out->max_draft = 0;
    return true;
  }
  if (t != napi_object) {
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE",
                          "speculative must be a boolean or {ngram, jump, jumpCommit, draft, "
                          "draftPMin, maxDraft, adaptive}");
    return false;
  }
  // The range of maxDraft is the library's check (validate_speculative): a RangeError-like
  // error from generate names it.
  double p_min = out->draft_p_min;
  if (!(opt_bool(env, *v, "ngram", &out->ngram) && opt_bool(env, *v, "jump", &out->jump) &&
        opt_bool(env, *v, "jumpCommit", &out->jump_commit) &&
        opt_bool(env, *v, "draft", &out->draft) && opt_number(env, *v, "draftPMin", &p_min) &&
        opt_int(env, *v, "maxDraft", &out->max_draft) &&
        opt_bool(env, *v, "adaptive", &out->adaptive))) {
    return false;
  }
  out->draft_p_min = static_cast<float>(p_min);
  return true;
}

void set_spec_stats(napi_env env, napi_value stats, const Stats& s) {
  set(env, stats, "specDrafted", static_cast<double>(s.spec_drafted));
  set(env, stats, "specAccepted", static_cast<double>(s.spec_accepted));
  set(env, stats, "specForced", static_cast<double>(s.spec_forced));
  set(env, stats, "decodeCalls", static_cast<double>(s.decode_calls));
  set(env, stats, "specDraftDrafted", static_cast<double>(s.spec_draft_drafted));
  set(env, stats, "specDraftAccepted", static_cast<double>(s.spec_draft_accepted));
  set(env, stats, "specDraftMs", s.spec_draft_ms);
}

}  // namespace edgellm::node
