// Renders the scale benchmark's results (the JSON document bench_scale writes) as text for the
// terminal and as Markdown: one row per N, the details behind it, and PASS/FAIL against the
// targets of docs/benchmarks.md at N = 1000.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace lagwatch::bench {

std::string RenderScaleText(const nlohmann::json& results);
std::string RenderScaleMarkdown(const nlohmann::json& results);

}  // namespace lagwatch::bench
