#if canImport(Glibc)
import Glibc
#endif
import CLibGit2

/// A libgit2 repository with a working tree: just the calls flowdir needs.
/// Not thread-safe; its owner (one actor, or one command) serialises use.
public final class GitRepository {
    let pointer: OpaquePointer
    /// The working tree, without a trailing slash.
    public let workdir: String

    lazy var treeWriter = TreeWriter(repository: self)
    private var objectWriter: ObjectWriter?
    /// The index as flowdir last wrote it under its own lock, kept parsed
    /// (see `updateIndex`), with the stat of the file it became.
    var ownIndex: (index: OpaquePointer, stamp: FileStamp)?
    /// `.git/index` as first seen, before flowdir wrote it (see `secondsSinceOthersWroteIndex`).
    var firstSeenIndex: FileStamp?

    /// Packs a flowdir that died mid-commit left kept (see `PackDirectory.write`).
    public func removeStaleKeeps() {
        PackDirectory(path: gitDirectory + "/objects/pack").removeStaleKeeps()
    }

    /// Objects written before may be gone (see `ObjectWriter.forget`).
    public func forgetWrittenObjects() { objectWriter?.forget() }

    /// Runs `body` with the objects it writes gathered into one pack, which
    /// is written before a commit is made and when `body` ends (see
    /// `ObjectWriter`). Nothing in `body` may read them through libgit2
    /// before then, except trees through `TreeWriter`, which knows.
    /// `defersPackMerges`: small packs are merged only when twice as many
    /// have gathered (see `PackDirectory.consolidate`): for a commit someone
    /// waits for, while commits written in the background do the merging.
    func batchingObjects<T>(defersPackMerges: Bool = false, _ body: () throws -> T) throws -> T {
        let writer = try objects()
        writer.mergeAt = defersPackMerges ? 2 * PackDirectory.mergeCount : PackDirectory.mergeCount
        writer.beginBatch()
        let result: T
        do {
            result = try body()
        } catch {
            try? writer.endBatch()
            throw error
        }
        try writer.endBatch()
        return result
    }

    /// Writes the objects gathered for a batch so far, before something
    /// outside the batch names them (a commit, git's index).
    func flushObjects() throws(GitError) { try objectWriter?.flushBatch() }

    func objects() throws(GitError) -> ObjectWriter {
        if let objectWriter { return objectWriter }
        let made = ObjectWriter(objectsDirectory: gitDirectory + "/objects")
        made.onPacksRemoved = { [unowned self] in reloadObjectDatabase() }
        objectWriter = made
        return made
    }

    /// A fresh object database: libgit2 never drops a pack from its list,
    /// and keeps one it has read open and mapped after it is removed.
    private func reloadObjectDatabase() {
        var odb: OpaquePointer?
        guard git_odb_open(&odb, gitDirectory + "/objects") == 0 else { return }
        git_repository_set_odb(pointer, odb)
        git_odb_free(odb)
    }

    private init(_ pointer: OpaquePointer) {
        self.pointer = pointer
        var dir = git_repository_workdir(pointer).map { String(cString: $0) } ?? ""
        while dir.count > 1, dir.hasSuffix("/") { dir.removeLast() }
        self.workdir = dir
    }

    deinit {
        if let own = ownIndex { git_index_free(own.index) }
        git_repository_free(pointer)
    }

    /// `git init` with `main` as the first branch.
    public static func create(at path: String, initialBranch: String = "main") throws(GitError) -> GitRepository {
        _ = LibGit2.ready
        var options = git_repository_init_options()
        try git("git_repository_init_options_init") { git_repository_init_options_init(&options, UInt32(GIT_REPOSITORY_INIT_OPTIONS_VERSION)) }
        options.flags = GIT_REPOSITORY_INIT_MKPATH.rawValue
        var repo: OpaquePointer?
        // Closures here can't throw typed errors: get the code, then check it.
        let code = initialBranch.withCString { branch in
            options.initial_head = branch
            return git_repository_init_ext(&repo, path, &options)
        }
        try git("git_repository_init_ext(\(path))") { code }
        let repository = GitRepository(repo!)
        // Index v4 compresses paths: less to write and hash on every flush.
        var index: OpaquePointer?
        try git("git_repository_index") { git_repository_index(&index, repo) }
        defer { git_index_free(index) }
        try git("git_index_set_version") { git_index_set_version(index, 4) }
        try git("git_index_write") { git_index_write(index) }
        return repository
    }

    public static func open(_ path: String) throws(GitError) -> GitRepository {
        _ = LibGit2.ready
        var repo: OpaquePointer?
        try git("git_repository_open_ext(\(path))") {
            git_repository_open_ext(&repo, path, GIT_REPOSITORY_OPEN_NO_SEARCH.rawValue, nil)
        }
        return GitRepository(repo!)
    }

