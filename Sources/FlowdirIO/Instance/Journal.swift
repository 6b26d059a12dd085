#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import Synchronization

/// The paths a crash could leave inconsistent: those of the commit in
/// progress and those whose index entries are not yet written. One file,
/// appended to (creating a file per commit costs more than the commit on
/// ext4, and rewriting the whole list made a long run quadratic), emptied
/// when the index is flushed.
final class Journal {
    private let fd: Int32
    /// `intend` records from the engine while a background commit records too.
    private let state: Mutex<(entries: [String], known: Set<String>, size: Int)>
    var recorded: [String] { state.withLock { $0.entries } }

    init(path: String) throws {
        try Files.makeDirectories(Path.directory(of: path))
        let file: Int32
        switch Syscall.open(path, O_RDWR | O_CREAT, 0o644) {
        case .success(let f): file = f
        case .failure(let e): throw LocalFileSystem.map(e, path)
        }
        fd = file
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while case .success(let n) = chunk.withUnsafeMutableBytes({ Syscall.read(file, into: $0) }), n > 0 {
            bytes += chunk[0..<n]
        }
        let entries = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
        state = Mutex((entries, Set(entries), bytes.count))
    }

    deinit { Syscall.close(fd) }

    /// Nothing in the file, whoever wrote it.
    var isEmptyOnDisk: Bool {
        var st = stat()
        return fstat(fd, &st) == 0 && st.st_size == 0
    }

    /// Before a path whose file recovery leaves as it is (only its index entry is put in step).
    static let indexOnly = "="

    func record(_ paths: [String]) throws {
        let fd = self.fd
        try state.withLock { (state) throws(FileSystemError) in
            let new = paths.filter { state.known.insert($0).inserted }
            guard !new.isEmpty else { return }
            let text = new.joined(separator: "\n") + "\n"
            let n = text.withCString { pwrite(fd, $0, strlen($0), off_t(state.size)) }
            guard n >= 0 else { throw LocalFileSystem.map(Errno.current, "journal") }
            state.size += n
            state.entries += new
        }
    }

    func clear() throws {
        let fd = self.fd
        try state.withLock { (state) throws(FileSystemError) in
            guard !state.entries.isEmpty else { return }
            guard ftruncate(fd, 0) == 0 else { throw LocalFileSystem.map(Errno.current, "journal") }
            state = ([], [], 0)
        }
    }
}

/// Hands a value the compiler cannot prove Sendable to another thread,
/// where the owner guarantees only one thread uses it at a time.
struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
