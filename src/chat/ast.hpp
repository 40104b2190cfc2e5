#pragma once
// Syntax tree of a parsed template: expressions (Expr) and statements (Node). One struct
// per level with a kind tag keeps the evaluator a pair of switches.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.hpp"

namespace llmport::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class K {
    Literal,   // value
    Name,      // name
    Attr,      // a[0].name
    Item,      // a[0][a[1]]
    Slice,     // a[0][a[1]:a[2]:a[3]] (null parts omitted)
    Call,      // a[0](a[1..], kwargs)
    Filter,    // a[0] | name(a[1..], kwargs); a[0] null inside {% filter %} / {% set x | f %}
    Test,      // a[0] is [not] name(a[1..])
    Unary,     // op a[0]: "-", "+", "not"
    Binary,    // a[0] op a[1]: + - * / // % ** ~ and or
    Compare,   // a[0] ops[0] a[1] ops[1] a[2]...: == != < <= > >= in notin
    Cond,      // a[1] if a[0] else a[2] (a[2] may be null)
    List,      // [a...]
    Tuple,     // (a...)
    Dict,      // {a[0]: a[1], a[2]: a[3]...}
  };
  K kind;
  int line = 0;
  Value value;
  std::string name;  // Name, Attr, Filter, Test; Unary/Binary operator
  std::vector<std::string> ops;
  std::vector<ExprPtr> a;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  bool negated = false;  // Test: `is not`
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class K { Text, Output, If, For, Set, SetBlock, Macro, FilterBlock, Break, Continue, Generation };
  K kind;
  int line = 0;
  std::string text;                   // Text; Macro / SetBlock name; Set namespace attribute
  ExprPtr expr;                       // Output, Set value, For iterable
  ExprPtr cond;                       // For `if` filter
  std::vector<std::string> targets;   // For / Set names (several = tuple unpacking)
  std::vector<ExprPtr> defaults;      // Macro parameter defaults (null = required)
  std::vector<std::pair<ExprPtr, Body>> branches;  // If/elif
  Body body;                          // For/SetBlock/Macro/FilterBlock/Generation body
  Body else_body;                     // If/For else
  std::vector<ExprPtr> filters;       // SetBlock / FilterBlock filter chain (operand null)
};

/// A parsed template.
struct Program {
  Body body;
};

}  // namespace llmport::jinja
