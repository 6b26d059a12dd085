// Debian's libgit2 is built on mbedTLS, and git_libgit2_init parses the
// system's whole CA bundle (~140 certificates): 8–13 ms of CPU at the start
// of every command, a quarter of a no-op `flowdir run`. flowdir never fetches
// or pushes through libgit2 (people sync with git itself), so the bundle is
// never used. This definition of mbedTLS's loader comes first for libgit2's
// call: an executable's dynamic symbols are searched before any library's,
// and the linker exports this one because libgit2 refers to it.
//
// libgit2 takes a bundle it cannot load as "no default certificates" and
// goes on. Were an HTTPS transport ever used, the server's certificate
// would fail verification (nothing trusted), never pass unchecked. A
// libgit2 built on OpenSSL never calls this. `ExecutableTests` checks the
// binding.
@_cdecl("mbedtls_x509_crt_parse_file")
public func flowdirSkipsTheCABundle(_ chain: UnsafeMutableRawPointer?, _ path: UnsafePointer<CChar>?) -> Int32 {
    -0x2900  // MBEDTLS_ERR_X509_FILE_IO_ERROR
}
