#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

// MARK: Large files (docs/storage.md)
//
// A large output is committed as a Git LFS pointer, its content kept once in
// `.git/lfs/objects/`, the real file in the working tree. The store keeps
// `.gitattributes` marking exactly those paths in the same commit, puts
// content (not pointer text) in the working tree wherever it writes a
// committed blob, and sets up git's `lfs` filter so the git CLI agrees.

extension InstanceStore {
    /// The repository's content store (`.git/lfs/objects/`).
    public var contentStore: ContentStore { ContentStore(gitDirectory: repo.gitDirectory) }

    /// The pointer `bytes` are, if they are one (cheap for anything else).
    static func pointer(_ bytes: [UInt8]) -> LFSPointer? {
        guard bytes.count <= LFSPointer.maximumLength, LFSPointer.looksLikePointer(bytes),
              case .success(let p) = LFSPointer.parse(bytes) else { return nil }
        return p
    }

    /// HEAD's `.gitattributes` and the paths flowdir's lines mark there.
    func lfsAttributes() throws -> (text: String, paths: Set<String>) {
        if let c = lfsCache, c.head == current?.id { return (c.text, c.paths) }
        var text = ""
        if let tree = current?.tree, let e = try repo.entry(at: LFSAttributes.path, inTree: tree), !e.isTree {
            text = String(decoding: try repo.readBlob(e.id), as: UTF8.self)
        }
        let paths = LFSAttributes.paths(in: text)
        lfsCache = LFSCache(head: current?.id, text: text, paths: paths)
        return (text, paths)
    }

    /// The paths HEAD commits as Git LFS pointers.
    public func largeFilePaths() throws -> Set<String> {
        settleBackground()
        return try lfsAttributes().paths
    }

    /// `changes` with the `.gitattributes` write that keeps its lines in
    /// step with the pointers they commit and remove (unless they write
    /// `.gitattributes` themselves: a rollback, a merge). Also returns the
    /// paths marked after them.
    func withLargeFileAttributes(_ changes: [Change]) throws -> (changes: [Change], marked: Set<String>?) {
        if changes.contains(where: { $0.path == LFSAttributes.path }) { return (changes, nil) }
        let now = try lfsAttributes()
        var marked = now.paths
        for change in changes {
            switch change {
            case .write(let rel, let bytes), .placed(let rel, let bytes, _, _):
                if Self.pointer(bytes) != nil { marked.insert(rel) } else { marked.remove(rel) }
            case .encode(let rel, _), .delete(let rel), .untrack(let rel):
                marked.remove(rel)
            case .existing:
                break  // a marked path stays marked: ingested again (see `writeBatched`)
            }
        }
        guard marked != now.paths, let text = LFSAttributes.text(now.text, marking: marked) else { return (changes, marked) }
        if !marked.isEmpty { configureLargeFileFilter() }
        return (changes + [.write(LFSAttributes.path, text)], marked)
    }

    /// Puts the committed `bytes` of `rel` in the working tree: for a
    /// pointer, its content when the store has it (checked as it is
    /// copied), else the pointer itself (the content is not on this machine).
    func materialize(_ rel: String, _ bytes: [UInt8]) throws -> FileStamp? {
        let full = path + "/" + rel
        if let p = Self.pointer(bytes), contentStore.has(p) {
            try Files.makeDirectories(Path.directory(of: full))
            // A store object changed by hand is not copied out: the pointer instead (`storage verify` names it).
            if let stamp = try? contentStore.copy(p, to: full) { return stamp }
        }
        return try Files.writeAtomically(full, bytes)
    }

    /// Puts content in place of pointer text left in the working tree at
    /// `paths` (content fetched since); returns the paths it replaced.
    public func placeContent(paths: [String]) throws -> [String] {
        settleBackground()
        var placed: [String] = []
        var entries: [TreeChange] = []
        var stamps: [String: FileStamp] = [:]
        for rel in paths.sorted() {
            let full = path + "/" + rel
            var st = stat()
            guard lstat(full, &st) == 0, st.st_mode & S_IFMT == S_IFREG, Int(st.st_size) <= LFSPointer.maximumLength,
                  let bytes = read(rel), let p = Self.pointer(bytes), contentStore.has(p) else { continue }
            let stamp = try contentStore.copy(p, to: full)
            placed.append(rel)
            // git's index keeps the pointer's blob with the new file's stat:
            // else `git status` sees a size change and calls it modified.
            entries.append(.blob(path: rel, id: GitRepository.blobID(of: bytes)))
            if let stamp { stamps[rel] = stamp }
        }
        if !entries.isEmpty {
            try updateIndex(entries, stamps: stamps, timeout: gitLockTimeout)
        }
        return placed
    }

    /// Whether the working tree's `rel` already holds what `bytes` commit:
    /// the same bytes, or for a pointer its content (size, then SHA-256).
    func workingFileHolds(_ rel: String, _ bytes: [UInt8]) -> Bool {
        guard let p = Self.pointer(bytes) else { return read(rel) == bytes }
        var st = stat()
        guard lstat(path + "/" + rel, &st) == 0, Int64(st.st_size) == p.size,
              let d = try? contentStore.digest(ofFile: path + "/" + rel) else { return false }
        return d.sha256 == p.oid && d.size == p.size
    }

    /// The working file at `rel` (a marked path a person replaced) into the
    /// store; its pointer's blob for the tree.
    func ingestExisting(_ rel: String) throws -> ObjectID? {
        let full = path + "/" + rel
        guard Files.exists(full) else { return nil }
        let stored = try contentStore.store(file: full)
        return try repo.writeBlob(stored.pointer.bytes)
    }

    /// Sets git's `lfs` filter in `.git/config` (git-lfs's when installed,
    /// else flowdir's own `flowdir lfs clean|smudge`), once per store, so
    /// `git status` reads a large file as its pointer, as flowdir committed it.
    func configureLargeFileFilter() {
        guard !filterConfigured else { return }
        filterConfigured = true
        let gitLFS = LFSFilter.gitLFSInstalled
        guard gitLFS || Self.filterExecutable != nil else { return }
        let wanted = LFSFilter.configuration(gitLFS: gitLFS, executable: Self.filterExecutable ?? "flowdir")
        // The repository's own, even when the user's or the system's config
        // has one (a clone used elsewhere, `GIT_CONFIG_NOSYSTEM`); a person's
        // own setting here is left as it is.
        guard repo.localConfigString("filter.lfs.clean") == nil else { return }
        for (key, value) in wanted { try? repo.setConfigString(key, value) }
    }

    /// The flowdir binary git runs as the filter when git-lfs is absent:
    /// this process, when it is flowdir (not a test runner).
    nonisolated(unsafe) public static var filterExecutable: String? = {
        guard let exe = Files.realPath("/proc/self/exe"), Path.basename(exe) == "flowdir" else { return nil }
        return exe
    }()
}

/// HEAD's `.gitattributes`, read once a commit.
struct LFSCache {
    var head: ObjectID?
    var text: String
    var paths: Set<String>
}
