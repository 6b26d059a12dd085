import CLibGit2

// SHA-256 and HMAC-SHA256 for the job API (upload checks, webhook
// signatures) and `flowdir jobserver` (version ids, stored files), from
// OpenSSL's libcrypto, which flowdir links already for libgit2 and its own
// packs (ContentDigest). The only place outside Storage/ that calls
// libcrypto, so no other module imports CLibGit2 for it, and a build
// carries one BoringSSL (swift-nio-ssl's, for TLS) instead of also
// swift-crypto's (Benchmarks/README.md, "Build: time, size, start-up").
//
// libcrypto fails these calls only when it cannot allocate, which is not
// something a caller's bytes can cause: that is a trap, never an answer.

/// One-shot SHA-256, and bytes as lowercase hex.
public enum Digest {
    public static let sha256ByteCount = 32

    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: sha256ByteCount)
        var length: UInt32 = 0
        let ok = withBytes(bytes) { data, count in
            out.withUnsafeMutableBufferPointer { EVP_Digest(data, count, $0.baseAddress, &length, EVP_sha256(), nil) }
        }
        precondition(ok == 1 && length == sha256ByteCount, "libcrypto could not hash (out of memory)")
        return out
    }

    /// The SHA-256 of `bytes` as 64 lowercase hex digits (what sha256sum prints).
    public static func sha256Hex(_ bytes: [UInt8]) -> String { hex(sha256(bytes)) }

    public static func hex<C: Collection<UInt8>>(_ bytes: C) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `bytes`' address and count, never a nil address: libcrypto is
    /// handed a valid pointer for an empty key or message too.
    static func withBytes<R>(_ bytes: [UInt8], _ body: (UnsafePointer<UInt8>, Int) -> R) -> R {
        bytes.withUnsafeBufferPointer { b in
            if let base = b.baseAddress { return body(base, b.count) }
            var none: UInt8 = 0
            return withUnsafePointer(to: &none) { body($0, 0) }
        }
    }
}

/// SHA-256 of a stream fed in pieces (a file as it is received). Not
/// copyable: it owns a libcrypto context, freed once.
public struct SHA256Hasher: ~Copyable {
    private let context: OpaquePointer

    public init() {
        guard let c = EVP_MD_CTX_new() else { preconditionFailure("libcrypto could not make a digest context (out of memory)") }
        precondition(EVP_DigestInit_ex(c, EVP_sha256(), nil) == 1, "libcrypto could not start SHA-256")
        context = c
    }

    deinit { EVP_MD_CTX_free(context) }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        precondition(EVP_DigestUpdate(context, base, bytes.count) == 1, "libcrypto could not hash (out of memory)")
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The digest of what was fed so far. Finishes a copy of the context,
    /// so it may be asked again, or fed more, as swift-crypto's could.
    public func finalize() -> [UInt8] {
        guard let copy = EVP_MD_CTX_new() else { preconditionFailure("libcrypto could not make a digest context (out of memory)") }
        defer { EVP_MD_CTX_free(copy) }
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        precondition(EVP_MD_CTX_copy_ex(copy, context) == 1 && EVP_DigestFinal_ex(copy, &out, &length) == 1
            && length == Digest.sha256ByteCount, "libcrypto could not finish SHA-256 (out of memory)")
        return Array(out.prefix(Int(length)))
    }
}

/// HMAC-SHA256 (RFC 2104) with OpenSSL's one-shot `HMAC()`.
public enum HMACSHA256 {
    static let blockByteCount = 64

    public static func authenticationCode(for message: [UInt8], key: [UInt8]) -> [UInt8] {
        // RFC 2104: a key longer than the block is hashed first. Done here
        // (libcrypto would do the same) so any key's length fits HMAC()'s `int`.
        let k = key.count > blockByteCount ? Digest.sha256(key) : key
        var out = [UInt8](repeating: 0, count: Digest.sha256ByteCount)
        var length: UInt32 = 0
        let made = Digest.withBytes(k) { keyBytes, keyCount in
            Digest.withBytes(message) { data, count in
                out.withUnsafeMutableBufferPointer { HMAC(EVP_sha256(), keyBytes, Int32(keyCount), data, count, $0.baseAddress, &length) != nil }
            }
        }
        precondition(made && length == Digest.sha256ByteCount, "libcrypto could not compute HMAC-SHA256 (out of memory)")
        return out
    }
}
