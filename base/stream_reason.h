// Why the binary log stream gives no bounds: the words of the stream's fallbacks, in one place
// for the stream's history (heartbeat/stream_history.h), which falls back for them, and the
// metric that counts them (lagwatch_binlog_stream_fallbacks_total, exporters/metrics.h). A
// metric label and a log word: a name changes here or nowhere.
#pragma once

namespace lagwatch::stream_reason {

inline constexpr const char* kDown = "down";      // not started on this primary, or stopped
inline constexpr const char* kSilent = "silent";  // no sign of life within alive_within
inline constexpr const char* kBehind = "behind";  // a sample waits longer than max_lag, or
                                                  // not caught up since Begin
inline constexpr const char* kSlow = "slow";      // D over max_lag (a lag spike in lag_span)
inline constexpr const char* kIncomparable = "incomparable";  // a sample it cannot compare
// Its bound for one probe fell below the samples' or the heartbeat's lower bound: that delivery
// was slower than D (counted per probe, by the estimator's NoteLate).
inline constexpr const char* kLate = "late";
// Every reason, in the order of the metric's series.
inline constexpr const char* kAll[] = {kDown, kSilent, kBehind, kSlow, kIncomparable, kLate};

}  // namespace lagwatch::stream_reason
