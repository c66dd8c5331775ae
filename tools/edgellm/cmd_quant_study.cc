// edgellm imatrix MODEL -o OUT.gguf: an importance matrix from the training corpus.
// edgellm quant-study MODEL --work-dir DIR [--out STUDY.json] [--json]: size, decode speed and
//   accuracy per task for each quantization, with and without the importance matrix.
// edgellm advise MODEL --task math --max-drop 2% [--study STUDY.json] [--json]: the smallest
//   quantization within the accuracy budget, from a study (run now, or read from a file).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common.h"
#include "edgellm/quant_study.h"

namespace cli {
namespace {

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string t; std::getline(ss, t, ',');) {
    if (!t.empty()) out.push_back(t);
  }
  return out;
}

nlohmann::json study_json(const edgellm::QuantStudy& s) {
  nlohmann::json j = {{"model", s.model}, {"seconds", s.seconds}};
  j["variants"] = nlohmann::json::array();
  for (const auto& v : s.variants) {
    nlohmann::json tasks = nlohmann::json::object();
    for (const auto& t : v.eval.tasks) {
      tasks[t.task] = {{"accuracy", t.accuracy}, {"correct", t.correct}, {"n", t.n},
                       {"chance", t.chance}};
    }
    j["variants"].push_back({{"type", v.type},
                             {"imatrix", v.imatrix},
                             {"name", v.name()},
                             {"path", v.path},
                             {"file_bytes", v.file_bytes},
                             {"bits_per_weight", v.bits_per_weight},
                             {"decode_tps", v.decode_tps},
                             {"perplexity", v.eval.perplexity},
                             {"kl_mean", v.eval.kl_mean},
                             {"kl_p99", v.eval.kl_p99},
                             {"top1_agree", v.eval.top1_agree},
                             {"tasks", tasks}});
  }
  return j;
}

edgellm::Result<edgellm::QuantStudy> study_from_json(const std::string& path) {
  std::ifstream f(path);
  if (!f) return edgellm::Status::NotFound("study file not found: " + path);
  nlohmann::json j = nlohmann::json::parse(f, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("variants") || !j["variants"].is_array()) {
    return edgellm::Status::CorruptData(path + " is not a study written by "
                                               "`edgellm quant-study --out`: run the study again");
  }
  edgellm::QuantStudy s;
  try {
    s.model = j.value("model", "");
    s.seconds = j.value("seconds", 0.0);
    for (const auto& v : j["variants"]) {
      edgellm::QuantVariant q;
      q.type = v.at("type").get<std::string>();
      q.imatrix = v.at("imatrix").get<bool>();
      q.path = v.value("path", "");
      q.file_bytes = v.at("file_bytes").get<uint64_t>();
      q.bits_per_weight = v.value("bits_per_weight", 0.0);
      q.decode_tps = v.value("decode_tps", 0.0);
      q.eval.perplexity = v.value("perplexity", 0.0);
      q.eval.kl_mean = v.value("kl_mean", -1.0);
      q.eval.kl_p99 = v.value("kl_p99", -1.0);
      q.eval.top1_agree = v.value("top1_agree", -1.0);
      for (const auto& [task, t] : v.at("tasks").items()) {
        edgellm::TaskScore sc;
        sc.task = task;
        sc.accuracy = t.at("accuracy").get<double>();
        sc.correct = t.value("correct", 0);
        sc.n = t.value("n", 0);
        sc.chance = t.value("chance", 0.0);
        q.eval.tasks.push_back(sc);
      }
      s.variants.push_back(std::move(q));
    }
  } catch (const nlohmann::json::exception& e) {
    return edgellm::Status::CorruptData(path + ": " + e.what() +
                                        ": run `edgellm quant-study --out` again");
  }
  if (s.variants.empty()) return edgellm::Status::CorruptData(path + " holds no variants");
  return s;
}

