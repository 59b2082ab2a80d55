// Renders the accuracy benchmark's results (the JSON document bench_accuracy writes) as a
// compact text table for the terminal and as Markdown.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace lagwatch::bench {

// One table per scenario: system × measure, plus the heartbeat cost.
std::string RenderText(const nlohmann::json& results);
// The same tables, with the method, versions and caveats, as a Markdown document.
std::string RenderMarkdown(const nlohmann::json& results);

}  // namespace lagwatch::bench
