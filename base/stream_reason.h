// The binary log stream's words, each in one place for the room that uses it (heartbeat/) and the
// metric that counts it (exporters/metrics.h). A metric label and a log word: a name changes here
// or nowhere.
// - stream_reason: why the stream gives no bounds, as the stream's history
//   (heartbeat/stream_history.h) falls back (lagwatch_binlog_stream_fallbacks_total);
// - stream_error: why a stream ended, as the listener (heartbeat/binlog_listener.cc) reports it
//   (lagwatch_binlog_stream_errors_total).
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

namespace lagwatch::stream_error {

inline constexpr const char* kRefused = "refused";     // access denied (REPLICATION SLAVE)
inline constexpr const char* kNoBinlog = "no_binlog";  // the server's binary logging is off
inline constexpr const char* kCut = "cut";             // the connection ended or timed out
inline constexpr const char* kBadEvent = "bad_event";  // bytes that are not a valid event
inline constexpr const char* kTls = "tls";             // the TLS handshake or verification failed
inline constexpr const char* kServerError = "server_error";  // any other server error
// Every reason, in the order of the metric's series.
inline constexpr const char* kAll[] = {kRefused, kNoBinlog, kCut, kBadEvent, kTls, kServerError};

}  // namespace lagwatch::stream_error
