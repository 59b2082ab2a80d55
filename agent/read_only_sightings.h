// Where writes can have gone while the primary is read-only (docs/measurement.md, "A read-only
// primary"). A read-only primary takes no writes, but another server may already be taking them
// (a switchover makes the old primary read-only, then the new one writable), before lagwatch has
// seen the move. A server is made writable only after the last probe that found it read-only was
// sent, so no server other than the primary took a write before the oldest of those probes,
// among the servers lagwatch reaches. Each prober says what its server answered; the probers read
// the floor. It also knows which probes are on their way (so an answer can wait for its round:
// ReplicaProber::AwaitRound) and whether the primary's silence has had every server urged yet.
// Thread-safe.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "base/clock.h"

namespace lagwatch {

class ReadOnlySightings {
 public:
  // A server that has not answered for this long no longer counts (dead, or cut off from the
  // agent: lagwatch follows the primary among the servers it reaches).
  static constexpr Millis kForgetAfter{1000};

  // Server `id`'s probe sent at `sent` is on its way, until Answered or Unanswered.
  void Sent(const std::string& id, MonoTime sent);
  // Server `id`'s probe sent at `sent` answered, and found it read-only or not.
  void Answered(const std::string& id, MonoTime sent, bool read_only);
  // Server `id`'s probe ended without saying (failed, timed out, or its answer unreadable).
  void Unanswered(const std::string& id);
  // Forgets the servers not among `ids` (a reload, discovery).
  void Keep(const std::set<std::string>& ids);

  // What makes every server be probed at once (the agent's); set before the probers start.
  void OnSilence(std::function<void()> urge_all);
  // The primary stopped answering (PrimaryKnown): the first call since it was last heard from
  // urges every server and returns true, so that the first records while it is unknown rest on
  // read-only sightings of that moment, not of the last regular probes; later calls return false.
  bool PrimarySilent();
  void PrimaryHeard();

  // The earliest moment at which a server other than `primary` and `self` may have been made
  // writable, as of `now`: the oldest of their latest read-only sightings, over the servers that
  // answered within kForgetAfter. MonoTime::min() when one of them was never seen read-only;
  // MonoTime::max() when none counts. (`self`: the replica judged, whose own answer says whether
  // it is read-only.)
  MonoTime WritableNotBefore(std::string_view primary, std::string_view self, MonoTime now) const;
  // Whether WritableNotBefore would be later once the probes on their way that were sent from
  // `since` to `by` answer, if they find their servers read-only: every server that holds the
  // floor now has one on its way. True while a round of probes sent together is still answering
  // (ReplicaProber::AwaitRound).
  bool FloorRises(std::string_view primary, std::string_view self, MonoTime now, MonoTime since,
                  MonoTime by) const;
  // How many servers have answered (the budgets of the fast cadence and of the probes that follow
  // commits, read at every probe: ReplicaProber::ScheduleNext). Takes no lock.
  size_t Servers() const { return count_.load(std::memory_order_relaxed); }

 private:
  struct Seen {
    MonoTime answered;                     // when its latest answered probe was sent
    std::optional<MonoTime> read_only_at;  // when its latest read-only one was sent
  };
  // A server's place in by_floor_: its latest read-only sighting, MonoTime::min() for none.
  static MonoTime FloorOf(const Seen& s) { return s.read_only_at.value_or(MonoTime::min()); }
  // Calls `fn(floor, id)` for the servers that count (not `primary` or `self`, answered within
  // kForgetAfter), oldest sighting first, until it returns false. REQUIRES: mu_ held.
  template <typename Fn>
  void Counted(std::string_view primary, std::string_view self, MonoTime now, Fn fn) const;
  std::function<void()> urge_all_;  // set before the probers start
  std::atomic<bool> silence_urged_{false};
  mutable std::mutex mu_;
  std::map<std::string, Seen, std::less<>> servers_;  // GUARDED_BY(mu_)
  std::atomic<size_t> count_{0};                      // servers_.size(), set under mu_
  // The same servers by FloorOf, so the floor is found at the front, not by a scan of every
  // server for every record (a round of 1,000 replicas is a million looks otherwise).
  std::set<std::pair<MonoTime, std::string>> by_floor_;      // GUARDED_BY(mu_)
  std::map<std::string, MonoTime, std::less<>> on_the_way_;  // GUARDED_BY(mu_): sent at
};

}  // namespace lagwatch
