#include "exporters/api.h"

#include <doctest/doctest.h>

#include <string>

#include "base/vertical_result.h"

namespace lagwatch {
namespace {

// The MySQL 8.0 replica of base/testdata/mysql-8.0-applier-status-reply.txt.
ApplierView MySql80Applier() {
  auto st = ParseApplierReply(LoadVerticalResult(std::string(LAGWATCH_TESTDATA_DIR) +
                                                 "/mysql-8.0-applier-status-reply.txt"));
  REQUIRE(st.ok());
  return {st.value(), ""};
}

TEST_CASE("the API's applier object: the judged channel's signals as the server wrote them") {
  const nlohmann::json j = ApplierJson(MySql80Applier(), "");
  CAPTURE(j.dump());
  CHECK(j["available"] == true);
  CHECK(j["reason"].is_null());
  CHECK(j["channel"] == "");
  CHECK(j["workers"] == 4);
  CHECK(j["workers_on"] == 4);
  CHECK(j["applying"] == 2);
  CHECK(j["oldest_applying_transaction"] == "73f86016-978b-11ee-ade5-8d2a2a562feb:1204");
  CHECK(j["oldest_applying_original_commit"] == "2023-02-07 10:12:33.100000");
  CHECK(j["oldest_applying_immediate_commit"] == "2023-02-07 10:12:33.100000");
  CHECK(j["oldest_applying_started"] == "2023-02-07 10:12:33.180000");
  CHECK(j["oldest_applying_age_seconds"].get<double>() == doctest::Approx(0.57));
  CHECK(j["coordinator"]["state"] == "ON");
  CHECK(j["coordinator"]["processing"]["transaction"] ==
        "73f86016-978b-11ee-ade5-8d2a2a562feb:1206");
  CHECK(j["coordinator"]["processing"]["started"] == "2023-02-07 10:12:33.700000");
  CHECK(j["coordinator"]["last_processed"]["transaction"] ==
        "73f86016-978b-11ee-ade5-8d2a2a562feb:1205");
  CHECK(j["receiver_state"] == "ON");
  CHECK(j["last_heartbeat"] == "2023-02-07 10:12:30.004512");
  CHECK(j["received_heartbeats"] == 1523);
  CHECK(j["replica_now"] == "2023-02-07 10:12:33.750000");
  REQUIRE(j["channels"].size() == 1);
  CHECK(j["channels"][0]["workers"] == 4);
  CHECK(j["channels"][0]["channel"] == "");
}

TEST_CASE("the API's applier object when unavailable: the reason, every field null") {
  const ApplierView none{std::nullopt,
                         "not asked: MariaDB's performance_schema has no applier "
                         "transaction columns (MySQL 8.0+ only)"};
  const nlohmann::json j = ApplierJson(none, "");
  CAPTURE(j.dump());
  CHECK(j["available"] == false);
  CHECK(j["reason"] == none.reason);
  for (const char* field : {"channel", "workers", "applying", "oldest_applying_original_commit",
                            "oldest_applying_started", "oldest_applying_age_seconds", "coordinator",
                            "last_heartbeat", "received_heartbeats", "replica_now", "channels"}) {
    CAPTURE(field);
    CHECK(j.contains(field));
    CHECK(j[field].is_null());
  }

  // Read, but none of several channels is the one judged: the list only.
  ApplierView two = MySql80Applier();
  two.status->channels.push_back(two.status->channels[0]);
  two.status->channels[0].name = "a";
  two.status->channels[1].name = "b";
  const nlohmann::json k = ApplierJson(two, "");
  CHECK(k["available"] == true);
  CHECK(k["workers"].is_null());
  CHECK(k["channels"].size() == 2);
  CHECK(ApplierJson(two, "b")["channel"] == "b");
}

TEST_CASE("a replica in the API carries its applier object") {
  ReplicaView view;
  view.applier = MySql80Applier();
  const nlohmann::json j = ReplicaJson(ReplicaInfo{}, view);
  CHECK(j["applier"]["available"] == true);
  CHECK(j["applier"]["applying"] == 2);
  CHECK(ReplicaJson(ReplicaInfo{}, ReplicaView{})["applier"]["reason"] == "not read yet");
}

}  // namespace
}  // namespace lagwatch
