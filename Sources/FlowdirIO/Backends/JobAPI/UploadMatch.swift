import FlowdirCore

/// Whether what an uploaded file's URL gives back is that file: its bytes
/// (`flowdir jobserver`), or a file object describing it (Replicate's
/// `GET /v1/files/{id}`: name, size, checksums), matched by size and sha256.
enum UploadMatch {
    static func matches(_ fetched: [UInt8], _ bytes: [UInt8]) -> Bool {
        if fetched == bytes { return true }
        guard let object = JSONValue.parse(fetched), case .number(let size)? = object["size"],
              object["checksums"] != nil || object["content_type"] != nil else { return false }
        guard Int(size) == bytes.count else { return false }
        if let sha = object["checksums"]?["sha256"]?.stringValue {
            return sha.lowercased() == Digest.sha256Hex(bytes)
        }
        return false  // a size alone is not enough to say it is the same file
    }

    /// How much of an answer to read for the look: the file, or its description.
    static func limit(for bytes: [UInt8]) -> Int { max(bytes.count + 1, 1 << 16) }
}
