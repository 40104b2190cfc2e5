#include "chat/parser.hpp"

#include <set>

#include "chat/filters.hpp"
#include "chat/jinja_tests.hpp"
#include "chat/lexer.hpp"
#include "llmport/error.hpp"

namespace llmport::jinja {
namespace {

/// Nesting limit of expressions and blocks: deeper input is refused instead of overflowing
/// the stack (real templates nest a few levels).
constexpr int kMaxDepth = 256;

class Parser {
 public:
  explicit Parser(std::vector<Token> toks) : t_(std::move(toks)) {}

  Program run() {
    Program p;
    std::string end = parse_body(p.body, {});
    (void)end;
    return p;
  }

 private:
  const Token& cur() const { return t_[i_]; }
  const Token& peek(std::size_t n = 1) const { return t_[std::min(i_ + n, t_.size() - 1)]; }
  Token next() { return t_[i_ < t_.size() - 1 ? i_++ : i_]; }

  [[noreturn]] void fail(const std::string& msg, int line = 0) const {
    throw ConfigError("chat template line " + std::to_string(line ? line : cur().line) + ": " + msg);
  }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case Tok::Data: return "template data";
      case Tok::VarBegin: return "'{{'";
      case Tok::VarEnd: return "'}}'";
      case Tok::BlockBegin: return "'{%'";
      case Tok::BlockEnd: return "'%}'";
      case Tok::Name: return "'" + t.text + "'";
      case Tok::String: return "string literal";
      case Tok::Int: case Tok::Float: return "number " + t.text;
      case Tok::Op: return "'" + t.text + "'";
      case Tok::End: return "end of template";
    }
    return "token";
  }
  bool is_op(const char* op) const { return cur().type == Tok::Op && cur().text == op; }
  bool is_name(const char* n) const { return cur().type == Tok::Name && cur().text == n; }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    ++i_;
    return true;
  }
  bool skip_name(const char* n) {
    if (!is_name(n)) return false;
    ++i_;
    return true;
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(std::string("expected '") + op + "', got " + describe(cur()));
  }
  std::string expect_name() {
    if (cur().type != Tok::Name) fail("expected a name, got " + describe(cur()));
    return next().text;
  }
  void expect_block_end() {
    if (cur().type != Tok::BlockEnd) fail("expected '%}', got " + describe(cur()));
    ++i_;
  }

  ExprPtr mk(Expr::K k, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = k;
    e->line = line;
    return e;
  }
  NodePtr node(Node::K k, int line) {
    auto n = std::make_unique<Node>();
    n->kind = k;
    n->line = line;
    return n;
  }

  // ---- statements ----

  /// Parses nodes until `{% <one of ends> ...`; returns that end name (tag left at its name).
  std::string parse_body(Body& body, const std::set<std::string>& ends) {
    while (true) {
      const Token& t = cur();
      if (t.type == Tok::End) {
        if (!ends.empty()) {
          std::string closer = *ends.begin();
          for (const auto& e : ends)
            if (e.rfind("end", 0) == 0) closer = e;
          fail("unexpected end of template, expected '{% " + closer + " %}'");
        }
        return "";
      }
      if (t.type == Tok::Data) {
        auto n = node(Node::K::Text, t.line);
        n->text = t.text;
        body.push_back(std::move(n));
        ++i_;
      } else if (t.type == Tok::VarBegin) {
        ++i_;
        auto n = node(Node::K::Output, t.line);
        n->expr = parse_tuple(true);
        if (cur().type != Tok::VarEnd) fail("expected '}}', got " + describe(cur()));
        ++i_;
        body.push_back(std::move(n));
      } else if (t.type == Tok::BlockBegin) {
        ++i_;
        if (cur().type != Tok::Name) fail("expected a statement name after '{%', got " + describe(cur()));
        std::string name = cur().text;
        if (ends.count(name)) return name;
        body.push_back(parse_statement());
      } else {
        fail("unexpected " + describe(t));
      }
    }
  }

  NodePtr parse_statement() {
    DepthGuard guard(*this);
    Token t = next();
    const std::string& s = t.text;
    if (s == "if") return parse_if(t.line);
    if (s == "for") return parse_for(t.line);
    if (s == "set") return parse_set(t.line);
    if (s == "macro") return parse_macro(t.line);
    if (s == "filter") return parse_filter_block(t.line);
    if (s == "generation") {
      auto n = node(Node::K::Generation, t.line);
      expect_block_end();
      parse_body(n->body, {"endgeneration"});
      ++i_;
      expect_block_end();
      return n;
    }
    if (s == "break" || s == "continue") {
      if (loop_depth_ == 0) fail("'" + s + "' outside of a loop", t.line);
      expect_block_end();
      return node(s == "break" ? Node::K::Break : Node::K::Continue, t.line);
    }
    static const std::set<std::string> known_unsupported = {
        "block", "extends", "include", "import", "from", "call", "with", "autoescape", "do", "trans", "pluralize"};
    if (known_unsupported.count(s)) fail("unsupported statement '{% " + s + " %}'", t.line);
    static const std::set<std::string> ends = {"endif", "elif", "else", "endfor", "endset", "endmacro",
                                               "endfilter", "endgeneration", "endraw", "endblock", "endcall", "endwith"};
    if (ends.count(s)) fail("unexpected '{% " + s + " %}'", t.line);
    fail("unsupported statement '{% " + s + " %}'", t.line);
  }

  NodePtr parse_if(int line) {
    auto n = node(Node::K::If, line);
    ExprPtr cond = parse_tuple(false);
    while (true) {
      expect_block_end();
      Body b;
      std::string end = parse_body(b, {"elif", "else", "endif"});
      n->branches.emplace_back(std::move(cond), std::move(b));
      ++i_;
      if (end == "elif") {
        cond = parse_tuple(false);
        continue;
      }
      if (end == "else") {
        expect_block_end();
        parse_body(n->else_body, {"endif"});
        ++i_;
      }
      expect_block_end();
      return n;
    }
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> names;
    bool paren = skip_op("(");
    do {
      if (paren && is_op(")")) break;
      names.push_back(expect_name());
    } while (skip_op(","));
    if (paren) expect_op(")");
    return names;
  }

  NodePtr parse_for(int line) {
    auto n = node(Node::K::For, line);
    n->targets = parse_targets();
    if (!skip_name("in")) fail("expected 'in' in for loop, got " + describe(cur()));
    n->expr = parse_tuple(false);
    if (skip_name("if")) n->cond = parse_expression(true);
    if (is_name("recursive")) fail("unsupported 'recursive' for loop");
    expect_block_end();
    ++loop_depth_;
    std::string end = parse_body(n->body, {"endfor", "else"});
    --loop_depth_;
    ++i_;
    if (end == "else") {
      expect_block_end();
      parse_body(n->else_body, {"endfor"});
      ++i_;
    }
    expect_block_end();
    return n;
  }

  NodePtr parse_set(int line) {
    // Targets: name, name.attr (namespace), or several names (tuple unpacking).
    std::string first = expect_name();
    std::vector<std::string> names{first};
    std::string attr;
    if (skip_op(".")) {
      attr = expect_name();
    } else {
      while (skip_op(",")) names.push_back(expect_name());
    }
    if (skip_op("=")) {
      auto n = node(Node::K::Set, line);
      n->targets = names;
      n->text = attr;
      n->expr = parse_tuple(true);
      expect_block_end();
      return n;
    }
    if (names.size() != 1 || !attr.empty()) fail("expected '=' in set statement, got " + describe(cur()));
    auto n = node(Node::K::SetBlock, line);
    n->text = first;
    while (skip_op("|")) n->filters.push_back(parse_filter(nullptr));
    expect_block_end();
    parse_body(n->body, {"endset"});
    ++i_;
    expect_block_end();
    return n;
  }

  NodePtr parse_macro(int line) {
    auto n = node(Node::K::Macro, line);
    n->text = expect_name();
    expect_op("(");
    while (!is_op(")")) {
      if (!n->targets.empty()) expect_op(",");
      if (is_op(")")) break;
      n->targets.push_back(expect_name());
      if (skip_op("="))
        n->defaults.push_back(parse_expression(true));
      else if (!n->defaults.empty() && n->defaults.back())
        fail("non-default argument follows default argument in macro '" + n->text + "'");
      else
        n->defaults.push_back(nullptr);
    }
    ++i_;
    expect_block_end();
    int saved = loop_depth_;
    loop_depth_ = 0;
    parse_body(n->body, {"endmacro"});
    loop_depth_ = saved;
    ++i_;
    if (cur().type == Tok::Name) ++i_;  // {% endmacro name %}
    expect_block_end();
    return n;
  }

  NodePtr parse_filter_block(int line) {
    auto n = node(Node::K::FilterBlock, line);
    do {
      n->filters.push_back(parse_filter(nullptr));
    } while (skip_op("|"));
    expect_block_end();
    parse_body(n->body, {"endfilter"});
    ++i_;
    expect_block_end();
    return n;
  }

  // ---- expressions (jinja2/parser.py precedence) ----

  ExprPtr parse_tuple(bool with_condexpr) {
    int line = cur().line;
    ExprPtr first = parse_expression(with_condexpr);
    if (!is_op(",")) return first;
    auto t = mk(Expr::K::Tuple, line);
    t->a.push_back(std::move(first));
    while (skip_op(",")) {
      if (at_expression_end()) break;
      t->a.push_back(parse_expression(with_condexpr));
    }
    return t;
  }

  bool at_expression_end() const {
    return cur().type == Tok::VarEnd || cur().type == Tok::BlockEnd || is_op(")") || is_op("]") ||
           cur().type == Tok::End;
  }

  ExprPtr parse_expression(bool with_condexpr) {
    DepthGuard guard(*this);
    return with_condexpr ? parse_condexpr() : parse_or();
  }

  ExprPtr parse_condexpr() {
    ExprPtr e = parse_or();
    while (is_name("if")) {
      int line = next().line;
      auto c = mk(Expr::K::Cond, line);
      ExprPtr test = parse_or();
      ExprPtr other;
      if (skip_name("else")) other = parse_condexpr();
      c->a.push_back(std::move(test));
      c->a.push_back(std::move(e));
      c->a.push_back(std::move(other));
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(const std::string& op, ExprPtr l, ExprPtr r, int line) {
    auto b = mk(Expr::K::Binary, line);
    b->name = op;
    b->a.push_back(std::move(l));
    b->a.push_back(std::move(r));
    return b;
  }

  ExprPtr parse_or() {
    ExprPtr l = parse_and();
    while (is_name("or")) {
      int line = next().line;
      l = binary("or", std::move(l), parse_and(), line);
    }
    return l;
  }

  ExprPtr parse_and() {
    ExprPtr l = parse_not();
    while (is_name("and")) {
      int line = next().line;
      l = binary("and", std::move(l), parse_not(), line);
    }
    return l;
  }

  ExprPtr parse_not() {
    DepthGuard guard(*this);
    if (is_name("not")) {
      int line = next().line;
      auto u = mk(Expr::K::Unary, line);
      u->name = "not";
      u->a.push_back(parse_not());
      return u;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    int line = cur().line;
    ExprPtr first = parse_math1();
    ExprPtr cmp;
    static const std::set<std::string> ops = {"==", "!=", "<", "<=", ">", ">="};
    while (true) {
      std::string op;
      if (cur().type == Tok::Op && ops.count(cur().text)) {
        op = next().text;
      } else if (is_name("in")) {
        ++i_;
        op = "in";
      } else if (is_name("not") && peek().type == Tok::Name && peek().text == "in") {
        i_ += 2;
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = mk(Expr::K::Compare, line);
        cmp->a.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->a.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(first);
  }

  ExprPtr parse_math1() {
    ExprPtr l = parse_concat();
    while (is_op("+") || is_op("-")) {
      Token t = next();
      l = binary(t.text, std::move(l), parse_concat(), t.line);
    }
    return l;
  }

  ExprPtr parse_concat() {
    ExprPtr l = parse_math2();
    while (is_op("~")) {
      int line = next().line;
      l = binary("~", std::move(l), parse_math2(), line);
    }
    return l;
  }

  ExprPtr parse_math2() {
    ExprPtr l = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      Token t = next();
      l = binary(t.text, std::move(l), parse_pow(), t.line);
    }
    return l;
  }

  ExprPtr parse_pow() {
    ExprPtr l = parse_unary(true);
    while (is_op("**")) {
      int line = next().line;
      l = binary("**", std::move(l), parse_unary(true), line);
    }
    return l;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      Token t = next();
      e = mk(Expr::K::Unary, t.line);
      e->name = t.text;
      e->a.push_back(parse_unary(false));
    } else {
      e = parse_primary();
    }
    e = parse_postfix(std::move(e));
    if (with_filter) e = parse_filter_expr(std::move(e));
    return e;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    int line = t.line;
    if (t.type == Tok::Name) {
      std::string n = next().text;
      auto lit = mk(Expr::K::Literal, line);
      if (n == "true" || n == "True") {
        lit->value = Value::boolean(true);
      } else if (n == "false" || n == "False") {
        lit->value = Value::boolean(false);
      } else if (n == "none" || n == "None") {
        lit->value = Value::none();
      } else {
        auto e = mk(Expr::K::Name, line);
        e->name = n;
        return e;
      }
      return lit;
    }
    if (t.type == Tok::String) {
      std::string s;
      while (cur().type == Tok::String) s += next().text;
      auto lit = mk(Expr::K::Literal, line);
      lit->value = Value::string(s);
      return lit;
    }
    if (t.type == Tok::Int || t.type == Tok::Float) {
      Token n = next();
      auto lit = mk(Expr::K::Literal, line);
      lit->value = n.type == Tok::Int ? Value::integer(n.ival) : Value::number(n.fval);
      return lit;
    }
    if (skip_op("(")) {
      if (skip_op(")")) return mk(Expr::K::Tuple, line);
      ExprPtr e = parse_expression(true);
      if (is_op(",")) {
        auto tup = mk(Expr::K::Tuple, line);
        tup->a.push_back(std::move(e));
        while (skip_op(",")) {
          if (is_op(")")) break;
          tup->a.push_back(parse_expression(true));
        }
        e = std::move(tup);
      }
      expect_op(")");
      return e;
    }
    if (skip_op("[")) {
      auto l = mk(Expr::K::List, line);
      while (!is_op("]")) {
        if (!l->a.empty()) expect_op(",");
        if (is_op("]")) break;
        l->a.push_back(parse_expression(true));
      }
      ++i_;
      return l;
    }
    if (skip_op("{")) {
      auto d = mk(Expr::K::Dict, line);
      while (!is_op("}")) {
        if (!d->a.empty()) expect_op(",");
        if (is_op("}")) break;
        d->a.push_back(parse_expression(true));
        expect_op(":");
        d->a.push_back(parse_expression(true));
      }
      ++i_;
      return d;
    }
    fail("unexpected " + describe(t));
  }

  ExprPtr parse_postfix(ExprPtr e) {
    while (true) {
      if (is_op(".")) {
        int line = next().line;
        if (cur().type == Tok::Name) {
          auto a = mk(Expr::K::Attr, line);
          a->name = next().text;
          a->a.push_back(std::move(e));
          e = std::move(a);
        } else if (cur().type == Tok::Int) {
          auto it = mk(Expr::K::Item, line);
          auto idx = mk(Expr::K::Literal, line);
          idx->value = Value::integer(next().ival);
          it->a.push_back(std::move(e));
          it->a.push_back(std::move(idx));
          e = std::move(it);
        } else {
          fail("expected an attribute name after '.', got " + describe(cur()));
        }
      } else if (is_op("[")) {
        e = parse_subscript(std::move(e));
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr e) {
    int line = next().line;  // '['
    ExprPtr parts[3];
    bool is_slice = false;
    int part = 0;
    if (!is_op(":")) parts[0] = parse_expression(true);
    while (is_op(":") && part < 2) {
      ++i_;
      is_slice = true;
      ++part;
      if (!is_op(":") && !is_op("]")) parts[part] = parse_expression(true);
    }
    if (is_op(",")) fail("unsupported tuple subscript");
    expect_op("]");
    auto s = mk(is_slice ? Expr::K::Slice : Expr::K::Item, line);
    s->a.push_back(std::move(e));
    if (is_slice) {
      for (auto& p : parts) s->a.push_back(std::move(p));
    } else {
      s->a.push_back(std::move(parts[0]));
    }
    return s;
  }

  void parse_call_args(Expr& call) {
    expect_op("(");
    while (!is_op(")")) {
      if (is_op("*") || is_op("**")) fail("unsupported '*args' / '**kwargs' in a call");
      if (cur().type == Tok::Name && peek().type == Tok::Op && peek().text == "=") {
        std::string k = next().text;
        ++i_;
        call.kwargs.emplace_back(k, parse_expression(true));
      } else {
        if (!call.kwargs.empty()) fail("positional argument follows keyword argument");
        call.a.push_back(parse_expression(true));
      }
      if (!skip_op(",")) break;
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr e) {
    auto c = mk(Expr::K::Call, cur().line);
    c->a.push_back(std::move(e));
    parse_call_args(*c);
    return c;
  }

  ExprPtr parse_filter(ExprPtr operand) {
    int line = cur().line;
    std::string name = expect_name();
    while (skip_op(".")) name += "." + expect_name();
    if (!has_filter(name)) fail("unsupported filter '" + name + "'", line);
    auto f = mk(Expr::K::Filter, line);
    f->name = name;
    f->a.push_back(std::move(operand));
    if (is_op("(")) parse_call_args(*f);
    return f;
  }

  ExprPtr parse_filter_expr(ExprPtr e) {
    while (true) {
      if (skip_op("|")) {
        e = parse_filter(std::move(e));
      } else if (is_name("is")) {
        int line = next().line;
        auto t = mk(Expr::K::Test, line);
        t->negated = skip_name("not");
        t->name = expect_name();
        while (skip_op(".")) t->name += "." + expect_name();
        if (!has_test(t->name)) fail("unsupported test '" + t->name + "'", line);
        t->a.push_back(std::move(e));
        if (is_op("(")) {
          parse_call_args(*t);
        } else if ((cur().type == Tok::Name || cur().type == Tok::String || cur().type == Tok::Int ||
                    cur().type == Tok::Float || is_op("[") || is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
          if (is_name("is")) fail("you cannot chain multiple tests with 'is'");
          t->a.push_back(parse_postfix(parse_primary()));
        }
        e = std::move(t);
      } else if (is_op("(")) {
        e = parse_call(std::move(e));
      } else {
        return e;
      }
    }
  }

  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxDepth) p.fail("template nested deeper than " + std::to_string(kMaxDepth) + " levels");
    }
    ~DepthGuard() { --p.depth_; }
  };

  std::vector<Token> t_;
  std::size_t i_ = 0;
  int loop_depth_ = 0;
  int depth_ = 0;
};

}  // namespace

Program parse(const std::string& source) { return Parser(tokenize(source)).run(); }

}  // namespace llmport::jinja
