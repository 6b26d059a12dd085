import FlowdirCore
import Synchronization

/// A file system in memory, for small tests of loading and tool lookup.
public final class InMemoryFileSystem: FileSystem {
    private let files: Mutex<[String: [UInt8]]>

    public init(_ files: [String: String] = [:]) {
        self.files = Mutex(files.mapValues { Array($0.utf8) })
    }

    public func write(_ path: String, _ text: String) { files.withLock { $0[path] = Array(text.utf8) } }
    public func write(_ path: String, bytes: [UInt8]) { files.withLock { $0[path] = bytes } }

    public func readFile(_ path: String, limit: Int) throws(FileSystemError) -> [UInt8] {
        guard let bytes = files.withLock({ $0[path] }) else {
            throw isDirectory(path) ? .isDirectory(path) : .notFound(path)
        }
        guard bytes.count <= limit else { throw .tooLarge(path, size: bytes.count, limit: limit) }
        return bytes
    }

    public func isRegularFile(_ path: String) -> Bool { files.withLock { $0[path] != nil } }

    public func isDirectory(_ path: String) -> Bool {
        let prefix = path.hasSuffix("/") ? path : path + "/"
        return files.withLock { $0.keys.contains { $0.hasPrefix(prefix) } }
    }

    public func listDirectory(_ path: String) throws(FileSystemError) -> [String] {
        let prefix = path.hasSuffix("/") ? path : path + "/"
        let names = files.withLock { files in
            Set(files.keys.filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count).prefix { $0 != "/" }) })
        }
        guard !names.isEmpty else { throw .notFound(path) }
        return names.sorted()
    }
}
