import FlowdirCore

extension LogLines {
    /// The last `count` lines worth showing of the log at `path` (`last(_:of:)`),
    /// read from its end: a log is up to 1 MiB. A line cut by that read is
    /// left out when whole lines follow it. `nil` when there is no log to read.
    public static func last(_ count: Int, ofFile path: String) -> [String]? {
        guard let source = try? FileByteSource(path: path) else { return nil }
        let from = max(0, source.count - 4096)
        guard var bytes = try? source.bytes(at: from, length: source.count - from) else { return nil }
        if from > 0, let cut = bytes.firstIndex(of: 10), cut + 1 < bytes.count { bytes.removeSubrange(...cut) }
        return last(count, of: bytes)
    }

    /// The file's last `bytes` bytes, from the start of a line.
    public static func tail(ofFile path: String, bytes limit: Int) -> [UInt8]? {
        guard let source = try? FileByteSource(path: path) else { return nil }
        return tail(of: source, bytes: limit)
    }

    /// `last(_:ofFile:)` of an instance's file (`relative` below `root`),
    /// never read through a symbolic link (docs/security.md).
    public static func last(_ count: Int, inside root: String, _ relative: String) -> [String]? {
        guard let source = try? FileByteSource(inside: root, relative) else { return nil }
        let from = max(0, source.count - 4096)
        guard var bytes = try? source.bytes(at: from, length: source.count - from) else { return nil }
        if from > 0, let cut = bytes.firstIndex(of: 10), cut + 1 < bytes.count { bytes.removeSubrange(...cut) }
        return last(count, of: bytes)
    }

    /// `tail(ofFile:bytes:)` of an instance's file, never read through a symbolic link.
    public static func tail(inside root: String, _ relative: String, bytes limit: Int) -> [UInt8]? {
        guard let source = try? FileByteSource(inside: root, relative) else { return nil }
        return tail(of: source, bytes: limit)
    }

    static func tail(of source: FileByteSource, bytes limit: Int) -> [UInt8]? {
        let from = max(0, source.count - limit)
        guard var bytes = try? source.bytes(at: from, length: source.count - from) else { return nil }
        if from > 0, let cut = bytes.firstIndex(of: 10), cut + 1 < bytes.count { bytes.removeSubrange(...cut) }
        return bytes
    }
}
