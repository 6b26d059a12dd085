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
    /// Like `readFileIfRegular(root + "/" + relative)`, but a symbolic link
    /// anywhere in `relative` (the file itself or a folder on the way) is
    /// `.symbolicLink`, never followed, and `..` never leads out of `root`:
    /// how files of an instance are read (a link in a shared instance
    /// could make flowdir read, and commit, a file from elsewhere).
    func readFile(inside root: String, _ relative: String, limit: Int) throws(FileSystemError) -> [UInt8]?
    /// The first of `relatives` (folders in `root`) that is a symbolic link, if any.
    func firstLink(inside root: String, among relatives: [String]) -> String?
    /// `root`, opened once for many reads below it (an instance's 2,000
    /// node files), each as `readFile(inside:)` reads.
    func folder(_ root: String) -> any FolderFiles
}

/// Files below one folder, read as `FileSystem.readFile(inside:)` reads
/// them: never through a symbolic link. Safe to use from several threads.
public protocol FolderFiles: Sendable {
    func read(_ relative: String, limit: Int) throws(FileSystemError) -> [UInt8]?
    /// Whether `relative` itself (not the folders on the way, which a read
    /// of a file in them has checked) is a symbolic link.
    func isLink(_ relative: String) -> Bool
}

/// A folder read through its file system's `readFile(inside:)`, one call a file.
public struct FolderThrough: FolderFiles {
    public let fileSystem: any FileSystem
    public let root: String

    public init(_ fileSystem: any FileSystem, root: String) {
        self.fileSystem = fileSystem
        self.root = root
    }

    public func read(_ relative: String, limit: Int) throws(FileSystemError) -> [UInt8]? {
        try fileSystem.readFile(inside: root, relative, limit: limit)
    }

    public func isLink(_ relative: String) -> Bool {
        fileSystem.firstLink(inside: root, among: [relative]) == Path.join(root, relative)
    }
}

extension FileSystem {
    public func readFileIfRegular(_ path: String, limit: Int) throws(FileSystemError) -> [UInt8]? {
        guard isRegularFile(path) else { return nil }
        return try readFile(path, limit: limit)
    }

    /// A file system without links (one in memory) has nothing to refuse.
    public func readFile(inside root: String, _ relative: String, limit: Int) throws(FileSystemError) -> [UInt8]? {
        guard !relative.split(separator: "/").contains("..") else { throw .outside(Path.join(root, relative)) }
        return try readFileIfRegular(Path.join(root, relative), limit: limit)
    }

    public func firstLink(inside root: String, among relatives: [String]) -> String? { nil }

    public func folder(_ root: String) -> any FolderFiles { FolderThrough(self, root: root) }
}

/// A file system whose files below `root` are read as `readFile(inside:)`
/// reads them: never through a symbolic link. Given to the template
/// loader for an instance, so its workflow.yaml and tools/ are read that
/// way too; files elsewhere (the template's folder, the user's tools) are
/// read as `base` reads them.
public struct ConfinedFileSystem: FileSystem {
    public let base: any FileSystem
    public let root: String

    public init(_ base: any FileSystem, root: String) {
        // Confining twice is confining to the inner root; one layer is enough.
        if let inner = base as? ConfinedFileSystem {
            self.base = inner.base
        } else {
            self.base = base
        }
        self.root = root.count > 1 && root.hasSuffix("/") ? String(root.dropLast()) : root
    }

    /// `path` relative to `root`, when it is below it.
    func inside(_ path: String) -> String? {
        guard path.hasPrefix(root + "/") else { return nil }
        let rel = String(path.dropFirst(root.count + 1))
        return rel.isEmpty ? nil : rel
    }

    public func readFile(_ path: String, limit: Int) throws(FileSystemError) -> [UInt8] {
        guard let rel = inside(path) else { return try base.readFile(path, limit: limit) }
        guard let bytes = try base.readFile(inside: root, rel, limit: limit) else {
            throw base.isDirectory(path) ? .isDirectory(path) : .notFound(path)
        }
        return bytes
    }

    public func readFileIfRegular(_ path: String, limit: Int) throws(FileSystemError) -> [UInt8]? {
        guard let rel = inside(path) else { return try base.readFileIfRegular(path, limit: limit) }
        return try base.readFile(inside: root, rel, limit: limit)
    }

    public func readFile(inside root: String, _ relative: String, limit: Int) throws(FileSystemError) -> [UInt8]? {
        try base.readFile(inside: root, relative, limit: limit)
    }

    public func firstLink(inside root: String, among relatives: [String]) -> String? {
        base.firstLink(inside: root, among: relatives)
    }

    public func folder(_ root: String) -> any FolderFiles { base.folder(root) }

    public func isRegularFile(_ path: String) -> Bool {
        if let rel = inside(path), base.firstLink(inside: root, among: [rel]) != nil { return false }
        return base.isRegularFile(path)
    }

    public func isDirectory(_ path: String) -> Bool {
        if let rel = inside(path), base.firstLink(inside: root, among: [rel]) != nil { return false }
        return base.isDirectory(path)
    }

    public func listDirectory(_ path: String) throws(FileSystemError) -> [String] {
        if let rel = inside(path), let link = base.firstLink(inside: root, among: [rel]) { throw .symbolicLink(link) }
        return try base.listDirectory(path)
    }
}

public enum FileSystemError: Error, Equatable, Sendable, CustomStringConvertible {
    case notFound(String)
    case permissionDenied(String)
    case isDirectory(String)
    case tooLarge(String, size: Int, limit: Int)
    /// A symbolic link where flowdir reads only files (see `readFile(inside:)`).
    case symbolicLink(String)
    /// A path whose `..` leads out of the folder it must stay in.
    case outside(String)
    case other(String, message: String)

    public var description: String {
        switch self {
        case .notFound(let p): "\(p): no such file"
        case .permissionDenied(let p): "\(p): permission denied"
        case .isDirectory(let p): "\(p): is a directory"
        case .tooLarge(let p, let size, let limit): "\(p): the file is \(ByteCount(size)), more than the \(ByteCount(limit)) allowed"
        case .symbolicLink(let p):
            "\(p) is a symbolic link; flowdir does not follow links in an instance (one could make it read, and commit, a file "
                + "from elsewhere, such as your secrets): replace it with a regular file or folder"
        case .outside(let p): "\(p) leads out of the instance"
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
