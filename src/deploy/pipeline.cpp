// `llmport deploy`: validation before anything is written, workspace creation or resume,
// then phases 0..7 in order, stopping at the first gate that does not pass.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iostream>
#include <map>
#include <memory>
#include <unistd.h>

#include "deploy/docs_writer.hpp"
#include "deploy/interrupt_note.hpp"
#include "deploy/manifest.hpp"
#include "deploy/phase.hpp"
#include "deploy/util.hpp"
#include "llmport/compat.hpp"
#include "llmport/engine.hpp"
#include "llmport/error.hpp"
#include "llmport/file_io.hpp"
#include "llmport/kernels.hpp"
#include "llmport/records.hpp"
#include "llmport/tokenizer.hpp"
#include "llmport/verify.hpp"
#include "llmport/weights.hpp"

namespace llmport::deploy {
namespace fs = std::filesystem;

namespace {

std::optional<std::string> ask(std::istream& in, std::ostream& out, const std::string& question) {
  out << question << " " << std::flush;
  std::string line;
  if (!std::getline(in, line)) {
    out << "\n";
    return std::nullopt;
  }
  return line;
}

bool yes(const std::optional<std::string>& a) {
  if (!a || a->empty()) return false;
  char c = static_cast<char>(std::tolower(static_cast<unsigned char>((*a)[0])));
  return c == 'y' || c == 'r';
}

std::vector<std::string> deploy_targets() {
  std::vector<std::string> t;
  for (const auto& b : available_backends())
    if (b != "reference") t.push_back(b);  // the oracle is the reference, never a target
  return t;
}

std::string passed_summary(const Manifest& m) {
  std::vector<std::string> s;
  for (const auto& p : m.phases) s.push_back(fmt::format("{}:{}", p.phase, status_name(p.status)));
  return join(s, " ");
}


// What validation resolved: all the workspace and the phases need, computed before
// anything is written.
struct Validated {
  fs::path model_dir;
  ModelConfig cfg;
  ReferenceSpec ref;
  FaultInjection fault;
  std::string isa;
  std::string dtype;  // its name: bf16 | fp16 | fp32 | q8_0 | q4_0
  DType base = DType::F32;  // the weights' dtype (a quantized deployment's unquantized tensors)
  QuantType quant = QuantType::None;
};

// The characters of a deployment name (ASCII only, whatever the locale says).
bool ascii_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool name_char(char c) { return ascii_alnum(c) || c == '.' || c == '_' || c == '-'; }

// A path with a line break cannot be written into the workspace Makefile (nor be one
// line of a README table); the message shows it escaped, so it stays one line.
void check_no_line_break(const std::string& path, const std::string& field) {
  if (path.find_first_of("\n\r") != std::string::npos)
    throw UsageError(fmt::format("{} {}: a path with a line break cannot be deployed (the workspace Makefile "
                                 "holds it); rename or move it",
                                 field, printable(path)));
}

void check_phase_options(const DeployOptions& opt) {
  auto targets = deploy_targets();
  if (const std::string why = missing_target_message(opt.target); !why.empty())
    throw UsageError(fmt::format("--target {}: {}", opt.target, why));
  if (std::find(targets.begin(), targets.end(), opt.target) == targets.end())
    throw UsageError(fmt::format("--target {}: not built into this binary; available targets: {}",
                                 opt.target, join(targets, ", ")));
  if (opt.from_phase && (*opt.from_phase < 0 || *opt.from_phase >= kNumPhases))
    throw UsageError(fmt::format("--from-phase {}: phases are 0-{}", *opt.from_phase, kNumPhases - 1));
  if (opt.last_phase < 0 || opt.last_phase >= kNumPhases)
    throw UsageError(fmt::format("--last-phase {}: phases are 0-{}", opt.last_phase, kNumPhases - 1));
}

// A --prompts file is read and checked here, before a workspace exists (a malformed file
// is exit 2 with the file named, never a blocked phase 0). Without a tokenizer the prompts
// are ids: verify's built-in id set by default; a --prompts file must then give prompt_ids.
void check_prompts_file(const DeployOptions& opt, const ModelConfig& cfg, const fs::path& model_dir) {
  if (!opt.prompts.empty() && !fs::is_regular_file(opt.prompts))
    throw UsageError("--prompts " + opt.prompts.string() + ": file not found");
  check_prompts_beside_reference(opt.reference, opt.prompts);
  const bool has_tokenizer = fs::is_regular_file(model_dir / "tokenizer.json");
  if (opt.prompts.empty()) return;
  for (const auto& p : read_prompt_file(opt.prompts)) {
    if (p.ids)
      for (int id : *p.ids)
        if (id < 0 || id >= cfg.vocab_size)
          throw UsageError("--prompts " + opt.prompts.string() + ": prompt '" + p.name + "': token id " +
                           std::to_string(id) + " is outside the vocabulary [0, " +
                           std::to_string(cfg.vocab_size) + ")");
    if (!p.ids && !has_tokenizer)
      throw UsageError("--prompts " + opt.prompts.string() + ": prompt '" + p.name + "' is text, but " +
                       model_dir.string() + " has no tokenizer.json: give prompt_ids (or drop --prompts "
                       "for the built-in id prompts)");
  }
}


// --dtype (bf16|fp16|fp32, or q8_0|q4_0 over the checkpoint's dtype, as the engine reads
// it: set_dtype_flag), else the checkpoint's dtype; the KLD-gate options need a quantized
// dtype and are checked here, before anything is written.
void resolve_dtype(const DeployOptions& opt, const fs::path& model_dir, Validated& v) {
  EngineOptions e;
  if (!opt.dtype.empty()) set_dtype_flag(e, opt.dtype);
  v.quant = e.quant;
  // A store that does not open is phase 0's finding (BLOCKED with the loader's message).
  v.base = e.dtype ? *e.dtype : checkpoint_dtype(v.cfg, model_dir, DType::F32);
  v.dtype = precision_name(v.base, v.quant);
  const bool quantized = v.quant != QuantType::None;
  if (!opt.quantize_lm_head.empty()) {
    if (parse_quant(opt.quantize_lm_head) == QuantType::None)
      throw UsageError("--quantize-lm-head '" + opt.quantize_lm_head + "': expected q8_0 or q4_0");
    if (!quantized) throw UsageError("--quantize-lm-head needs a quantized --dtype (q8_0 or q4_0)");
  }
  if ((opt.kl_bound || opt.min_top1) && !quantized)
    throw UsageError("--kl-bound and --min-top1 set the KLD gate of a quantized deployment (--dtype q8_0 or q4_0)");
  if (opt.kl_bound && !(*opt.kl_bound > 0 && std::isfinite(*opt.kl_bound)))
    throw UsageError(fmt::format("--kl-bound {}: must be a finite number > 0", *opt.kl_bound));
  if (opt.min_top1 && !(*opt.min_top1 > 0 && *opt.min_top1 <= 1))
    throw UsageError(fmt::format("--min-top1 {}: must be a share in (0, 1]", *opt.min_top1));
}

// Every check a deploy can fail before it writes anything; also settles opt.model_dir and
// opt.name, which the phases read.
Validated validate_options(DeployOptions& opt) {
  if (!opt.name.empty()) check_deployment_name(opt.name);  // first: cheap, and nothing else depends on it
  check_phase_options(opt);
  Validated v;
  if (opt.model_dir.empty()) opt.model_dir = opt.model;
  fs::path cfg_file = find_config_json(opt.model_dir);
  v.model_dir = fs::weakly_canonical(fs::absolute(cfg_file.parent_path()));
  // One read of config.json: the gate, then (ACCEPT) the resolved config of that same parse.
  ConfigCheck checked = check_model_config(cfg_file, opt.max_seq);
  const CompatResult& compat = checked.gate;
  if (!compat.accepted)
    throw UnsupportedError(fmt::format("{}: {}; nothing was written", cfg_file.string(), compat.message));
  v.cfg = std::move(*checked.config);
  // Damaged or missing weights (a truncated download, a header that lost a tensor, a
  // config-only directory) are bad input, as `llmport check` says: refused here, before a
  // workspace exists (phase 0 still loads every tensor). Only the headers are read.
  (void)check_safetensors_headers(v.model_dir);
  (void)WeightStore::open(v.model_dir, v.cfg);
  // A malformed tokenizer.json or golden is bad input too (exit 2), found here rather than
  // as a BLOCKED phase 0 in a workspace just created for it.
  if (Tokenizer::exists(v.model_dir)) (void)Tokenizer::load(v.model_dir);
  v.ref = ReferenceSpec::parse(opt.reference);
  if (v.ref.kind == "golden") check_record_fits_model(read_record_file(v.ref.file), v.cfg);
  if (v.ref.kind == "hf" || v.ref.kind == "numpy") require_reference_program(v.ref.kind);
  check_prompts_file(opt, v.cfg, v.model_dir);
  if (!opt.fault.empty()) v.fault = FaultInjection::parse(opt.fault);
  // The target must be a backend of this binary (named error otherwise); its ISA is what
  // phases 1-5 validate and tune, and what the evaluator audits the re-run against.
  v.isa = make_backend(opt.target, 1)->isa();
  resolve_dtype(opt, v.model_dir, v);
  opt.name = opt.name.empty() ? default_deployment_name(opt.model, v.model_dir) : opt.name;
  check_deployment_name(opt.name);  // a derived default passes by construction: kept as a guard
  // The paths the generated Makefile and docs carry: make has no way to hold a line break
  // in a variable, so such a path is refused here, before anything is written.
  check_no_line_break(v.model_dir.string(), "MODEL (model directory)");
  check_no_line_break(fs::absolute(opt.workspace).string(), "--workspace");
  if (v.ref.kind == "golden") check_no_line_break(v.ref.file.string(), "--reference");
  if (!opt.prompts.empty()) check_no_line_break(fs::absolute(opt.prompts).string(), "--prompts");
  return v;
}

// A resumed deployment must be the same deployment: same model content, target, dtype,
// context cap and reference (only --from-phase 0 may change them).
void check_same_deployment(const DeployOptions& opt, const Validated& v, const Workspace& ws, const Manifest& m,
                           const std::string& content_hash) {
  std::vector<std::string> diffs;
  if (m.content_hash != content_hash) diffs.push_back("model content hash");
  if (m.target != opt.target) diffs.push_back("target " + m.target + " -> " + opt.target);
  if (m.dtype != v.dtype) diffs.push_back("dtype " + m.dtype + " -> " + v.dtype);
  if (m.quantize_lm_head != opt.quantize_lm_head)
    diffs.push_back("--quantize-lm-head '" + m.quantize_lm_head + "' -> '" + opt.quantize_lm_head + "'");
  if (m.verify_kl_bound != opt.kl_bound.value_or(0.0) || m.verify_min_top1 != opt.min_top1.value_or(0.0))
    diffs.push_back("KLD gate bounds (--kl-bound, --min-top1)");
  if (m.max_seq != opt.max_seq.value_or(0))
    diffs.push_back(fmt::format("--max-seq {} -> {}", m.max_seq, opt.max_seq.value_or(0)));
  if (m.reference.to_arg() != v.ref.to_arg())
    diffs.push_back("reference " + m.reference.to_arg() + " -> " + v.ref.to_arg());
  else if (v.ref.kind == "golden" && m.reference_hash != reference_files_sha256(v.ref.file))
    diffs.push_back("golden file content (" + v.ref.file.string() + " changed since the deployment)");
  if (!diffs.empty() && opt.from_phase.value_or(-1) != 0)
    throw UsageError(fmt::format("deployment {} exists with a different {}; nothing was changed: "
                                 "restart it with --from-phase 0, or choose another --name",
                                 ws.dir().string(), join(diffs, ", ")));
}

// The phase an existing deployment resumes at: --from-phase (never past an unpassed
// phase), --resume, or the user's answer. nullopt: nothing to run, exit 0 (the user
// declined, or every phase has passed).
std::optional<int> resume_phase(const DeployOptions& opt, const Workspace& ws, const Manifest& m, std::istream& in,
                                std::ostream& out) {
  const int fu = m.first_unpassed();
  int start = fu;
  if (opt.from_phase) {
    start = *opt.from_phase;
    if (start > fu)
      throw UsageError(fmt::format(
          "--from-phase {}: phase {} ({}) has not passed ({}); a resume never skips it: use "
          "--from-phase {} or earlier",
          start, fu, phase_name(fu), status_name(m.phases[static_cast<std::size_t>(fu)].status), fu));
  } else if (!opt.resume && fu < kNumPhases) {  // a finished deployment has nothing to ask about
    auto a = ask(in, out,
                 fmt::format("deployment '{}' exists at {} ({}). Resume at phase {}? [y/N]", opt.name,
                             ws.dir().string(), passed_summary(m), fu));
    if (!a)
      throw UsageError(fmt::format(
          "deployment {} already exists and nobody answered whether to resume it; nothing was "
          "changed: pass --resume or --from-phase N (phases passed: up to {}), or choose another "
          "--name/--workspace",
          ws.dir().string(), fu - 1));
    if (!yes(a)) {
      out << "left deployment " << ws.dir().string() << " unchanged\n";
      return std::nullopt;
    }
  }
  if (start >= kNumPhases) {
    out << "deployment " << opt.name << ": every phase has passed; nothing to do (re-run a phase "
           "with --from-phase N)\n";
    return std::nullopt;
  }
  log_progress(ws, fmt::format("resumed at phase {} ({})", start, phase_name(start)));
  return start;
}

// One deploy per deployment at a time: two runs would interleave phases and files. Taken
// once every check passed (a refused deploy creates nothing), before anything is written.
std::unique_ptr<FileLock> lock_deployment(const DeployOptions& opt, const Workspace& ws) {
  {
    std::error_code ec;
    fs::create_directories(opt.workspace, ec);
    if (ec || !fs::is_directory(opt.workspace))
      throw UsageError("--workspace " + opt.workspace.string() +
                       (ec && !fs::exists(opt.workspace) ? ": cannot be created (" + ec.message() + ")"
                                                         : std::string(": not a directory")));
  }
  auto lock = FileLock::try_lock(deployment_lock_file(opt.workspace, opt.name));
  if (!lock)
    throw UsageError(fmt::format("deployment {} is being deployed by another llmport process; "
                                 "nothing was changed: wait for it to finish, or choose another --name",
                                 ws.dir().string()));
  return lock;
}

// The manifest as this run starts: what was deployed, and phases from `start` on reset.
void fill_manifest(Manifest& m, const DeployOptions& opt, const Validated& v,
                   const std::map<std::string, std::string>& hashes, const std::string& content_hash, int start) {
  m.name = opt.name;
  m.model_dir = v.model_dir;
  m.repo_id = opt.repo_id;
  m.revision = opt.revision;
  m.commit = opt.commit;
  m.max_seq = opt.max_seq.value_or(0);
  m.file_hashes = hashes;
  // Sizes and mtimes for `status`'s cheap check (status.cpp); taken just after the hashes.
  m.file_stats = stat_model_files(v.model_dir, hashes);
  m.content_hash = content_hash;
  m.architecture = v.cfg.architecture;
  m.target = opt.target;
  m.dtype = v.dtype;
  m.quantize_lm_head = opt.quantize_lm_head;
  m.verify_kl_bound = opt.kl_bound.value_or(0.0);
  m.verify_min_top1 = opt.min_top1.value_or(0.0);
  m.threads = opt.threads;
  m.isa = v.isa;
  m.reference = v.ref;
  m.reference_hash = v.ref.kind == "golden" ? reference_files_sha256(v.ref.file) : "";
  m.has_tokenizer = fs::is_regular_file(v.model_dir / "tokenizer.json");
  m.prompts_file = opt.prompts.empty() ? fs::path() : fs::weakly_canonical(fs::absolute(opt.prompts));
  m.llmport_version = LLMPORT_VERSION;
  m.resolved_config = v.cfg.to_json();
  m.fault = opt.fault;
  m.quick = opt.quick;
  for (int i = start; i < kNumPhases; ++i) {
    m.phases[static_cast<std::size_t>(i)] = PhaseResult{};
    m.phases[static_cast<std::size_t>(i)].phase = i;
  }
  if (start <= 7) m.needs_human_review = false;
}

// Writes the workspace's directories, manifest, progress files and docs for this run.
void open_workspace(const Workspace& ws, Manifest& m, const DeployOptions& opt, const Validated& v,
                    const std::map<std::string, std::string>& hashes, const std::string& content_hash, int start,
                    std::ostream& out) {
  ws.create_dirs();
  fill_manifest(m, opt, v, hashes, content_hash, start);
  m.save(ws.manifest());
  init_progress_files(ws, m);
  if (start == 0) log_progress(ws, fmt::format("deployment created: model {} target {} dtype {} reference {}",
                                               v.model_dir.string(), m.target, m.dtype, v.ref.to_arg()));
  write_all(ws, m, v.cfg);
  out << fmt::format("deploy {}: model {} ({}), target {}, dtype {}, reference {}{}\n", m.name,
                     v.model_dir.string(), v.cfg.architecture, m.target, m.dtype, v.ref.to_arg(),
                     v.ref.independent() ? "" : " (not independent)");
  out << "workspace: " << ws.dir().string() << "\n";
}

// Runs phase i; whatever it throws becomes its result (a gate: FAIL, anything else:
// BLOCKED), so the manifest always records why a deploy stopped.
PhaseResult run_phase(Phase& phase, Context& ctx, int i) {
  ctx.compile_s = ctx.runtime_s = 0;
  std::string t0 = now_iso();
  Stopwatch sw;
  PhaseResult r;
  try {
    r = phase.run(ctx);
  } catch (const GateError& e) {
    r = make_result(i, PhaseStatus::Fail, e.what());
  } catch (const Error& e) {
    r = make_result(i, PhaseStatus::Blocked, e.what());
    r.bad_input = e.exit_code() == kExitBadInput;
  } catch (const std::exception& e) {
    r = make_result(i, PhaseStatus::Blocked, std::string("internal error: ") + e.what());
  }
  r.phase = i;
  r.timing.start = t0;
  r.timing.end = now_iso();
  r.timing.wall_min = sw.seconds() / 60.0;
  r.timing.compile_min = ctx.compile_s / 60.0;
  r.timing.runtime_s = ctx.runtime_s;
  return r;
}

// Phases start..last_phase in order, each result saved before the next starts; stops at
// the first that does not pass (exit 1; 2 where the user's input blocked it) or where the
// user says so (exit 0).
int run_phases(const DeployOptions& opt, const Validated& v, const Workspace& ws, Manifest& m, int start,
               std::istream& in, std::ostream& out) {
  Context ctx(opt, ws, m, v.cfg, out);
  ctx.dtype = v.base;
  ctx.quant = v.quant;
  ctx.ref = v.ref;
  ctx.fault = v.fault;
  auto phases = make_phases();
  InterruptNote interrupted(ws.progress());
  for (int i = start; i <= opt.last_phase; ++i) {
    out << fmt::format("phase {} ({}) ...\n", i, phase_name(i)) << std::flush;
    log_progress(ws, fmt::format("phase {} ({}) started", i, phase_name(i)));
    interrupted.set_phase(i, std::string(phase_name(i)));
    const PhaseResult r = run_phase(*phases[static_cast<std::size_t>(i)], ctx, i);
    m.phases[static_cast<std::size_t>(i)] = r;
    if (i == 7 && r.status == PhaseStatus::Fail) m.needs_human_review = true;
    m.save(ws.manifest());
    log_phase(ws, r);
    write_all(ws, m, v.cfg);
    out << fmt::format("phase {} ({}): {}{}{}\n", i, phase_name(i), status_name(r.status),
                       r.reason.empty() ? "" : " — ", r.reason);
    for (const auto& w : r.warnings) out << "  warning: " << w << "\n";
    if (!is_pass(r.status)) {
      out << fmt::format("stopped at phase {}: see {}; after the fix resume with --from-phase {}\n", i,
                         ws.todo().string(), i);
      return r.status == PhaseStatus::Blocked && r.bad_input ? kExitBadInput : kExitCheckFailed;
    }
    if (opt.interactive && i < opt.last_phase) {
      auto a = ask(in, out, fmt::format("advance to phase {} ({})? [y/N]", i + 1, phase_name(i + 1)));
      if (!yes(a)) {
        out << fmt::format("stopped after phase {} at your request; resume with --from-phase {}\n", i, i + 1);
        log_progress(ws, fmt::format("stopped by the user after phase {}", i));
        return kExitOk;
      }
    }
  }
  // The last line is the verdict a user acts on: a PASS-with-warnings says so and why
  // (phase 7's reason names the caps), not only that the gates let it through.
  const PhaseResult& last = m.phases[static_cast<std::size_t>(opt.last_phase)];
  out << fmt::format("deploy {}: phases {}-{} passed; {}{}{}; workspace {}\n", opt.name, start, opt.last_phase,
                     opt.last_phase == 7 ? "verdict " : "last phase ", status_name(last.status),
                     last.status == PhaseStatus::PassWithWarnings && !last.warnings.empty()
                         ? " (" + last.warnings.front() + ")"
                         : "",
                     ws.dir().string());
  return kExitOk;
}

}  // namespace

void check_deployment_name(const std::string& name) {
  const bool ok = !name.empty() && name.size() <= kMaxDeploymentNameLength && ascii_alnum(name[0]) &&
                  std::all_of(name.begin(), name.end(), name_char);
  if (!ok)
    throw UsageError(fmt::format("--name '{}': a deployment name is 1-{} characters: letters, digits, '.', '_' "
                                 "and '-', starting with a letter or digit",
                                 printable(name), kMaxDeploymentNameLength));
}

std::string default_deployment_name(const std::string& model_arg, const fs::path& model_dir) {
  std::string n;
  bool is_local = !model_arg.empty() && fs::exists(model_arg);
  if (!is_local && !model_arg.empty()) {
    n = model_arg.substr(0, model_arg.find('@'));  // HF id org/name[@rev]
  } else {
    fs::path p = fs::weakly_canonical(fs::absolute(model_dir.empty() ? fs::path(model_arg) : model_dir));
    if (p.filename() == "config.json") p = p.parent_path();
    if (p.filename().empty()) p = p.parent_path();
    n = p.filename().string();
  }
  std::transform(n.begin(), n.end(), n.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::replace(n.begin(), n.end(), '/', '_');
  // A directory name may hold anything ('$', spaces, quotes); the name ends up in the
  // Makefile and in shell commands of the docs, so it is brought into the set
  // check_deployment_name allows rather than refused (the user did not choose it).
  for (char& c : n)
    if (!name_char(c)) c = '_';
  n.erase(0, n.find_first_not_of("._-"));
  if (n.size() > kMaxDeploymentNameLength) n.resize(kMaxDeploymentNameLength);
  return n.empty() ? std::string("model") : n;
}

namespace {
// " (deployments in WORKSPACE: a, b)", or "" when it holds none.
std::string existing_deployments(const fs::path& workspace) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(workspace, ec), end; !ec && it != end; it.increment(ec))
    if (Workspace(it->path()).is_deployment()) names.push_back(it->path().filename().string());
  if (names.empty()) return "";
  std::sort(names.begin(), names.end());
  return " (deployments in " + workspace.string() + ": " + join(names, ", ") + ")";
}
}  // namespace