void print_table(const edgellm::QuantStudy& s) {
  const auto& tasks = s.variants.front().eval.tasks;
  std::printf("%-16s %10s %6s %9s", "variant", "size", "bpw", "tok/s");
  for (const auto& t : tasks) std::printf(" %8s", t.task.c_str());
  std::printf(" %8s %9s\n", "ppl", "KL");
  for (const auto& v : s.variants) {
    std::printf("%-16s %10s %6.2f %9.1f", v.name().c_str(), human_bytes(v.file_bytes).c_str(),
                v.bits_per_weight, v.decode_tps);
    for (const auto& t : v.eval.tasks) std::printf(" %7.1f%%", 100 * t.accuracy);
    std::printf(" %8.3f ", v.eval.perplexity);
    if (v.eval.kl_mean >= 0) {
      std::printf("%9.5f\n", v.eval.kl_mean);
    } else {
      std::printf("%9s\n", "-");
    }
  }
}

// "2%" -> 0.02, "0.02" -> 0.02.
edgellm::Result<double> parse_drop(const std::string& text) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string num = percent ? text.substr(0, text.size() - 1) : text;
  char* end = nullptr;
  const double v = std::strtod(num.c_str(), &end);
  if (num.empty() || !end || *end != 0) {
    return edgellm::Status::InvalidArgument("--max-drop '" + text + "': give points like 2% or a share like 0.02");
  }
  const double share = percent ? v / 100 : v;
  if (!(share >= 0 && share <= 1)) {
    return edgellm::Status::InvalidArgument("--max-drop '" + text + "' must be between 0% and 100%");
  }
  return share;
}

struct StudyFlags {
  edgellm::QuantStudyOptions o;
  std::string types, tasks = "intent,extract,math,code", imatrix = "both";
};

void add_study_flags(CLI::App* cmd, StudyFlags& f) {
  cmd->add_option("--work-dir", f.o.work_dir, "Folder for the variants and the imatrix");
  cmd->add_option("--types", f.types, "Comma-separated (default F16,Q8_0,Q6_K,Q5_K_M,Q4_K_M,Q4_0,Q3_K_M)");
  cmd->add_option("--imatrix", f.imatrix, "both (default), on (only with), off (only without)")
      ->check(CLI::IsMember({"both", "on", "off"}));
  cmd->add_option("--items", f.o.eval.items, "Held-out items per task (default 200)");
  cmd->add_option("--seed", f.o.eval.seed, "Which held-out items (default 7)");
  cmd->add_option("--tokens", f.o.decode_tokens, "Tokens timed for decode speed (default 128)");
  cmd->add_option("--threads", f.o.n_threads, "Threads (default: physical cores)");
}

void apply_study_flags(StudyFlags& f, bool quiet) {
  if (!f.types.empty()) f.o.types = split_list(f.types);
  f.o.eval.tasks = split_list(f.tasks);
  f.o.plain = f.imatrix != "on";
  f.o.imatrix = f.imatrix != "off";
  if (!quiet) {
    f.o.on_stage = [](const std::string& s) { std::fprintf(stderr, "[study] %s\n", s.c_str()); };
  }
}

}  // namespace

Action add_imatrix(CLI::App& app) {
  static edgellm::ImatrixOptions o;
  auto* cmd = app.add_subcommand(
      "imatrix", "Importance matrix (mean squared activations per weight column) from the corpus");
  cmd->add_option("model", o.model, "Full-precision GGUF")->required();
  cmd->add_option("-o,--output", o.output, "imatrix GGUF to write (for quantize --imatrix)")->required();
  cmd->add_option("--items", o.items_per_task, "Calibration items per task, train split (default 100)");
  cmd->add_option("--threads", o.n_threads, "Threads (default: physical cores)");
  return [] {
    o.on_progress = [](int32_t done, int32_t total) {
      progress_line("imatrix", static_cast<float>(done) / total, done == total);
    };
    edgellm::Status st = edgellm::compute_imatrix(o);
    if (!st.ok()) return fail(st);
    std::fprintf(stderr, "wrote %s\n", o.output.c_str());
    return 0;
  };
}

