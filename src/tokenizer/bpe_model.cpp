#include "tokenizer/bpe_model.hpp"

#include <algorithm>
#include <cstdio>
#include <queue>

#include "llmport/error.hpp"
#include "tokenizer/utf8.hpp"

namespace llmport::tok {

using nlohmann::json;

std::unique_ptr<BpeModel> BpeModel::from_json(const json& m, std::vector<std::pair<std::string, int>> vocab,
                                              std::vector<std::pair<std::string, std::string>> merges,
                                              const std::string& where) {
  auto self = std::unique_ptr<BpeModel>(new BpeModel());
  BpeModel& b = *self;
  if (!m.is_object()) throw ConfigError(where + ": 'model' must be an object");
  std::string type = m.contains("type") && m["type"].is_string() ? m["type"].get<std::string>() : "BPE";
  if (type != "BPE") throw ConfigError(where + ": unknown model type '" + type + "' (only BPE is supported)");
  auto opt_str = [&](const char* k) -> std::optional<std::string> {
    auto it = m.find(k);
    if (it == m.end() || it->is_null()) return std::nullopt;
    if (!it->is_string()) throw ConfigError(where + ": model." + k + " must be a string");
    return it->get<std::string>();
  };
  auto flag = [&](const char* k) {
    auto it = m.find(k);
    if (it == m.end() || it->is_null()) return false;
    if (!it->is_boolean()) throw ConfigError(where + ": model." + k + " must be true or false, got " + std::string(it->type_name()));
    return it->get<bool>();
  };
  b.unk_token_ = opt_str("unk_token");
  b.prefix_ = opt_str("continuing_subword_prefix");
  b.suffix_ = opt_str("end_of_word_suffix");
  b.byte_fallback_ = flag("byte_fallback");
  b.fuse_unk_ = flag("fuse_unk");
  b.ignore_merges_ = flag("ignore_merges");
  if (m.contains("dropout") && m["dropout"].is_number() && m["dropout"].get<double>() > 0.0)
    throw ConfigError(where + ": model.dropout > 0 is not supported (non-deterministic)");

  // The streaming parser hands over merges only from an array; any other value would leave
  // the tokenizer without its merges (every word split into characters).
  if (auto mit = m.find("merges"); mit != m.end() && !mit->is_null() && !mit->is_array())
    throw ConfigError(where + ": model.merges must be an array");
  if (vocab.empty() && merges.empty()) {
    // DOM form (tests, small files).
    auto vit = m.find("vocab");
    if (vit == m.end() || !vit->is_object()) throw ConfigError(where + ": model.vocab must be an object");
    for (auto it = vit->begin(); it != vit->end(); ++it) {
      if (!it.value().is_number_integer() || it.value().get<long long>() < 0 || it.value().get<long long>() > (1LL << 30))
        throw ConfigError(where + ": model.vocab['" + it.key() + "'] is not a valid id");
      vocab.emplace_back(it.key(), it.value().get<int>());
    }
    auto mit = m.find("merges");
    if (mit != m.end() && !mit->is_null()) {
      if (!mit->is_array()) throw ConfigError(where + ": model.merges must be an array");
      for (const auto& mg : *mit) {
        std::string idx = std::to_string(merges.size());
        if (mg.is_string()) {
          const std::string& s = mg.get_ref<const std::string&>();
          auto sp = s.find(' ');
          if (sp == std::string::npos) throw ConfigError(where + ": merge #" + idx + " '" + s + "' is not 'left right'");
          merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
        } else if (mg.is_array() && mg.size() == 2 && mg[0].is_string() && mg[1].is_string()) {
          merges.emplace_back(mg[0].get<std::string>(), mg[1].get<std::string>());
        } else {
          throw ConfigError(where + ": merge #" + idx + " is neither \"a b\" nor [a, b]");
        }
      }
    }
  }
  if (vocab.empty()) throw ConfigError(where + ": model.vocab is missing or empty");

  // The id -> token table is dense, sized by the largest id: an id far beyond the number
  // of entries would allocate gigabytes for a few bytes of file. Ids must stay below
  // max_dense_id(entries) (twice the entries plus 1024: real vocabularies have no holes).
  int max_id = -1;
  const std::string* max_tok = nullptr;
  for (const auto& [tok, id] : vocab)
    if (id > max_id) max_id = id, max_tok = &tok;
  if (static_cast<long long>(max_id) >= max_dense_id(vocab.size()))
    throw ConfigError(where + ": model.vocab['" + *max_tok + "']: id " + std::to_string(max_id) +
                      " is beyond the vocabulary (" + std::to_string(vocab.size()) + " entries; ids must be < " +
                      std::to_string(max_dense_id(vocab.size())) + ")");
  b.id_to_token_.assign(static_cast<std::size_t>(max_id + 1), std::string());
  b.has_id_.assign(static_cast<std::size_t>(max_id + 1), false);
  for (auto& [tok, id] : vocab) {
    // Two tokens with one id: the later entry wins (as serde's map does).
    b.id_to_token_[static_cast<std::size_t>(id)] = std::move(tok);
    b.has_id_[static_cast<std::size_t>(id)] = true;
  }
  b.vocab_.build(&b.id_to_token_, b.has_id_);
  for (int x = 0; x < 256; ++x) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", x);
    b.byte_ids_[static_cast<std::size_t>(x)] = b.vocab_.find(name);
  }