// A deploy of an existing deployment (--resume, --from-phase, or the resume question)
// continues it as deployed: an option the command line leaves out takes deployment.json's
// value, as --threads does, so `deploy MODEL [--resume]` needs no repeat of --reference or
// --dtype (they read as the defaults, which check_same_deployment then refused as a
// change). A value given that differs is still refused there. A deployment that is not
// there or does not load is left to the checks.
void resume_as_deployed(DeployOptions& opt) {
  const std::string name = opt.name.empty() ? default_deployment_name(opt.model, opt.model_dir) : opt.name;
  const Workspace ws(opt.workspace / name);
  if (!ws.is_deployment()) return;
  Manifest m;
  try {
    m = Manifest::load(ws.manifest());
  } catch (const Error&) {
    return;
  }
  if (!opt.reference_given) opt.reference = m.reference.to_arg();
  if (opt.dtype.empty()) opt.dtype = m.dtype;
  if (opt.quantize_lm_head.empty()) opt.quantize_lm_head = m.quantize_lm_head;
  if (!opt.kl_bound && m.verify_kl_bound > 0) opt.kl_bound = m.verify_kl_bound;
  if (!opt.min_top1 && m.verify_min_top1 > 0) opt.min_top1 = m.verify_min_top1;
  if (!opt.max_seq && m.max_seq > 0) opt.max_seq = m.max_seq;
  if (opt.prompts.empty() && !m.prompts_file.empty()) opt.prompts = m.prompts_file;
}

