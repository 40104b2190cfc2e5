#include "chat/evaluator.hpp"

#include <functional>
#include <optional>
#include <unordered_map>
#include <variant>

#include "chat/errors.hpp"
#include "chat/filters.hpp"
#include "chat/globals.hpp"
#include "chat/jinja_tests.hpp"
#include "chat/ops.hpp"
#include "chat/sandbox.hpp"
#include "llmport/error.hpp"

namespace llmport::jinja {
namespace {

using Scope = std::unordered_map<std::string, Value>;
using Scopes = std::vector<std::shared_ptr<Scope>>;

/// A macro's closure: the scopes it was defined in. The innermost one, where the macro
/// itself is stored, is held weakly (a strong reference would be a cycle, leaked on every
/// render); the outer ones cannot hold the macro except through a namespace, which the
/// render budget empties at the end of the render.
struct Closure {
  Scopes outer;
  std::weak_ptr<Scope> own;
};

class Evaluator {
 public:
  Evaluator(std::string* out, RenderBudget* budget) : out_(out), budget_(budget) {}

  void run(const Program& p, const std::vector<std::pair<std::string, Value>>& vars) {
    auto top = std::make_shared<Scope>();
    for (const auto& [k, v] : vars) (*top)[k] = v;
    scopes_.push_back(top);
    scopes_.push_back(std::make_shared<Scope>());  // the template's own `set`s
    exec_body(p.body);
  }

  int line() const { return line_; }

 private:
  enum class Flow { Normal, Break, Continue };

  /// One nested evaluation frame (counted against RenderLimits::kMaxNesting) and one step.
  struct Frame {
    explicit Frame(RenderBudget* b) : b_(b) {
      b_->step();
      b_->enter_frame();
    }
    ~Frame() { b_->leave_frame(); }
    Frame(const Frame&) = delete;
    Frame& operator=(const Frame&) = delete;
    RenderBudget* b_;
  };

  void write(const std::string& s) {
    check_string_size(out_->size() + s.size(), "output");
    *out_ += s;
  }

  // ---- scopes ----
  Value lookup(const std::string& name) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto f = (*it)->find(name);
      if (f != (*it)->end()) return f->second;
    }
    const auto& g = global_functions();
    auto f = g.find(name);
    if (f != g.end()) return f->second;
    return Value::undefined("'" + name + "' is undefined");
  }
  void assign(const std::string& name, Value v) { (*scopes_.back())[name] = std::move(v); }

  void assign_targets(const std::vector<std::string>& targets, const Value& v) {
    if (targets.size() == 1) {
      assign(targets[0], v);
      return;
    }
    ValueList items = iterate(v);
    if (items.size() != targets.size())
      throw RenderError(items.size() > targets.size()
                            ? "too many values to unpack (expected " + std::to_string(targets.size()) + ")"
                            : "not enough values to unpack (expected " + std::to_string(targets.size()) + ", got " +
                                  std::to_string(items.size()) + ")");
    for (std::size_t i = 0; i < targets.size(); ++i) assign(targets[i], items[i]);
  }

