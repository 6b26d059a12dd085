#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// git's `lfs` filter, for a machine without git-lfs (docs/storage.md):
/// what `git add`, `git checkout`, `git status` and `git stash` run on a
/// path `.gitattributes` marks. `clean` turns a file into its pointer
/// (its content into the store); `smudge` turns a pointer back into the
/// content when the store has it, else leaves the pointer (flowdir fetches
/// content when it is needed, never inside a git command).
public enum LFSFilter {
    /// The repository's filter settings, as `git lfs install --local` writes
    /// them when git-lfs is installed, else flowdir's own (`executable`).
    public static func configuration(gitLFS: Bool, executable: String) -> [(key: String, value: String)] {
        if gitLFS {
            return [("filter.lfs.clean", "git-lfs clean -- %f"), ("filter.lfs.smudge", "git-lfs smudge -- %f"),
                    ("filter.lfs.process", "git-lfs filter-process"), ("filter.lfs.required", "true")]
        }
        let exe = Shell.quote(executable)
        return [("filter.lfs.clean", "\(exe) lfs clean -- %f"), ("filter.lfs.smudge", "\(exe) lfs smudge -- %f"),
                ("filter.lfs.required", "true")]
    }

    /// Whether `git-lfs` is on PATH (looked up once).
    public static let gitLFSInstalled: Bool = {
        let dirs = (getenv("PATH").map { String(cString: $0) } ?? "/usr/bin:/bin").split(separator: ":")
        return dirs.contains { access(String($0) + "/git-lfs", X_OK) == 0 }
    }()

    /// stdin (a file's content, or already a pointer) → stdout (its pointer).
    public static func clean(gitDirectory: String, input: Int32, output: Int32) throws(ContentStore.Failure) {
        let store = ContentStore(gitDirectory: gitDirectory)
        // Spooled to the store's temp folder: the content's length (which
        // the pointer and git's blob id need first) is known only at its end.
        let spool = gitDirectory + "/lfs/tmp/clean-\(getpid())-" + RandomID.token().prefix(8)
        do { try Files.makeDirectories(gitDirectory + "/lfs/tmp") } catch { throw .io(spool, Errno(EIO)) }
        let fd: Int32
        switch Syscall.open(spool, O_WRONLY | O_CREAT | O_EXCL, 0o600) {
        case .success(let f): fd = f
        case .failure(let e): throw .io(spool, e)
        }
        defer { unlink(spool) }
        var head: [UInt8] = []
        do throws(ContentStore.Failure) {
            try ContentStore.pump(from: input, path: "stdin") { bytes throws(ContentStore.Failure) in
                if head.count <= LFSPointer.maximumLength { head += bytes.prefix(LFSPointer.maximumLength + 1 - head.count) }
                if case .failure(let e) = ContentStore.writeAll(fd, bytes) { throw .io(spool, e) }
            }
        } catch {
            Syscall.close(fd)
            throw error
        }
        Syscall.close(fd)
        // A pointer stays a pointer (a file whose content is not here).
        if case .success = LFSPointer.parse(head) {
            try write(head, to: output)
            return
        }
        let stored = try store.store(file: spool)
        try write(stored.pointer.bytes, to: output)
    }

    /// stdin (a pointer) → stdout (the content, or the pointer when it is not here).
    public static func smudge(gitDirectory: String, input: Int32, output: Int32) throws(ContentStore.Failure) {
        var head: [UInt8] = []
        var rest = false
        let copy: (UnsafeRawBufferPointer) throws(ContentStore.Failure) -> Void = { bytes throws(ContentStore.Failure) in
            if rest {
                if case .failure(let e) = ContentStore.writeAll(output, bytes) { throw .io("stdout", e) }
                return
            }
            head += bytes
            if head.count > LFSPointer.maximumLength {
                // Not a pointer: passed through as it is.
                rest = true
                try write(head, to: output)
            }
        }
        try ContentStore.pump(from: input, path: "stdin", copy)
        guard !rest else { return }
        guard case .success(let pointer) = LFSPointer.parse(head) else {
            try write(head, to: output)
            return
        }
        let store = ContentStore(gitDirectory: gitDirectory)
        let object = store.path(of: pointer.oid)
        guard store.has(pointer) else {
            try write(head, to: output)
            return
        }
        // Checked as it goes out; on a mismatch git gets nothing (the filter fails).
        let fd: Int32
        switch Syscall.open(object, O_RDONLY | O_NOFOLLOW) {
        case .success(let f): fd = f
        case .failure(let e): throw .io(object, e)
        }
        defer { Syscall.close(fd) }
        var digest = ContentDigest(size: pointer.size)
        try ContentStore.pump(from: fd, path: object) { bytes throws(ContentStore.Failure) in
            digest.update(bytes)
            if case .failure(let e) = ContentStore.writeAll(output, bytes) { throw .io("stdout", e) }
        }
        let count = digest.count
        let (sha, _) = digest.finish()
        guard sha == pointer.oid, count == pointer.size else { throw .mismatch(path: object, expected: pointer, sha256: sha, size: count) }
    }

    static func write(_ bytes: [UInt8], to fd: Int32) throws(ContentStore.Failure) {
        var failure: Errno?
        bytes.withUnsafeBytes { b in
            if case .failure(let e) = ContentStore.writeAll(fd, b) { failure = e }
        }
        if let failure { throw .io("stdout", failure) }
    }
}
