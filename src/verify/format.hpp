#pragma once
// Small text formatting shared by verify messages and reports.
#include <string>
#include <vector>

#include "llmport/records.hpp"

namespace llmport::verify_detail {

/// "[432 (17.80), 383 (14.28), ...]": ids with logits, first k entries.
std::string format_top(const std::vector<TopEntry>& top, int k = kTopK);
/// "%.3g"-style number for reports.
std::string fmt_g(double v, int precision = 3);
/// "[1, 2, 3]" of ids, elided after `max` entries.
std::string format_ids(const std::vector<int>& ids, std::size_t max = 40);

}  // namespace llmport::verify_detail
