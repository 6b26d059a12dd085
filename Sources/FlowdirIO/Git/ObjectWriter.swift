#if canImport(Glibc)
import Glibc
#endif
import CLibGit2

/// Writes objects itself. Inside a batch (`beginBatch`, one commit's
/// objects) they go to one pack, written before the commit is made
/// (`flushBatch`): a pack and its index are two files where each loose
/// object is a file of its own. Otherwise, and for large objects, loose as
/// git writes them: zlib-compressed into a temp file in
/// `objects/`, then renamed into place (atomic; a crash leaves at most a
/// temp file). Through `git_odb_write`, libgit2 first "freshens" an
/// object, which for every new one re-lists `objects/pack/` and probes for
/// a multi-pack-index, then writes with link+unlink and a mkdir each time:
/// ~40 syscalls an object against 4 here. Objects already known to be
/// stored (written or seen by this process, e.g. the empty blob, an
/// unchanged `out/` tree) are not written again at all. An object that only
/// lives in a pack is written loose once more; git allows that.
final class ObjectWriter {
    private let directory: String
    private var known: Set<ObjectID> = []
    private var fanouts: Set<String> = []
    private var counter = 0
    /// Most objects are small (state files) and take one 4 KB disk block
    /// compressed or not: they are stored without compression (a zlib
    /// stream of stored blocks, as git's `core.looseCompression = 0`
    /// writes), which costs a copy where deflating cost ~17 µs a tree.
    /// Trees are always stored: they are mostly SHA-1s, which do not
    /// compress (a 1,000-node `nodes/` tree: 31 KB, 24 KB deflated), and
    /// deflating that one cost 0.7 ms a commit.
    static let storedLimit = 4 << 10

    /// Larger objects are written loose even in a batch: a pack is built in memory.
    static let packLimit = 256 << 10
    private var batch: PackBuilder?
    let packs: PackDirectory
    /// Called once packs were merged and the old ones removed.
    var onPacksRemoved: (() -> Void)?

    init(objectsDirectory: String) {
        _ = LibGit2.ready
        directory = objectsDirectory
        packs = PackDirectory(path: objectsDirectory + "/pack")
    }

    /// How many packs of a size level are merged into one (see `GitRepository.batchingObjects`).
    var mergeAt = PackDirectory.mergeCount

    /// Until `endBatch`, small objects are gathered for one pack.
    func beginBatch() {
        if batch == nil { batch = PackBuilder() }
    }

    /// Writes the objects gathered so far as a pack, and goes on gathering.
    /// Called before anything may refer to them from outside: a commit.
    func flushBatch() throws(GitError) {
        guard let pending = batch, !pending.isEmpty else { return }
        batch = PackBuilder()
        do {
            kept.append(try packs.write(pending, kept: true))
        } catch {
            // Not stored after all: written again by whoever needs them.
            for e in pending.entries { known.remove(e.id) }
            throw error
        }
    }

    /// Packs written with a `.keep` whose objects no ref reaches yet (see `PackDirectory.write`).
    private var kept: [String] = []

    /// A ref now reaches every object written so far: git's gc may pack them as it likes.
    /// Small packs are merged then (see `PackDirectory.consolidate`).
    func releaseKept() {
        guard !kept.isEmpty else { return }
        packs.release(kept)
        kept = []
        if packs.consolidate(at: mergeAt) { onPacksRemoved?() }
    }

    /// Writes what is gathered and stops gathering.
    func endBatch() throws(GitError) {
        defer { batch = nil }
        try flushBatch()
    }

    /// Whether `id` waits in the batch, not yet readable through libgit2.
    func isPending(_ id: ObjectID) -> Bool { batch?.contains(id) ?? false }

    /// `given`: the object's id, when the caller hashed the bytes already
    /// (an output: hashed once for its run record, not again here).
    func write(_ bytes: [UInt8], type: git_object_t, id given: ObjectID? = nil) throws(GitError) -> ObjectID {
        let id: ObjectID
        if let given {
            id = given
        } else if bytes.isEmpty, type == GIT_OBJECT_BLOB {
            id = .emptyBlob
        } else {
            var oid = git_oid()
            let hashed = bytes.withUnsafeBytes { git_odb_hash(&oid, $0.baseAddress, $0.count, type) }
            try git("git_odb_hash") { hashed }
            id = ObjectID(oid)
        }
        if known.contains(id) { return id }
        if batch != nil, bytes.count <= Self.packLimit {
            batch!.append(id, type: type, size: bytes.count, zlib: deflated([], bytes, isTree: type == GIT_OBJECT_TREE))
            remember(id)
            return id
        }
        let hex = id.hex
        let fanout = directory + "/" + hex.prefix(2)
        let final = fanout + "/" + hex.dropFirst(2)
        // A small object is written without asking whether it is there: it
        // almost never is (those this writer made are known), and writing one
        // again costs little more than the stat. A large one is looked for first.
        if bytes.count <= Self.storedLimit || access(final, F_OK) != 0 {
            let name = type == GIT_OBJECT_TREE ? "tree" : type == GIT_OBJECT_COMMIT ? "commit" : "blob"
            try store(deflated(Array("\(name) \(bytes.count)\0".utf8), bytes, isTree: type == GIT_OBJECT_TREE), at: final, fanout: fanout)
        } else {
            // Freshened, as git does: `git gc` prunes unreachable loose
            // objects by age, and this one is about to be reachable again.
            utimensat(AT_FDCWD, final, nil, 0)
        }
        remember(id)
        return id
    }