  b.merges_.reserve(merges.size());
  std::size_t prefix_len = b.prefix_ ? b.prefix_->size() : 0;
  std::string joined;
  for (std::size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [l, r] = merges[rank];
    auto find = [&](std::string_view t) {
      int id = b.vocab_.find(t);
      if (id < 0)
        throw ConfigError(where + ": merge #" + std::to_string(rank) + " names token '" + std::string(t) +
                          "' that is not in the vocab");
      return id;
    };
    int a = find(l), c = find(r);
    joined.assign(l);
    joined.append(std::string_view(r).substr(std::min(prefix_len, r.size())));
    int n = find(joined);
    // A repeated pair keeps its last rank, as the reference's HashMap collect does.
    b.merges_.put(key(a, c), MergeInfo{static_cast<std::uint32_t>(rank), static_cast<std::uint32_t>(n)});
  }
  return self;
}

std::optional<int> BpeModel::token_to_id(std::string_view token) const {
  int id = vocab_.find(token);
  if (id < 0) return std::nullopt;
  return id;
}

const std::string* BpeModel::id_to_token(int id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= id_to_token_.size() || !has_id_[static_cast<std::size_t>(id)])
    return nullptr;
  return &id_to_token_[static_cast<std::size_t>(id)];
}

void BpeModel::tokenize(std::string_view w, std::vector<int>& out) const {
  if (w.empty()) return;
  if (ignore_merges_) {
    if (int id = vocab_.find(w); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  if (w.size() > kMaxCachedWordBytes) {
    merge_word(w, out);
    return;
  }
  {
    std::shared_lock lock(cache_mu_);
    auto it = cache_.find(w);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int> ids;
  merge_word(w, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  std::unique_lock lock(cache_mu_);
  if (cache_.size() < kCacheCapacity) cache_.emplace(std::string(w), std::move(ids));
}

namespace {

struct Symbol {
  int id;
  int prev;
  int next;
  std::size_t len;  // bytes covered; 0 marks a symbol merged into its left neighbour
};

struct Candidate {
  std::uint32_t rank;
  int pos;
  std::uint32_t new_id;
  // Min-heap on (rank, pos), as Merge's Ord in word.rs.
  bool operator<(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace

void BpeModel::merge_word(std::string_view w, std::vector<int>& out) const {
  std::vector<Symbol> sym;  // [n_symbols]
  sym.reserve(w.size());
  auto add = [&](int id, std::size_t len) {
    int n = static_cast<int>(sym.size());
    sym.push_back(Symbol{id, n - 1, -1, len});
    if (n > 0) sym[static_cast<std::size_t>(n - 1)].next = n;
  };
  int unk_id = -1;  // pending unk symbol not yet added (-1: none) and its byte length
  std::size_t unk_len = 0;
  std::string buf;
  std::size_t i = 0;
  while (i < w.size()) {
    std::size_t start = i;
    std::size_t n = utf8_valid_len(w, i);
    i += n ? n : 1;
    std::string_view ch = w.substr(start, i - start);
    bool first = start == 0, last = i >= w.size();
    std::string_view s = ch;
    if ((!first && prefix_ && !prefix_->empty()) || (last && suffix_ && !suffix_->empty())) {
      buf.clear();
      if (!first && prefix_) buf += *prefix_;
      buf += ch;
      if (last && suffix_) buf += *suffix_;
      s = buf;
    }
    if (int id = vocab_.find(s); id >= 0) {
      if (unk_id >= 0) {
        add(unk_id, unk_len);
        unk_id = -1;
      }
      add(id, ch.size());
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char c : s) all &= byte_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        // As the reference, pending unk is not flushed here: it lands after these bytes.
        for (char c : s) add(byte_ids_[static_cast<unsigned char>(c)], 1);
        continue;
      }
    }
    if (unk_token_) {
      int uid = vocab_.find(*unk_token_);
      if (uid < 0) throw ConfigError("tokenizer.json: unk_token '" + *unk_token_ + "' is not in the vocab");
      if (unk_id >= 0 && fuse_unk_) {
        unk_len += ch.size();
      } else {
        if (unk_id >= 0) add(unk_id, unk_len);
        unk_id = uid;
        unk_len = ch.size();
      }
    }
  }
  if (unk_id >= 0) add(unk_id, unk_len);

  std::priority_queue<Candidate> queue;
  for (std::size_t k = 0; k + 1 < sym.size(); ++k)
    if (const MergeInfo* m = find_merge(sym[k].id, sym[k + 1].id))
      queue.push(Candidate{m->rank, static_cast<int>(k), m->new_id});
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    auto pos = static_cast<std::size_t>(top.pos);
    if (sym[pos].len == 0 || sym[pos].next == -1) continue;
    auto right_pos = static_cast<std::size_t>(sym[pos].next);
    const MergeInfo* m = find_merge(sym[pos].id, sym[right_pos].id);
    if (!m || m->new_id != top.new_id) continue;  // stale entry
    sym[pos].id = static_cast<int>(top.new_id);
    sym[pos].len += sym[right_pos].len;
    sym[pos].next = sym[right_pos].next;
    sym[right_pos].len = 0;
    if (sym[pos].next >= 0) sym[static_cast<std::size_t>(sym[pos].next)].prev = top.pos;
    if (sym[pos].prev >= 0) {
      auto prev = static_cast<std::size_t>(sym[pos].prev);
      if (const MergeInfo* pm = find_merge(sym[prev].id, sym[pos].id))
        queue.push(Candidate{pm->rank, sym[pos].prev, pm->new_id});
    }
    if (sym[pos].next >= 0) {
      if (const MergeInfo* nm = find_merge(sym[pos].id, sym[static_cast<std::size_t>(sym[pos].next)].id))
        queue.push(Candidate{nm->rank, top.pos, nm->new_id});
    }
  }
  for (const auto& s : sym)
    if (s.len != 0) out.push_back(s.id);
}

}  // namespace llmport::tok
