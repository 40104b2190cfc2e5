// Post-processors of tokenizer.json (HF tokenizers/src/processors): TemplateProcessing,
// ByteLevel (offsets only, so ids are unchanged), Bert/Roberta, Sequence. Only the single-
// sequence template is used: llmport never encodes pairs.
#include "llmport/error.hpp"
#include "tokenizer/components.hpp"

namespace llmport::tok {
namespace {

class Template final : public PostProcessor {
 public:
  Template(const json& j, const std::string& where) {
    const json& single = require(j, "single", where);
    if (!single.is_array()) throw ConfigError(where + ": 'single' must be an array");
    const json* specials = j.contains("special_tokens") ? &j["special_tokens"] : nullptr;
    for (const auto& item : single) {
      std::string special;
      bool is_seq = false;
      if (item.is_string()) {  // the "$A" / "[CLS]:0" shorthand
        std::string s = item.get<std::string>();
        if (auto c = s.rfind(':'); c != std::string::npos && c > 0) s = s.substr(0, c);
        if (!s.empty() && s[0] == '$') {
          is_seq = true;
        } else {
          special = s;
        }
      } else if (item.contains("Sequence")) {
        is_seq = true;
      } else if (item.contains("SpecialToken")) {
        special = get_string(item["SpecialToken"], "id", where, "");
      } else {
        throw ConfigError(where + ": template item must be SpecialToken or Sequence");
      }
      if (is_seq) {
        parts_.push_back({});
        seq_index_ = parts_.size() - 1;
        continue;
      }
      if (!specials || !specials->contains(special))
        throw ConfigError(where + ": special token '" + special + "' missing from special_tokens");
      const json& ids = require((*specials)[special], "ids", where);
      std::vector<int> v;
      for (const auto& id : ids) v.push_back(id.get<int>());
      parts_.push_back(std::move(v));
    }
  }
  void process(std::vector<int>& ids) const override {
    std::vector<int> out;
    for (std::size_t i = 0; i < parts_.size(); ++i) {
      if (i == seq_index_) {
        out.insert(out.end(), ids.begin(), ids.end());
      } else {
        out.insert(out.end(), parts_[i].begin(), parts_[i].end());
      }
    }
    ids.swap(out);
  }

 private:
  std::vector<std::vector<int>> parts_;  // special-token ids; parts_[seq_index_] stands for $A
  std::size_t seq_index_ = static_cast<std::size_t>(-1);
};

/// BertProcessing / RobertaProcessing: [cls] $A [sep].
class ClsSep final : public PostProcessor {
 public:
  ClsSep(const json& j, const std::string& where) {
    const json& cls = require(j, "cls", where);
    const json& sep = require(j, "sep", where);
    if (!cls.is_array() || cls.size() != 2 || !sep.is_array() || sep.size() != 2)
      throw ConfigError(where + ": 'cls'/'sep' must be [token, id]");
    cls_ = cls[1].get<int>();
    sep_ = sep[1].get<int>();
  }
  void process(std::vector<int>& ids) const override {
    ids.insert(ids.begin(), cls_);
    ids.push_back(sep_);
  }

 private:
  int cls_, sep_;
};

class Identity final : public PostProcessor {
 public:
  void process(std::vector<int>&) const override {}
};

class Sequence final : public PostProcessor {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PostProcessor>> v) : v_(std::move(v)) {}
  void process(std::vector<int>& ids) const override {
    for (const auto& p : v_) p->process(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> v_;
};

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const json& j, const std::string& where) {
  if (j.is_null()) return nullptr;
  std::string type = get_string(j, "type", where, "");
  std::string w = where + " post_processor " + type;
  try {
    if (type == "TemplateProcessing") return std::make_unique<Template>(j, w);
    if (type == "ByteLevel") return std::make_unique<Identity>();
    if (type == "BertProcessing" || type == "RobertaProcessing") return std::make_unique<ClsSep>(j, w);
    if (type == "Sequence") {
      return std::make_unique<Sequence>(make_sequence<PostProcessor>(j, "processors", w, where, make_post_processor));
    }
  } catch (const nlohmann::json::exception& e) {
    throw ConfigError(w + ": " + e.what());
  }
  throw ConfigError(where + ": unknown post_processor type '" + type + "'");
}

}  // namespace llmport::tok