  // ---- statements ----
  Flow exec_body(const Body& body) {
    for (const auto& n : body) {
      Flow f = exec(*n);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }

  std::string capture(const Body& body) {
    std::string buf;
    std::string* saved = out_;
    out_ = &buf;
    try {
      exec_body(body);
    } catch (...) {
      out_ = saved;
      throw;
    }
    out_ = saved;
    return buf;
  }

  Value apply_filters(const std::vector<ExprPtr>& filters, Value v) {
    for (const auto& f : filters) {
      line_ = f->line;
      v = apply_filter(f->name, v, eval_args(*f, 1));
    }
    return v;
  }

  Flow exec(const Node& n) {
    line_ = n.line;
    Frame frame(budget_);
    switch (n.kind) {
      case Node::K::Text: write(n.text); return Flow::Normal;
      case Node::K::Output: write(eval(*n.expr).str()); return Flow::Normal;
      case Node::K::If:
        for (const auto& [cond, body] : n.branches)
          if (eval(*cond).truthy()) return exec_body(body);
        return exec_body(n.else_body);
      case Node::K::For: return exec_for(n);
      case Node::K::Set: {
        Value v = eval(*n.expr);
        if (n.text.empty()) {
          assign_targets(n.targets, v);
          return Flow::Normal;
        }
        Value ns = lookup(n.targets[0]);
        if (!ns.is_object() || !ns.as_object().is_namespace)
          throw RenderError("cannot assign attribute on non-namespace object ('" + n.targets[0] + "')");
        if (Value* slot = object_find(ns.as_object(), n.text))
          *slot = v;
        else
          ns.as_object().attrs.emplace_back(Value::string(n.text), v);
        return Flow::Normal;
      }
      case Node::K::SetBlock: assign(n.text, apply_filters(n.filters, Value::string(capture(n.body)))); return Flow::Normal;
      case Node::K::FilterBlock: write(apply_filters(n.filters, Value::string(capture(n.body))).str()); return Flow::Normal;
      case Node::K::Macro: assign(n.text, make_macro(n)); return Flow::Normal;
      case Node::K::Break: return Flow::Break;
      case Node::K::Continue: return Flow::Continue;
      case Node::K::Generation: return exec_body(n.body);
    }
    return Flow::Normal;
  }

  Flow exec_for(const Node& n) {
    // A list is iterated in place (it is immutable; `seq` keeps it alive), not copied.
    Value seq = eval(*n.expr);
    ValueList owned;
    if (!seq.is_list()) owned = iterate(seq);
    const ValueList* src = seq.is_list() ? &seq.as_list() : &owned;
    if (n.cond) {
      ValueList kept;
      for (const auto& item : *src) {
        budget_->loop_iteration();
        scopes_.push_back(std::make_shared<Scope>());
        assign_targets(n.targets, item);
        bool keep = eval(*n.cond).truthy();
        scopes_.pop_back();
        if (keep) kept.push_back(item);
      }
      owned = std::move(kept);
      src = &owned;
    }
    const ValueList& items = *src;
    if (items.empty()) {
      scopes_.push_back(std::make_shared<Scope>());
      Flow f = exec_body(n.else_body);
      scopes_.pop_back();
      return f == Flow::Normal ? Flow::Normal : f;
    }
    auto len = static_cast<std::int64_t>(items.size());
    auto last_changed = std::make_shared<std::optional<ValueList>>();
    const bool wants_loop = uses_loop(n);
    for (std::int64_t i = 0; i < len; ++i) {
      budget_->loop_iteration();
      if (!wants_loop) {  // the body never names `loop`: skip building it (most loops)
        // A body that assigns nothing in its own scope (no set / macro outside an inner
        // loop) sees the same names every iteration: one scope serves them all.
        const bool fresh = i == 0 || assigns_in_scope(n.body);
        if (fresh) {
          if (i > 0) scopes_.pop_back();
          scopes_.push_back(std::make_shared<Scope>());
        }
        Flow f;
        try {
          assign_targets(n.targets, items[static_cast<std::size_t>(i)]);
          f = exec_body(n.body);
        } catch (...) {
          scopes_.pop_back();
          throw;
        }
        if (f == Flow::Break || i + 1 == len) {
          scopes_.pop_back();
          if (f == Flow::Break) break;
        }
        continue;
      }
      auto loop = make_object("LoopContext");
      auto put = [&](const char* k, Value v) { loop->attrs.emplace_back(Value::string(k), std::move(v)); };
      put("index0", Value::integer(i));
      put("index", Value::integer(i + 1));
      put("revindex0", Value::integer(len - i - 1));
      put("revindex", Value::integer(len - i));
      put("first", Value::boolean(i == 0));
      put("last", Value::boolean(i == len - 1));
      put("length", Value::integer(len));
      put("depth", Value::integer(1));
      put("depth0", Value::integer(0));
      put("previtem", i > 0 ? items[static_cast<std::size_t>(i - 1)] : Value::undefined("there is no previous item"));
      put("nextitem", i + 1 < len ? items[static_cast<std::size_t>(i + 1)] : Value::undefined("there is no next item"));
      put("cycle", Value::callable("loop.cycle", [i](CallArgs& a) {
            if (a.args.empty()) throw RenderError("no items for cycling given");
            return a.args[static_cast<std::size_t>(i) % a.args.size()];
          }));
      put("changed", Value::callable("loop.changed", [last_changed](CallArgs& a) {
            Value now = Value::list(a.args);
            bool changed = !*last_changed || !equals(Value::list(**last_changed), now);
            *last_changed = a.args;
            return Value::boolean(changed);
          }));
      scopes_.push_back(std::make_shared<Scope>());
      assign_targets(n.targets, items[static_cast<std::size_t>(i)]);
      assign("loop", Value::object(loop));
      Flow f;
      try {
        f = exec_body(n.body);
      } catch (...) {
        scopes_.pop_back();
        throw;
      }
      scopes_.pop_back();
      if (f == Flow::Break) break;
    }
    return Flow::Normal;
  }

  /// Whether the body of for-loop `n` names `loop` anywhere (cached per node).
  bool uses_loop(const Node& n) {
    auto it = uses_loop_.find(&n);
    if (it != uses_loop_.end()) return it->second;
    bool found = false;
    std::function<void(const Expr*)> in_expr = [&](const Expr* e) {
      if (!e || found) return;
      if (e->kind == Expr::K::Name && e->name == "loop") found = true;
      for (const auto& x : e->a) in_expr(x.get());
      for (const auto& [k, x] : e->kwargs) in_expr(x.get());
    };
    std::function<void(const Body&)> in_body = [&](const Body& body) {
      for (const auto& c : body) {
        if (found) return;
        in_expr(c->expr.get());
        in_expr(c->cond.get());
        for (const auto& d : c->defaults) in_expr(d.get());
        for (const auto& f : c->filters) in_expr(f.get());
        for (const auto& [cond, b] : c->branches) {
          in_expr(cond.get());
          in_body(b);
        }
        in_body(c->body);
        in_body(c->else_body);
      }
    };
    in_body(n.body);
    uses_loop_[&n] = found;
    return found;
  }

  /// Whether `body` writes a name into the scope it runs in: set, set blocks, macros
  /// (inner for-loops write into their own scopes). Cached per body.
  bool assigns_in_scope(const Body& body) {
    auto it = assigns_.find(&body);
    if (it != assigns_.end()) return it->second;
    std::function<bool(const Body&)> scan = [&](const Body& b) {
      for (const auto& c : b) {
        if (c->kind == Node::K::Set || c->kind == Node::K::SetBlock || c->kind == Node::K::Macro) return true;
        if (c->kind == Node::K::For) continue;
        for (const auto& br : c->branches)
          if (scan(br.second)) return true;
        if (scan(c->body) || scan(c->else_body)) return true;
      }
      return false;
    };
    bool r = scan(body);
    assigns_[&body] = r;
    return r;
  }

  Value make_macro(const Node& n) {
    Closure closure{Scopes(scopes_.begin(), scopes_.end() - 1), scopes_.back()};
    const Node* node = &n;
    return Value::callable(n.text, [this, closure, node](CallArgs& a) {
      const auto& params = node->targets;
      if (a.args.size() > params.size())
        throw RenderError("macro '" + node->text + "' takes not more than " + std::to_string(params.size()) +
                          " argument(s)");
      auto scope = std::make_shared<Scope>();
      std::vector<bool> given(params.size(), false);
      for (std::size_t i = 0; i < a.args.size(); ++i) {
        (*scope)[params[i]] = a.args[i];
        given[i] = true;
      }
      for (const auto& [k, v] : a.kwargs) {
        std::size_t i = 0;
        while (i < params.size() && params[i] != k) ++i;
        if (i == params.size()) throw RenderError("macro '" + node->text + "' takes no keyword argument '" + k + "'");
        (*scope)[k] = v;
        given[i] = true;
      }
      budget_->enter_macro(node->text);
      Scopes saved = std::move(scopes_);
      int saved_line = line_;
      scopes_ = closure.outer;
      // The defining scope has ended when the macro escaped it (through a namespace):
      // Jinja2 would still see that scope's variables; they read as undefined here.
      auto own = closure.own.lock();
      scopes_.push_back(own ? own : std::make_shared<Scope>());
      scopes_.push_back(scope);
      std::string result;
      try {
        for (std::size_t i = 0; i < params.size(); ++i) {
          if (given[i]) continue;
          (*scope)[params[i]] = node->defaults[i] ? eval(*node->defaults[i])
                                                  : Value::undefined("parameter '" + params[i] + "' was not provided");
        }
        result = capture(node->body);
      } catch (...) {
        budget_->leave_macro();
        scopes_ = std::move(saved);
        throw;
      }
      budget_->leave_macro();
      scopes_ = std::move(saved);
      line_ = saved_line;
      return Value::string(result);
    });
  }

  // ---- expressions ----
  CallArgs eval_args(const Expr& e, std::size_t first) {
    CallArgs a;
    for (std::size_t i = first; i < e.a.size(); ++i) a.args.push_back(eval(*e.a[i]));
    for (const auto& [k, x] : e.kwargs) a.kwargs.emplace_back(k, eval(*x));
    return a;
  }

  Value eval(const Expr& e) {
    line_ = e.line;
    Frame frame(budget_);
    switch (e.kind) {
      case Expr::K::Literal: return e.value;
      case Expr::K::Name: return lookup(e.name);
      case Expr::K::Attr: {
        Value obj = eval(*e.a[0]);
        line_ = e.line;
        return get_attr(obj, e.name);
      }
      case Expr::K::Item: {
        Value obj = eval(*e.a[0]);
        Value key = eval(*e.a[1]);
        line_ = e.line;
        return get_item(obj, key);
      }
      case Expr::K::Slice: {
        Value obj = eval(*e.a[0]);
        Value parts[3];
        for (int i = 0; i < 3; ++i)
          if (e.a[static_cast<std::size_t>(i) + 1]) parts[i] = eval(*e.a[static_cast<std::size_t>(i) + 1]);
        line_ = e.line;
        return get_slice(obj, parts[0], parts[1], parts[2]);
      }
      case Expr::K::Call: {
        Value callee = eval(*e.a[0]);
        CallArgs args = eval_args(e, 1);
        line_ = e.line;
        return call(callee, args);
      }
      case Expr::K::Filter: {
        Value v = eval(*e.a[0]);
        CallArgs args = eval_args(e, 1);
        line_ = e.line;
        return apply_filter(e.name, v, args);
      }
      case Expr::K::Test: {
        Value v = eval(*e.a[0]);
        CallArgs args = eval_args(e, 1);
        line_ = e.line;
        return Value::boolean(apply_test(e.name, v, args) != e.negated);
      }
      case Expr::K::Unary: {
        Value v = eval(*e.a[0]);
        line_ = e.line;
        if (e.name == "not") return Value::boolean(!v.truthy());
        require_defined(v);
        if (!v.is_number()) throw RenderError("bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
        if (e.name == "+") return v.is_bool() ? Value::integer(v.as_int()) : v;
        return v.is_float() ? Value::number(-v.as_double()) : Value::integer(int_neg(v.as_int()));
      }
      case Expr::K::Binary: {
        if (e.name == "and" || e.name == "or") {
          Value l = eval(*e.a[0]);
          if (l.truthy() == (e.name == "or")) return l;
          return eval(*e.a[1]);
        }
        Value l = eval(*e.a[0]);
        Value r = eval(*e.a[1]);
        line_ = e.line;
        if (e.name == "~") return Value::string(l.str() + r.str());
        return arith(e.name, l, r);
      }
      case Expr::K::Compare: {
        Value l = eval(*e.a[0]);
        for (std::size_t i = 0; i < e.ops.size(); ++i) {
          Value r = eval(*e.a[i + 1]);
          line_ = e.line;
          const std::string& op = e.ops[i];
          bool ok;
          if (op == "==") ok = equals(l, r);
          else if (op == "!=") ok = !equals(l, r);
          else if (op == "in") ok = contains(r, l);
          else if (op == "notin") ok = !contains(r, l);
          else {
            int c = compare(l, r);
            ok = op == "<" ? c < 0 : op == "<=" ? c <= 0 : op == ">" ? c > 0 : c >= 0;
          }
          if (!ok) return Value::boolean(false);
          l = std::move(r);
        }
        return Value::boolean(true);
      }
      case Expr::K::Cond:
        if (eval(*e.a[0]).truthy()) return eval(*e.a[1]);
        return e.a[2] ? eval(*e.a[2]) : Value::undefined("the inline if-expression evaluated to false and no else section was defined");
      case Expr::K::List: case Expr::K::Tuple: {
        ValueList items;
        for (const auto& x : e.a) items.push_back(eval(*x));
        return e.kind == Expr::K::List ? Value::list(std::move(items)) : Value::tuple(std::move(items));
      }
      case Expr::K::Dict: {
        ValueDict d;
        for (std::size_t i = 0; i + 1 < e.a.size(); i += 2) {
          Value k = eval(*e.a[i]);
          Value v = eval(*e.a[i + 1]);
          bool replaced = false;
          budget_step(static_cast<std::int64_t>(d.size() / 16));
          for (auto& kv : d)
            if (equals(kv.first, k)) {
              kv.second = v;
              replaced = true;
            }
          if (!replaced) d.emplace_back(std::move(k), std::move(v));
        }
        return Value::dict(std::move(d));
      }
    }
    return Value();
  }

  std::string* out_;
  RenderBudget* budget_;
  Scopes scopes_;
  std::unordered_map<const Node*, bool> uses_loop_;
  std::unordered_map<const Body*, bool> assigns_;
  int line_ = 0;
};

}  // namespace

std::string render(const Program& program, const std::vector<std::pair<std::string, Value>>& vars) {
  std::string out;
  RenderBudget budget;
  RenderBudget::Scope installed(&budget);
  Evaluator ev(&out, &budget);
  auto where = [&ev] { return "chat template line " + std::to_string(ev.line()) + ": "; };
  try {
    ev.run(program, vars);
  } catch (const LimitExceeded& e) {
    throw ConfigError(where() + e.what());
  } catch (const Raised& e) {
    throw UsageError(where() + "raise_exception: " + e.what());
  } catch (const Unsupported& e) {
    throw ConfigError(where() + "unsupported " + e.what());
  } catch (const RenderError& e) {
    throw UsageError(where() + e.what());
  } catch (const std::bad_variant_access&) {
    // A value of one type read as another where no check names it: still the template's
    // error (a TypeError in Jinja2), never a crash.
    throw UsageError(where() + "a value of the wrong type for this operation (TypeError)");
  }
  return out;
}

}  // namespace llmport::jinja
