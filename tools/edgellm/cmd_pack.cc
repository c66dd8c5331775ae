// edgellm pack MODEL.gguf --id ID --version N [--chunk 10MiB] -o DIR [--json]
#include <cstdio>

#include "common.h"

namespace cli {

Action add_pack(CLI::App& app) {
  static edgellm::PackOptions o;
  static std::string model, chunk = "10MiB";
  static bool json = false;
  auto* cmd = app.add_subcommand(
      "pack", "Package a GGUF for download: copy it into DIR with a chunked-sha256 manifest.json");
  cmd->add_option("model", model, "GGUF model file")->required();
  cmd->add_option("--id", o.id, "Package id: a-z 0-9 . _ -, up to 64 characters")->required();
  cmd->add_option("--version", o.version, "Package version, >= 1 (larger is newer)")->required();
  cmd->add_option("--chunk", chunk, "Chunk size, 64KiB..1GiB (default 10MiB)");
  cmd->add_option("-o,--output", o.out_dir, "Package folder (created if missing)")->required();
  cmd->add_flag("--json", json, "Print the manifest JSON");
  return [] {
    auto bytes = parse_size(chunk);
    if (!bytes.ok()) {
      return fail(edgellm::Status::InvalidArgument("--chunk '" + chunk +
                                                   "' is not a size: use e.g. 1MiB, 10MiB, 64KiB"));
    }
    o.chunk_size = *bytes;
    o.on_progress = [](uint64_t done, uint64_t total) {
      progress_line("hash", total ? static_cast<float>(done) / static_cast<float>(total) : 1.0f,
                    done == total);
      return true;
    };
    auto m = edgellm::pack_model(model, o);
    if (!m.ok()) return fail(m.status());
    if (json) {
      std::fputs(edgellm::manifest_to_json(*m).c_str(), stdout);
      return 0;
    }
    std::printf("package   %s v%u in %s\n", m->id.c_str(), m->version, o.out_dir.c_str());
    std::printf("file      %s (%s, %llu bytes)\n", m->file.c_str(), human_bytes(m->size).c_str(),
                static_cast<unsigned long long>(m->size));
    std::printf("sha256    %s\n", m->sha256.c_str());
    std::printf("chunks    %zu x %s\n", m->chunks.size(), human_bytes(m->chunk_size).c_str());
    std::printf("model     %s %s, %.3f B params, format v%u, %s\n", m->architecture.c_str(),
                m->quant.c_str(), m->n_params / 1e9, m->required_format_version,
                m->toolchain.c_str());
    std::printf("plan      %s at n_ctx %d (8 GiB device)\n", human_bytes(m->plan_ram_bytes).c_str(),
                m->plan_n_ctx);
    return 0;
  };
}

}  // namespace cli
