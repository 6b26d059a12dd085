/// The file access that loading templates and tools needs. The real one is
/// `LocalFileSystem` in FlowdirIO; tests use `InMemoryFileSystem`.
public protocol FileSystem: Sendable {
    /// The file's bytes; throws `.tooLarge` rather than reading more than `limit`.
    func readFile(_ path: String, limit: Int) throws(FileSystemError) -> [UInt8]
    func isRegularFile(_ path: String) -> Bool
    func isDirectory(_ path: String) -> Bool
    /// Entry names, sorted.
    func listDirectory(_ path: String) throws(FileSystemError) -> [String]
    /// The file's bytes, or `nil` when there is no regular file there.
    func readFileIfRegular(_ path: String, limit: Int) throws(FileSystemError) -> [UInt8]?
}

extension FileSystem {
    public func readFileIfRegular(_ path: String, limit: Int) throws(FileSystemError) -> [UInt8]? {
        guard isRegularFile(path) else { return nil }
        return try readFile(path, limit: limit)
    }
}

public enum FileSystemError: Error, Equatable, Sendable, CustomStringConvertible {
    case notFound(String)
    case permissionDenied(String)
    case isDirectory(String)
    case tooLarge(String, size: Int, limit: Int)
    case other(String, message: String)

    public var description: String {
        switch self {
        case .notFound(let p): "\(p): no such file"
        case .permissionDenied(let p): "\(p): permission denied"
        case .isDirectory(let p): "\(p): is a directory"
        case .tooLarge(let p, let size, let limit): "\(p): the file is \(ByteCount(size)), more than the \(ByteCount(limit)) allowed"
        case .other(let p, let m): "\(p): \(m)"
        }
    }
}

/// A size for people: `50.0 MB`, `512 B`.
public struct ByteCount: CustomStringConvertible, Sendable {
    public var bytes: Int
    public init(_ bytes: Int) { self.bytes = bytes }
    public var description: String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1024, unit < units.count - 1 { value /= 1024; unit += 1 }
        if unit == 0 { return "\(bytes) B" }
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(tenths % 10) \(units[unit])"
    }
}

/// Path helpers on plain strings, the one place that joins and splits them.
public enum Path {
    public static func join(_ a: String, _ b: String) -> String {
        if a.isEmpty || a == "." { return b }
        if b.hasPrefix("/") { return b }
        return a.hasSuffix("/") ? a + b : a + "/" + b
    }

    // Paths are bytes to the kernel, and `/` and `.` are single bytes in
    // UTF-8: they are found in the UTF-8 view, not by walking Characters
    // (grapheme breaking made these a third of writing a state file).

    public static func directory(of path: String) -> String {
        let u = path.utf8
        guard let slash = u.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        if slash == u.startIndex { return "/" }
        return String(path[..<slash])
    }

    public static func basename(_ path: String) -> String {
        let u = path.utf8
        var end = u.endIndex
        // Trailing slashes go, but a path of slashes keeps one.
        while u.distance(from: u.startIndex, to: end) > 1, u[u.index(before: end)] == UInt8(ascii: "/") { end = u.index(before: end) }
        guard let slash = u[..<end].lastIndex(of: UInt8(ascii: "/")) else { return String(path[..<end]) }
        return String(path[u.index(after: slash)..<end])
    }

    /// The extension without its dot, lowercased; "" when there is none.
    public static func fileExtension(_ path: String) -> String {
        let name = basename(path)
        let u = name.utf8
        guard let dot = u.lastIndex(of: UInt8(ascii: ".")), dot != u.startIndex else { return "" }
        return name[u.index(after: dot)...].lowercased()
    }

    public static func removingExtension(_ name: String) -> String {
        let u = name.utf8
        guard let dot = u.lastIndex(of: UInt8(ascii: ".")), dot != u.startIndex else { return name }
        return String(name[..<dot])
    }
}
