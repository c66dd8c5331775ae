// edgellm-mediabench: an image (or audio) question's time to first token, side by side in one
// run against llama.cpp's own path, and what the encoded-media cache and KV reuse save.
//
//  1. TTFT of one question with one image (or clip), split into media decode, encode and
//     prefill (text and the media's embeddings), on a fresh session each round, alternating
//     with llama.cpp's path as llama-mtmd-cli runs it: mtmd_helper_bitmap_init_from_buf,
//     mtmd_tokenize, then per chunk mtmd_encode_chunk + mtmd_helper_decode_image_chunk or
//     llama_decode for text, then the first greedy token. Both get the same raw prompt (the
//     media marker where mtmd puts the item) and the same bytes. Each round's bytes differ (a
//     JPEG comment segment naming the round) so no side takes another round's encoding from a
//     cache. The ratio is reference TTFT / edgellm TTFT (>= 1: edgellm is at least as fast).
//  2. The encoded-media cache: the same bytes again on a fresh session (no encode).
//  3. Turn 2 of a conversation whose turn 1 had the image (its cells reused) against a fresh
//     session fed the same history with bytes it has not encoded (decode, encode, prefill all).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench_util.h"
#include "edgellm/edgellm.h"
#include "reference/mtmd_reference.h"

namespace {

using json = nlohmann::json;
using bench::median;
using bench::Phases;

struct Args {
  std::string model, mmproj, media, prompt = "What is in the image?";
  int threads = 2, ctx = 2048, rounds = 3, image_max_tokens = 64;
  bool json = false;
};

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "edgellm-mediabench: %s\n", why.c_str());
  std::exit(1);
}

std::vector<uint8_t> read_all(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) die("cannot read " + path);
  std::vector<uint8_t> b;
  uint8_t buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) b.insert(b.end(), buf, buf + n);
  std::fclose(f);
  return b;
}

// The media with a JPEG comment segment naming `tag` after its start marker: the same pixels,
// other bytes (so another content hash). Other formats are returned as they are.
std::vector<uint8_t> variant(const std::vector<uint8_t>& jpeg, const std::string& tag) {
  if (jpeg.size() < 4 || jpeg[0] != 0xFF || jpeg[1] != 0xD8) return jpeg;
  std::vector<uint8_t> out(jpeg.begin(), jpeg.begin() + 2);
  const size_t len = tag.size() + 2;
  out.insert(out.end(), {0xFF, 0xFE, static_cast<uint8_t>(len >> 8), static_cast<uint8_t>(len)});
  out.insert(out.end(), tag.begin(), tag.end());
  out.insert(out.end(), jpeg.begin() + 2, jpeg.end());
  return out;
}

std::unique_ptr<edgellm::Session> session(const edgellm::Model& m, const Args& a) {
  edgellm::SessionOptions so;
  so.n_threads = a.threads;
  so.n_ctx = a.ctx;
  so.warmup = false;  // the reference's context is not warmed up either
  auto s = edgellm::Session::Create(m, so);
  if (!s.ok()) die(s.status().ToString());
  return std::move(*s);
}

edgellm::Generation ask(edgellm::Session& s, const std::string& prompt,
                        const std::vector<uint8_t>& bytes, bool chat = false) {
  edgellm::GenerateOptions g;
  g.temperature = 0;
  g.max_tokens = 1;
  g.chat = chat;
  g.media = {edgellm::Media{"", bytes}};
  auto r = s.Generate(prompt, g);
  if (!r.ok()) die(r.status().ToString());
  return std::move(*r);
}

Phases phases_of(const edgellm::Stats& st) {
  return {st.media_decode_ms, st.media_encode_ms, st.prefill_ms - st.media_encode_ms, st.ttft_ms};
}

