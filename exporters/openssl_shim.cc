// Shims that let Debian 12's CivetWeb 1.15 use OpenSSL 3 (exporters/http_server.cc explains why).
// Built twice: as liblagwatch-civetweb-ssl.so with soname libssl.so, linked to libssl.so.3, with
// LAGWATCH_SSL_SHIM defined; and as liblagwatch-civetweb-crypto.so with soname libcrypto.so,
// linked to libcrypto.so.3, with nothing in it. CivetWeb looks every other symbol up through them
// in the real libraries.
#ifdef LAGWATCH_SSL_SHIM
#include <openssl/ssl.h>

// OpenSSL 3 keeps the 1.1 name only as a macro for SSL_get1_peer_certificate (same semantics:
// the caller owns a reference, which CivetWeb frees with X509_free).
#undef SSL_get_peer_certificate
extern "C" __attribute__((visibility("default"))) X509* SSL_get_peer_certificate(const SSL* s) {
  return SSL_get1_peer_certificate(s);
}
#endif