    public var gitDirectory: String {
        var dir = String(cString: git_repository_path(pointer))
        while dir.count > 1, dir.hasSuffix("/") { dir.removeLast() }
        return dir
    }

    // MARK: Blobs

    /// `id`: the bytes' blob id, when the caller has already hashed them.
    public func writeBlob(_ bytes: [UInt8], id: ObjectID? = nil) throws(GitError) -> ObjectID {
        try objects().write(bytes, type: GIT_OBJECT_BLOB, id: id)
    }

    /// The id the bytes would have as a blob, without storing them.
    public static func blobID(of bytes: [UInt8]) -> ObjectID {
        if bytes.isEmpty { return .emptyBlob }
        _ = LibGit2.ready
        var oid = git_oid()
        bytes.withUnsafeBytes { raw in _ = git_odb_hash(&oid, raw.baseAddress, raw.count, GIT_OBJECT_BLOB) }
        return ObjectID(oid)
    }

    public func readBlob(_ id: ObjectID) throws(GitError) -> [UInt8] {
        var blob: OpaquePointer?
        var oid = id.raw
        try git("git_blob_lookup(\(id.short))") { git_blob_lookup(&blob, pointer, &oid) }
        defer { git_blob_free(blob) }
        let size = Int(git_blob_rawsize(blob))
        guard size > 0, let content = git_blob_rawcontent(blob) else { return [] }
        return Array(UnsafeRawBufferPointer(start: content, count: size))
    }

    public func contains(_ id: ObjectID) -> Bool {
        var odb: OpaquePointer?
        guard git_repository_odb(&odb, pointer) == 0 else { return false }
        defer { git_odb_free(odb) }
        var oid = id.raw
        return git_odb_exists(odb, &oid) != 0
    }

    // MARK: Commits and refs

    /// The commit HEAD points at; `nil` in a repository with no commits yet.
    public func head() throws(GitError) -> CommitInfo? {
        var oid = git_oid()
        let code = git_reference_name_to_id(&oid, pointer, "HEAD")
        if code == GIT_ENOTFOUND.rawValue || code == GIT_EUNBORNBRANCH.rawValue { return nil }
        try git("git_reference_name_to_id(HEAD)") { code }
        return try commit(ObjectID(oid))
    }

    /// The branch HEAD names when it has no commit (a new repository, or a
    /// branch deleted or misspelled by hand), with the local branches there are.
    public func unbornHead() -> (branch: String, branches: [String])? {
        guard git_repository_head_unborn(pointer) == 1 else { return nil }
        var ref: OpaquePointer?
        guard git_reference_lookup(&ref, pointer, "HEAD") == 0 else { return nil }
        defer { git_reference_free(ref) }
        let target = git_reference_symbolic_target(ref).map { String(cString: $0) } ?? "HEAD"
        var branches: [String] = []
        var iterator: OpaquePointer?
        if git_branch_iterator_new(&iterator, pointer, GIT_BRANCH_LOCAL) == 0 {
            defer { git_branch_iterator_free(iterator) }
            var branch: OpaquePointer?
            var type = GIT_BRANCH_LOCAL
            while git_branch_next(&branch, &type, iterator) == 0 {
                if let name = git_reference_shorthand(branch) { branches.append(String(cString: name)) }
                git_reference_free(branch)
            }
        }
        let short = target.hasPrefix("refs/heads/") ? String(target.dropFirst("refs/heads/".count)) : target
        return (short, branches.sorted())
    }

    /// Where HEAD points now (cheap: no commit is read).
    public func headID() -> ObjectID? {
        var oid = git_oid()
        guard git_reference_name_to_id(&oid, pointer, "HEAD") == 0 else { return nil }
        return ObjectID(oid)
    }

    public func commit(_ id: ObjectID) throws(GitError) -> CommitInfo {
        var c: OpaquePointer?
        var oid = id.raw
        try git("git_commit_lookup(\(id.short))") { git_commit_lookup(&c, pointer, &oid) }
        defer { git_commit_free(c) }
        var parents: [ObjectID] = []
        for i in 0..<git_commit_parentcount(c) {
            if let p = git_commit_parent_id(c, i) { parents.append(ObjectID(p.pointee)) }
        }
        return CommitInfo(
            id: id, tree: ObjectID(git_commit_tree_id(c).pointee), parents: parents,
            message: git_commit_message(c).map { String(cString: $0) } ?? "",
            author: Self.signature(git_commit_author(c)), committer: Self.signature(git_commit_committer(c)))
    }

    private static func signature(_ s: UnsafePointer<git_signature>?) -> GitSignature {
        guard let s = s?.pointee else { return GitSignature(name: "", email: "", time: 0) }
        return GitSignature(name: String(cString: s.name), email: String(cString: s.email),
                            time: s.when.time, offsetMinutes: s.when.offset)
    }