json to_json(const Phases& p) {
  return {{"decode_ms", p.decode_ms}, {"encode_ms", p.encode_ms}, {"prefill_ms", p.prefill_ms},
          {"ttft_ms", p.ttft_ms}};
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  CLI::App app{"edgellm-mediabench: an image question's time to first token vs llama.cpp's "
               "own mtmd path, the encoded-media cache and KV reuse"};
  app.add_option("-m,--model", a.model, "Text model GGUF")->required();
  app.add_option("--mmproj", a.mmproj, "Its projector GGUF")->required();
  app.add_option("--media", a.media, "Image or audio file (a JPEG gets per-round variants)")
      ->required();
  app.add_option("-p,--prompt", a.prompt, "The question");
  app.add_option("--threads", a.threads, "Threads (default 2)");
  app.add_option("--ctx", a.ctx, "Context (default 2048)");
  app.add_option("--rounds", a.rounds, "Rounds, alternating sides (default 3)");
  app.add_option("--image-max-tokens", a.image_max_tokens, "Tokens per image at most (default 64)");
  app.add_flag("--json", a.json, "Print one JSON object");
  CLI11_PARSE(app, argc, argv);
  if (a.rounds < 1 || a.threads < 1) die("--rounds and --threads must be at least 1");

  // The model (and so its encoded-media cache) is loaded again where the bytes cannot be
  // varied (media other than JPEG), so no measured request takes an earlier encoding.
  auto load = [&] {
    edgellm::LoadOptions lo;
    lo.mmproj_path = a.mmproj;
    lo.image_max_tokens = a.image_max_tokens;
    lo.mmproj_threads = a.threads;
    auto m = edgellm::Model::Load(a.model, lo);
    if (!m.ok()) die(m.status().ToString());
    return std::move(*m);
  };
  std::unique_ptr<edgellm::Model> model = load();
  std::string why;
  auto ref = bench::MtmdReference::Load(a.model, a.mmproj, a.threads, a.image_max_tokens, &why);
  if (!ref) die(why);
  const std::vector<uint8_t> media = read_all(a.media);
  const bool varies = variant(media, "x") != media;
  const std::string raw = std::string(edgellm::media_marker()) + a.prompt;

  // 1. TTFT, alternating which side goes first.
  std::vector<double> ours_ttft, ref_ttft, ratios;
  json rounds = json::array();
  for (int r = 0; r < a.rounds; ++r) {
    const std::vector<uint8_t> bytes = variant(media, "edgellm bench round " + std::to_string(r));
    Phases o, f;
    for (int side = 0; side < 2; ++side) {
      if ((side == 0) == (r % 2 == 0)) {
        if (!varies && r > 0) model = load();
        auto s = session(*model, a);
        o = phases_of(ask(*s, raw, bytes).stats);
      } else {
        if (!ref->Run(raw, bytes, a.ctx, &f, &why)) die(why);
      }
    }
    ours_ttft.push_back(o.ttft_ms);
    ref_ttft.push_back(f.ttft_ms);
    ratios.push_back(f.ttft_ms / o.ttft_ms);
    rounds.push_back({{"edgellm", to_json(o)}, {"llama_cpp", to_json(f)}});
    if (!a.json) {
      std::fprintf(stderr,
                   "  round %d: edgellm TTFT %8.1f ms (decode %.1f, encode %.1f, prefill %.1f) | "
                   "llama.cpp %8.1f ms (decode %.1f, encode %.1f, prefill %.1f)\n",
                   r + 1, o.ttft_ms, o.decode_ms, o.encode_ms, o.prefill_ms, f.ttft_ms,
                   f.decode_ms, f.encode_ms, f.prefill_ms);
    }
  }

  // 2. The encoded-media cache: the last round's bytes again, on a fresh session.
  const std::vector<uint8_t> last =
      variant(media, "edgellm bench round " + std::to_string(a.rounds - 1));
  auto hs = session(*model, a);
  const edgellm::Generation hit = ask(*hs, raw, last);

  // 3. Turn 2 with the image's cells kept vs a fresh session re-encoding other bytes.
  const std::vector<uint8_t> conv_bytes = variant(media, "edgellm bench conversation");
  auto cs = session(*model, a);
  auto conv = edgellm::Conversation::Create(*cs).value();
  edgellm::GenerateOptions g1;
  g1.temperature = 0;
  g1.max_tokens = 8;
  g1.media = {edgellm::Media{"", conv_bytes}};
  if (auto t1 = conv->Send(a.prompt, g1); !t1.ok()) die(t1.status().ToString());
  edgellm::GenerateOptions g2;
  g2.temperature = 0;
  g2.max_tokens = 1;
  const std::string follow = "Describe it in more detail.";
  auto t2 = conv->Send(follow, g2);
  if (!t2.ok()) die(t2.status().ToString());
  std::vector<edgellm::ChatMessage> history(conv->history().begin(), conv->history().end() - 2);
  history[0].media = {edgellm::Media{"", variant(media, "edgellm bench fresh")}};
  if (!varies) {
    conv.reset();
    cs.reset();
    model = load();
  }
  auto fs = session(*model, a);
  edgellm::GenerateOptions gf = g2;
  gf.chat = true;
  gf.history = history;
  auto fresh = fs->Generate(follow, gf);
  if (!fresh.ok()) die(fresh.status().ToString());

  const double ratio = median(ratios);
  json out = {{"model", a.model},
              {"mmproj", a.mmproj},
              {"media", a.media},
              {"threads", a.threads},
              {"n_media_tokens", hit.stats.n_media_tokens},
              {"rounds", rounds},
              {"ttft_ms_edgellm_median", median(ours_ttft)},
              {"ttft_ms_llama_cpp_median", median(ref_ttft)},
              {"speed_ratio_median", ratio},
              {"cache_hit_ttft_ms", hit.stats.ttft_ms},
              {"cache_hit_speedup", median(ours_ttft) / hit.stats.ttft_ms},
              {"turn2_reuse_ttft_ms", t2->stats.ttft_ms},
              {"turn2_fresh_ttft_ms", fresh->stats.ttft_ms},
              {"turn2_fresh_over_reuse", fresh->stats.ttft_ms / t2->stats.ttft_ms}};
  if (a.json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("image question, %d media tokens, %d threads, median of %d rounds:\n",
              hit.stats.n_media_tokens, a.threads, a.rounds);
  std::printf("  TTFT edgellm %.1f ms | llama.cpp (mtmd helper path) %.1f ms | "
              "speed ratio %.3f (goal >= 0.95)\n",
              median(ours_ttft), median(ref_ttft), ratio);
  std::printf("  encoded-media cache hit: TTFT %.1f ms (%.1fx faster than encoding)\n",
              hit.stats.ttft_ms, median(ours_ttft) / hit.stats.ttft_ms);
  std::printf("  turn 2 of an image conversation: %.1f ms with the image's cells kept, %.1f ms "
              "on a fresh session that re-encodes (%.1fx)\n",
              t2->stats.ttft_ms, fresh->stats.ttft_ms, fresh->stats.ttft_ms / t2->stats.ttft_ms);
  return 0;
}
