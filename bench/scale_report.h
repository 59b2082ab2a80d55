// Renders the scale benchmark's results (the JSON document bench_scale writes) as text for the
// terminal and as Markdown: one row per N, the details behind it, and PASS/FAIL against the
// targets of docs/benchmarks.md at N = 1000; and a plaintext and a TLS run side by side.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace lagwatch::bench {

std::string RenderScaleText(const nlohmann::json& results);
std::string RenderScaleMarkdown(const nlohmann::json& results);

// The plaintext and the TLS run side by side (bench/scale --tls-compare): per N present in both,
// lagwatch's CPU, RSS, key age, probe-start jitter and publish delay in each and the difference,
// and the TLS targets at N=1000 (key age p99 within +10 ms and CPU within +25 % of plaintext).
// Throws std::invalid_argument unless `plain` is a plaintext and `tls` a TLS run of bench_scale.
nlohmann::json CompareScaleRuns(const nlohmann::json& plain, const nlohmann::json& tls);
std::string RenderScaleCompareText(const nlohmann::json& comparison);
std::string RenderScaleCompareMarkdown(const nlohmann::json& comparison);

}  // namespace lagwatch::bench
