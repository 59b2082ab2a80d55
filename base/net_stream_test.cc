#include "base/net_stream.h"

#include <chrono>
#include <set>
#include <string>

#include <doctest/doctest.h>
#include <openssl/x509_vfy.h>

#include "base/mysql_conn.h"

namespace lagwatch {
namespace {

TEST_CASE("DaysUntil rounds down, and counts negative days once expired") {
  CHECK(DaysUntil(86400 * 10, 0) == 10);
  CHECK(DaysUntil(86400 * 10 - 1, 0) == 9);
  CHECK(DaysUntil(5, 0) == 0);
  CHECK(DaysUntil(0, 0) == 0);
  CHECK(DaysUntil(0, 1) == -1);
  CHECK(DaysUntil(0, 86400) == -1);
  CHECK(DaysUntil(0, 86401) == -2);
}

TEST_CASE("verification results map to their named reasons") {
  CHECK(std::string(TlsReasonForVerifyResult(X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT)) ==
        "unknown_ca");
  CHECK(std::string(TlsReasonForVerifyResult(X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN)) ==
        "unknown_ca");
  CHECK(std::string(TlsReasonForVerifyResult(X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY)) ==
        "unknown_ca");
  CHECK(std::string(TlsReasonForVerifyResult(X509_V_ERR_HOSTNAME_MISMATCH)) == "name_mismatch");
  CHECK(std::string(TlsReasonForVerifyResult(X509_V_ERR_IP_ADDRESS_MISMATCH)) == "name_mismatch");
  CHECK(std::string(TlsReasonForVerifyResult(X509_V_ERR_CERT_HAS_EXPIRED)) == "expired");
  CHECK(std::string(TlsReasonForVerifyResult(X509_V_ERR_CERT_NOT_YET_VALID)) == "not_yet_valid");
  CHECK(std::string(TlsReasonForVerifyResult(X509_V_ERR_CERT_REVOKED)) == "untrusted");
}

TEST_CASE("a TLS library's error text maps to a named reason") {
  // The texts as Connector/C 3.3 and OpenSSL 3.0 give them (seen on this machine).
  CHECK(std::string(TlsReasonForErrorText(
            "TLS/SSL error: self-signed certificate in certificate chain")) == "unknown_ca");
  CHECK(std::string(TlsReasonForErrorText(
            "TLS/SSL error: Validation of SSL server certificate failed")) == "name_mismatch");
  CHECK(std::string(TlsReasonForErrorText("TLS/SSL error: certificate has expired")) == "expired");
  CHECK(std::string(TlsReasonForErrorText(
            "error:0A00045C:SSL routines::tlsv13 alert certificate required")) == "client_cert");
  CHECK(std::string(TlsReasonForErrorText("error:0A00010B:SSL routines::wrong version number")) ==
        "not_tls");
  CHECK(std::string(TlsReasonForErrorText("error:0A000410:SSL routines::sslv3 alert handshake "
                                          "failure")) == "handshake");
  CHECK(std::string(TlsReasonForErrorText("")) == "handshake");
}

TEST_CASE("every named reason is listed once for the metrics") {
  std::set<std::string> seen;
  for (const char* r : kTlsReasons) CHECK(seen.insert(r).second);
  for (const char* r : {"unknown_ca", "name_mismatch", "expired", "not_yet_valid", "untrusted",
                        "not_tls", "plaintext_refused", "client_cert", "handshake", "config"}) {
    CHECK(seen.count(r) == 1);
  }
}

TEST_CASE("Ssl_server_not_after is read as both servers print it") {
  CHECK(ParseCertificateTime("Jan  2 06:09:05 2027 GMT") == 1798870145);
  CHECK(ParseCertificateTime("Dec 13 00:00:00 2029 GMT") == 1891814400);
  CHECK_FALSE(ParseCertificateTime("").has_value());
  CHECK_FALSE(ParseCertificateTime("2027-01-02").has_value());
  CHECK_FALSE(ParseCertificateTime("Jan  2 06:09:05 2027 GMT trailing").has_value());
}

TEST_CASE("a connection to a port where nothing listens fails naming the label") {
  auto s = NetStream::Connect("127.0.0.1", 1, std::chrono::steady_clock::now() + Millis(500),
                              "Redis 127.0.0.1:1");
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().message() == "cannot connect to Redis 127.0.0.1:1: Connection refused");
}

}  // namespace
}  // namespace lagwatch