int run_deploy(DeployOptions opt, std::istream& in, std::ostream& out) {
  resume_as_deployed(opt);
  const Validated v = validate_options(opt);  // nothing is written before this passes
  Workspace ws(opt.workspace / opt.name);
  auto hashes = hash_model_files(v.model_dir);
  std::string content_hash = combine_hashes(hashes);

  Manifest m;
  int start = 0;
  if (fs::exists(ws.dir())) {
    if (!ws.is_deployment())
      throw UsageError(ws.dir().string() +
                       " exists and is not an llmport deployment (no deployment.json); refusing "
                       "to touch it: choose another --name or --workspace");
    m = Manifest::load(ws.manifest());
    check_same_deployment(opt, v, ws, m, content_hash);
    const std::optional<int> resumed = resume_phase(opt, ws, m, in, out);
    if (!resumed) return kExitOk;
    start = *resumed;
    // A resumed deployment runs at its recorded thread count unless --threads says
    // otherwise: its tuned entries were measured there, and the evaluator would refuse them
    // at another count (a PASS turned FAIL by a resume without the flag).
    if (!opt.threads_given && start > 0) opt.threads = m.threads;
  } else {
    // A resume of a deployment that is not there (a mistyped --name or --workspace) would
    // start a new one from phase 0 under that name.
    if (opt.resume)
      throw UsageError(fmt::format("--resume: no deployment at {}{}; start without --resume", ws.dir().string(),
                                   existing_deployments(opt.workspace)));
    if (opt.from_phase.value_or(0) > 0)
      throw UsageError(fmt::format("--from-phase {}: no deployment at {} yet, so phase 0 has not "
                                   "passed; start without --from-phase",
                                   *opt.from_phase, ws.dir().string()));
    m.created = now_iso();
  }

  const auto lock = lock_deployment(opt, ws);
  open_workspace(ws, m, opt, v, hashes, content_hash, start, out);
  return run_phases(opt, v, ws, m, start, in, out);
}

}  // namespace llmport::deploy