    private func remember(_ id: ObjectID) {
        // A bound on memory for a long-lived watcher; forgetting only costs a stat.
        if known.count >= 100_000 { known.removeAll(keepingCapacity: true) }
        known.insert(id)
    }

    /// While the lock was not held, `git gc --prune` may have removed an
    /// object this writer knew (one of a commit someone reset away).
    func forget() { known.removeAll(keepingCapacity: true) }

    private func store(_ data: [UInt8], at final: String, fanout: String) throws(GitError) {
        counter += 1
        try ObjectFile.place(data, temp: directory + "/tmp_obj_flowdir_\(Files.processID)_\(counter)", final: final,
                             call: "loose object write") { () throws(GitError) in
            guard !fanouts.contains(fanout) else { return }
            if mkdir(fanout, 0o755) != 0 && errno != EEXIST { throw ObjectFile.failure("loose object write", "mkdir \(fanout)") }
            fanouts.insert(fanout)
        }
    }

    /// zlib's stream of `header` then `body`.
    func deflated(_ header: [UInt8], _ body: [UInt8], isTree: Bool = false) -> [UInt8] {
        isTree || header.count + body.count <= Self.storedLimit ? Self.stored(header, body) : Self.compressed(header, body)
    }

    /// RFC 1950/1951: the zlib header, stored blocks of at most 65,535
    /// bytes (the last one marked final), Adler-32.
    static func stored(_ header: [UInt8], _ body: [UInt8]) -> [UInt8] {
        let n = header.count + body.count
        let blocks = max(1, (n + 0xFFFE) / 0xFFFF)
        var out: [UInt8] = [0x78, 0x01]
        out.reserveCapacity(n + 5 * blocks + 6)
        var data = header
        data += body
        var start = 0
        repeat {
            let size = min(0xFFFF, n - start)
            let final: UInt8 = start + size == n ? 1 : 0
            out += [final, UInt8(size & 0xFF), UInt8(size >> 8), UInt8(~size & 0xFF), UInt8((~size >> 8) & 0xFF)]
            out += data[start..<(start + size)]
            start += size
        } while start < n
        let sum = data.withUnsafeBufferPointer { adler32(1, $0.baseAddress, uInt($0.count)) }
        out += [UInt8(sum >> 24 & 0xFF), UInt8(sum >> 16 & 0xFF), UInt8(sum >> 8 & 0xFF), UInt8(sum & 0xFF)]
        return out
    }

    /// Deflated at the speed-first level git and libgit2 use for loose objects.
    static func compressed(_ header: [UInt8], _ body: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        deflateInit_(&stream, Z_BEST_SPEED, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
        defer { deflateEnd(&stream) }
        var out = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(header.count + body.count))) + 64)
        var produced = 0
        out.withUnsafeMutableBufferPointer { outBuffer in
            stream.next_out = outBuffer.baseAddress
            stream.avail_out = uInt(outBuffer.count)
            for (part, flush) in [(header, Z_NO_FLUSH), (body, Z_FINISH)] {
                part.withUnsafeBufferPointer { input in
                    stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                    stream.avail_in = uInt(input.count)
                    while true {
                        let r = deflate(&stream, flush)
                        if flush == Z_FINISH ? r == Z_STREAM_END : stream.avail_in == 0 { break }
                        precondition(r == Z_OK || r == Z_BUF_ERROR, "deflate: \(r)")
                    }
                }
            }
            produced = outBuffer.count - Int(stream.avail_out)
        }
        return Array(out[..<produced])
    }
}

/// How git puts an object or pack file in place: written whole to a temp
/// file (read-only, as git's are), then renamed, so a reader sees all of it
/// or nothing and a crash leaves at most a temp file.
enum ObjectFile {
    /// `prepare` runs before the rename (a fan-out folder to make); a temp
    /// file a killed process with this pid left is replaced.
    static func place(_ bytes: [UInt8], temp: String, final: String, call: String,
                      prepare: () throws(GitError) -> Void = {}) throws(GitError) {
        var fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o444)
        if fd < 0, errno == EEXIST {
            unlink(temp)
            fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o444)
        }
        guard fd >= 0 else { throw failure(call, "open \(temp)") }
        let written = Files.writeAll(fd, bytes)
        close(fd)
        do throws(GitError) {
            if case .failure(let e) = written { throw GitError(call: call, code: -1, message: "write \(temp): \(e)") }
            try prepare()
            guard rename(temp, final) == 0 else { throw failure(call, "rename to \(final)") }
        } catch {
            unlink(temp)
            throw error
        }
    }

    /// `what` failed, with errno's text: read at once, before another call changes it.
    static func failure(_ call: String, _ what: String) -> GitError {
        GitError(call: call, code: -1, message: "\(what): \(String(cString: strerror(errno)))")
    }
}
