// Embedding llmport: open a Hugging Face model directory, tokenize a prompt, generate
// greedily with a callback per token (streamed as text), and read the logits behind the
// first choice. Builds against the installed package (examples/CMakeLists.txt).
//
//   generate MODEL_DIR PROMPT [N_TOKENS]
//
// stdout: the prompt and its continuation, one line. stderr: the first step's top logit
// and the timing. Errors: one line on stderr, exit 2 (llmport::Error::exit_code()).
#include <cstdio>
#include <iostream>
#include <string>

#include <llmport/engine.hpp>
#include <llmport/error.hpp>
#include <llmport/generate.hpp>
#include <llmport/model_config.hpp>
#include <llmport/tokenizer.hpp>
#include <llmport/weights.hpp>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: generate MODEL_DIR PROMPT [N_TOKENS]\n";
    return 2;
  }
  try {
    const std::string dir = argv[1], prompt = argv[2];
    const llmport::ModelConfig cfg = llmport::load_model_config(dir);  // the architecture gate
    const auto tok = llmport::Tokenizer::load(dir);
    const llmport::WeightStore weights = llmport::WeightStore::open(dir, cfg);  // memory-mapped
    llmport::Engine engine(cfg, weights);  // cpu backend, the checkpoint's dtype, all cores

    llmport::GenerateOptions opt;
    opt.n_tokens = argc > 3 ? std::stoi(argv[3]) : 32;
    opt.ignore_stop = true;  // exactly n_tokens, as goldens are recorded
    opt.record_top = 1;      // keep the top logit of every step
    const std::vector<int> ids = tok->encode(prompt);  // with BOS when the tokenizer adds it

    llmport::IncrementalDecoder text(*tok);  // whole UTF-8 characters only, as they complete
    std::cout << prompt << std::flush;
    const llmport::GenerateResult r = llmport::generate(engine, ids, opt, [&](int id) {
      std::cout << text.push(id) << std::flush;
    });
    std::cout << text.flush() << "\n";

    const auto& [top_id, top_logit] = r.steps.at(0).top.at(0);
    std::fprintf(stderr, "first step: id %d (%s), logit %.4f; %d tokens, prefill %.1f ms, decode %.1f ms\n",
                 top_id, tok->id_to_token(top_id).c_str(), top_logit, static_cast<int>(r.generated_ids.size()),
                 r.prefill_ms, r.decode_ms);
    return 0;
  } catch (const llmport::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return e.exit_code();
  }
}
