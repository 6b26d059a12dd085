import CLibGit2

/// SHA-1, for the checksums that close a pack, its index and the workflow
/// cache. Object ids come from libgit2 (`git_odb_hash`, collision-
/// detecting), which exports no hash of plain bytes; OpenSSL's uses the
/// CPU's SHA instructions.
enum SHA1 {
    static func hash(_ bytes: [UInt8]) -> [UInt8] { hash(bytes[...]) }

    static func hash(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBytes { data in
            out.withUnsafeMutableBufferPointer { EVP_Digest(data.baseAddress, data.count, $0.baseAddress, &length, EVP_sha1(), nil) }
        }
        precondition(ok == 1 && length == 20, "OpenSSL's SHA-1 failed")
        return Array(out.prefix(20))
    }
}
