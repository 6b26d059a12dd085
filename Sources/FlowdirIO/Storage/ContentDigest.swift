import CLibGit2
import FlowdirCore

/// SHA-256 and git's blob id of one stream of bytes, fed in pieces: a
/// large file is hashed for the content store (its LFS oid) and for git
/// (its asset id, docs/storage.md) in the one pass that copies it.
/// OpenSSL's libcrypto, already linked for libgit2, uses the CPU's SHA
/// instructions.
struct ContentDigest: ~Copyable {
    private let sha256: OpaquePointer
    private let sha1: OpaquePointer
    private(set) var count: Int64 = 0
    let expectedSize: Int64

    /// `size`: the stream's length, which git's blob id hashes first.
    init(size: Int64) {
        expectedSize = size
        sha256 = EVP_MD_CTX_new()
        sha1 = EVP_MD_CTX_new()
        EVP_DigestInit_ex(sha256, EVP_sha256(), nil)
        EVP_DigestInit_ex(sha1, EVP_sha1(), nil)
        let header = Array("blob \(size)\0".utf8)
        header.withUnsafeBytes { _ = EVP_DigestUpdate(sha1, $0.baseAddress, $0.count) }
    }

    deinit {
        EVP_MD_CTX_free(sha256)
        EVP_MD_CTX_free(sha1)
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        EVP_DigestUpdate(sha256, bytes.baseAddress, bytes.count)
        EVP_DigestUpdate(sha1, bytes.baseAddress, bytes.count)
        count += Int64(bytes.count)
    }

    /// The SHA-256 as hex, and the blob id. Meaningful only when `count ==
    /// expectedSize` (else the blob header named another length).
    consuming func finish() -> (sha256: String, blob: ObjectID) {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        EVP_DigestFinal_ex(sha256, &out, &length)
        let hex = Digest.hex(out.prefix(Int(length)))
        var raw = git_oid()
        EVP_DigestFinal_ex(sha1, &out, &length)
        withUnsafeMutableBytes(of: &raw.id) { dst in
            for i in 0..<20 { dst[i] = out[i] }
        }
        return (hex, ObjectID(raw))
    }
}