Action add_quant_study(CLI::App& app) {
  static StudyFlags f;
  static std::string out;
  static bool json = false;
  auto* cmd = app.add_subcommand(
      "quant-study", "Size, decode speed and per-task accuracy of each quantization, +/- imatrix");
  cmd->add_option("model", f.o.model, "Full-precision GGUF (F32/F16)")->required();
  add_study_flags(cmd, f);
  cmd->add_option("--tasks", f.tasks, "Comma-separated (default intent,extract,math,code)");
  cmd->add_option("--out", out, "Write the study as JSON (advise --study reads it)");
  cmd->add_flag("--json", json, "Print the study as JSON on stdout");
  return [] {
    if (f.o.work_dir.empty()) {
      return fail(edgellm::Status::InvalidArgument("--work-dir is required: the variants are written there"));
    }
    apply_study_flags(f, false);
    auto s = edgellm::run_quant_study(f.o);
    if (!s.ok()) return fail(s.status());
    const nlohmann::json j = study_json(*s);
    if (!out.empty()) {
      std::ofstream file(out);
      file << j.dump(1) << "\n";
      if (!file) return fail(edgellm::Status::Unavailable("cannot write " + out));
    }
    if (json) {
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      print_table(*s);
    }
    return 0;
  };
}

Action add_advise(CLI::App& app) {
  static StudyFlags f;
  static std::string task, max_drop = "2%", study_path;
  static bool json = false;
  auto* cmd = app.add_subcommand(
      "advise", "The smallest quantization that keeps a task's accuracy within a budget, measured");
  cmd->add_option("model", f.o.model, "Full-precision GGUF (F32/F16)")->required();
  cmd->add_option("--task", task, "intent, extract, math or code")->required();
  cmd->add_option("--max-drop", max_drop, "Accuracy budget in points below the original (default 2%)");
  cmd->add_option("--study", study_path, "Use a study from quant-study --out instead of measuring now");
  add_study_flags(cmd, f);
  cmd->add_flag("--json", json, "Print one JSON object");
  return [] {
    auto drop = parse_drop(max_drop);
    if (!drop.ok()) return fail(drop.status());
    edgellm::Result<edgellm::QuantStudy> s = edgellm::Status::Internal("no study");
    std::string tmp_dir;
    if (!study_path.empty()) {
      s = study_from_json(study_path);
    } else {
      f.tasks = task;
      apply_study_flags(f, json);
      if (f.o.work_dir.empty()) {
        tmp_dir = (std::filesystem::temp_directory_path() /
                   ("edgellm-advise-" + std::to_string(::getpid()))).string();
        f.o.work_dir = tmp_dir;
        f.o.keep_files = false;
      }
      s = edgellm::run_quant_study(f.o);
      if (!tmp_dir.empty()) {
        std::error_code ec;
        std::filesystem::remove_all(tmp_dir, ec);
      }
    }
    if (!s.ok()) return fail(s.status());
    if (!study_path.empty() && !s->model.empty() &&
        std::filesystem::path(s->model).filename() != std::filesystem::path(f.o.model).filename()) {
      return fail(edgellm::Status::InvalidArgument(
          "the study at " + study_path + " measured " + s->model + ", not " + f.o.model +
          ": run the study for this model, or leave --study out to measure now"));
    }
    auto a = edgellm::advise_quantization(*s, task, *drop);
    if (!a.ok()) return fail(a.status());
    double acc = 0;
    for (const auto& t : a->pick.eval.tasks) {
      if (t.task == task) acc = t.accuracy;
    }
    nlohmann::json j = {{"model", f.o.model},
                        {"task", task},
                        {"max_drop", *drop},
                        {"found", a->found},
                        {"pick", a->pick.name()},
                        {"type", a->pick.type},
                        {"imatrix", a->pick.imatrix},
                        {"file_bytes", a->pick.file_bytes},
                        {"accuracy", acc},
                        {"reference_accuracy", a->reference_accuracy},
                        {"drop", a->drop},
                        {"reason", a->reason}};
    nlohmann::json all = nlohmann::json::array();
    for (const auto& v : s->variants) {
      double va = -1;
      for (const auto& t : v.eval.tasks) {
        if (t.task == task) va = t.accuracy;
      }
      all.push_back({{"name", v.name()}, {"file_bytes", v.file_bytes}, {"accuracy", va}});
    }
    j["measured"] = all;
    if (json) {
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      for (const auto& m : all) {
        std::printf("  %-16s %10s  %s %5.1f%%\n", m["name"].get<std::string>().c_str(),
                    human_bytes(m["file_bytes"].get<uint64_t>()).c_str(), task.c_str(),
                    100 * m["accuracy"].get<double>());
      }
      std::printf("%s: %s\n", a->found ? "pick" : "no pick", a->reason.c_str());
    }
    return 0;
  };
}

}  // namespace cli