    /// Creates a commit and, with `updateRef`, moves that ref to it; libgit2
    /// refuses (`isModified`) if the ref no longer points at the first parent.
    public func createCommit(tree: ObjectID, parents: [ObjectID], message: String, author: GitSignature,
                             committer: GitSignature, updateRef: String? = "HEAD") throws(GitError) -> ObjectID {
        // The commit must never be seen before its trees and blobs are.
        try objectWriter?.flushBatch()
        let authorSig = try Self.makeSignature(author)
        defer { git_signature_free(authorSig) }
        let committerSig = try Self.makeSignature(committer)
        defer { git_signature_free(committerSig) }
        var out = git_oid()
        var treeOID = tree.raw
        // By id: the tree and parents were just written or read, so loading
        // them again (as git_commit_create does) would only cost time.
        var parentOIDs = parents.map(\.raw)
        let code = withUnsafeMutablePointer(to: &treeOID) { treePointer in
            parentOIDs.withUnsafeMutableBufferPointer { buffer -> Int32 in
                var pointers: [UnsafePointer<git_oid>?] = (0..<buffer.count).map { UnsafePointer(buffer.baseAddress! + $0) }
                return pointers.withUnsafeMutableBufferPointer { p in
                    git_commit_create_from_ids(&out, pointer, updateRef, authorSig, committerSig, nil, message,
                                               treePointer, p.count, p.baseAddress)
                }
            }
        }
        try git("git_commit_create_from_ids") { code }
        if updateRef != nil { objectWriter?.releaseKept() }
        return ObjectID(out)
    }

    private static func makeSignature(_ s: GitSignature) throws(GitError) -> UnsafeMutablePointer<git_signature>? {
        var sig: UnsafeMutablePointer<git_signature>?
        try git("git_signature_new(\(s.name) <\(s.email)>)") {
            git_signature_new(&sig, s.name, s.email, git_time_t(s.time), Int32(s.offsetMinutes))
        }
        return sig
    }

    /// Resolves `HEAD~2`, a short id, a branch… to the commit it names.
    public func resolve(revision: String) throws(GitError) -> ObjectID {
        var object: OpaquePointer?
        try git("git_revparse_single(\(revision))") { git_revparse_single(&object, pointer, revision) }
        defer { git_object_free(object) }
        var commit: OpaquePointer?
        try git("git_object_peel(\(revision))") { git_object_peel(&commit, object, GIT_OBJECT_COMMIT) }
        defer { git_object_free(commit) }
        return ObjectID(git_object_id(commit).pointee)
    }

    /// Walks history from `start`, newest first; `body` returns false to stop.
    public func walk(from start: ObjectID, _ body: (CommitInfo) throws -> Bool) throws {
        var walker: OpaquePointer?
        try git("git_revwalk_new") { git_revwalk_new(&walker, pointer) }
        defer { git_revwalk_free(walker) }
        git_revwalk_sorting(walker, GIT_SORT_TOPOLOGICAL.rawValue | GIT_SORT_TIME.rawValue)
        var oid = start.raw
        try git("git_revwalk_push") { git_revwalk_push(walker, &oid) }
        var next = git_oid()
        while git_revwalk_next(&next, walker) == 0 {
            if try !body(try commit(ObjectID(next))) { break }
        }
    }

    // MARK: Config

    /// A value from the repository's config, with the user's and system's
    /// behind it; `nil` when unset.
    public func configString(_ key: String) -> String? {
        var config: OpaquePointer?
        guard git_repository_config_snapshot(&config, pointer) == 0 else { return nil }
        defer { git_config_free(config) }
        var value: UnsafePointer<CChar>?
        guard git_config_get_string(&value, config, key) == 0, let value else { return nil }
        let s = String(cString: value)
        return s.isEmpty ? nil : s
    }
}

extension GitRepository {
    /// A value from the repository's own config (`.git/config`) only.
    public func localConfigString(_ key: String) -> String? {
        var config: OpaquePointer?, local: OpaquePointer?
        guard git_repository_config(&config, pointer) == 0 else { return nil }
        defer { git_config_free(config) }
        guard git_config_open_level(&local, config, GIT_CONFIG_LEVEL_LOCAL) == 0 else { return nil }
        defer { git_config_free(local) }
        var buffer = git_buf()
        defer { git_buf_dispose(&buffer) }
        guard git_config_get_string_buf(&buffer, local, key) == 0, let p = buffer.ptr else { return nil }
        return String(cString: p)
    }

    /// Sets `key` in the repository's own config (`.git/config`).
    public func setConfigString(_ key: String, _ value: String) throws(GitError) {
        var config: OpaquePointer?
        try git("git_repository_config") { git_repository_config(&config, pointer) }
        defer { git_config_free(config) }
        try git("git_config_set_string") { git_config_set_string(config, key, value) }
    }
}
