// edgellm CLI: a thin layer of argument parsing over the public API.
#include <cstdio>

#include "common.h"

int main(int argc, char** argv) {
  edgellm::TuneAllocator();
  CLI::App app{"edgellm: run open LLMs (GGUF) on small devices"};
  app.set_version_flag("--version", std::string("edgellm ") + edgellm::version() + " (commit " +
                                        edgellm::git_commit() + "), llama.cpp " +
                                        edgellm::llama_build());
  app.require_subcommand(1);
  cli::Action run = cli::add_run(app);
  cli::Action chat = cli::add_chat(app);
  cli::Action info = cli::add_info(app);
  cli::Action synth = cli::add_synth(app);
  cli::Action plan = cli::add_plan(app);
  cli::Action tokens = cli::add_tokens(app);
  cli::Action bench = cli::add_bench(app);
  cli::Action quantize = cli::add_quantize(app);
  cli::Action pack = cli::add_pack(app);
  cli::Action serve = cli::add_serve(app);
  cli::Action store = cli::add_store(app);
  cli::Action caps = cli::add_caps(app);
  cli::Action route = cli::add_route(app);
  cli::Action serve_llm = cli::add_serve_llm(app);
  cli::Action train = cli::add_train(app);
  cli::Action eval = cli::add_eval(app);
  cli::Action imatrix = cli::add_imatrix(app);
  cli::Action quant_study = cli::add_quant_study(app);
  cli::Action advise = cli::add_advise(app);
  cli::Action embed = cli::add_embed(app);
  cli::Action rerank = cli::add_rerank(app);
  cli::Action index = cli::add_index(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (app.got_subcommand("run")) return run();
  if (app.got_subcommand("chat")) return chat();
  if (app.got_subcommand("info")) return info();
  if (app.got_subcommand("synth")) return synth();
  if (app.got_subcommand("plan")) return plan();
  if (app.got_subcommand("tokens")) return tokens();
  if (app.got_subcommand("bench")) return bench();
  if (app.got_subcommand("serve-models")) return serve();
  for (const char* s : {"pull", "models", "rm", "verify"}) {
    if (app.got_subcommand(s)) return store();
  }
  if (app.got_subcommand("quantize")) return quantize();
  if (app.got_subcommand("pack")) return pack();
  if (app.got_subcommand("caps")) return caps();
  if (app.got_subcommand("route")) return route();
  if (app.got_subcommand("serve")) return serve_llm();
  if (app.got_subcommand("train")) return train();
  if (app.got_subcommand("eval")) return eval();
  if (app.got_subcommand("imatrix")) return imatrix();
  if (app.got_subcommand("quant-study")) return quant_study();
  if (app.got_subcommand("advise")) return advise();
  if (app.got_subcommand("embed")) return embed();
  if (app.got_subcommand("rerank")) return rerank();
  if (app.got_subcommand("index")) return index();
  return 2;
}
