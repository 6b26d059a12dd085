import CLibGit2

/// What sync needs of a repository beyond commits: where two histories
/// meet, a commit's files, and moving a branch to a commit it already has.
extension GitRepository {
    /// The best common ancestor of two commits, or nil if they share none.
    public func mergeBase(_ a: ObjectID, _ b: ObjectID) throws(GitError) -> ObjectID? {
        var out = git_oid()
        var x = a.raw, y = b.raw
        let code = git_merge_base(&out, pointer, &x, &y)
        if code == GIT_ENOTFOUND.rawValue { return nil }
        try git("git_merge_base") { code }
        return ObjectID(out)
    }

    /// Every file of a tree: path → blob id.
    public func files(ofTree tree: ObjectID?) throws(GitError) -> [String: ObjectID] {
        guard let tree else { return [:] }
        var files: [String: ObjectID] = [:]
        for file in try changedFiles(from: nil, to: tree) { if let e = file.new, !e.isTree { files[file.path] = e.id } }
        return files
    }

    /// Moves the branch HEAD names to `target`, only if it still points at
    /// `expected` (a fast-forward: no new commit is made).
    public func moveHead(to target: ObjectID, from expected: ObjectID?) throws(GitError) {
        var head: OpaquePointer?
        try git("git_reference_lookup(HEAD)") { git_reference_lookup(&head, pointer, "HEAD") }
        defer { git_reference_free(head) }
        let branch = git_reference_symbolic_target(head).map { String(cString: $0) } ?? "HEAD"
        var new: OpaquePointer?
        var oid = target.raw
        if var old = expected?.raw {
            try git("git_reference_create_matching(\(branch))") {
                git_reference_create_matching(&new, pointer, branch, &oid, 1, &old, "flowdir sync: fast-forward")
            }
        } else {
            try git("git_reference_create(\(branch))") { git_reference_create(&new, pointer, branch, &oid, 1, "flowdir sync: fast-forward") }
        }
        git_reference_free(new)
    }

    /// The branch HEAD names (`main`), if it names one.
    public func headBranch() -> String? {
        var head: OpaquePointer?
        guard git_reference_lookup(&head, pointer, "HEAD") == 0 else { return nil }
        defer { git_reference_free(head) }
        guard let target = git_reference_symbolic_target(head).map({ String(cString: $0) }), target.hasPrefix("refs/heads/") else { return nil }
        return String(target.dropFirst("refs/heads/".count))
    }

    /// How many commits `from` has that `hiding` has not (`git rev-list --count hiding..from`).
    public func countCommits(from: ObjectID, hiding: ObjectID?) throws(GitError) -> Int {
        var n = 0
        try eachCommit(from: from, hiding: hiding) { _ throws(GitError) in n += 1 }
        return n
    }

    /// Each commit `from` has that `hiding` has not (`git rev-list hiding..from`), newest first.
    public func eachCommit(from: ObjectID, hiding: ObjectID?, _ body: (ObjectID) throws(GitError) -> Void) throws(GitError) {
        var walker: OpaquePointer?
        try git("git_revwalk_new") { git_revwalk_new(&walker, pointer) }
        defer { git_revwalk_free(walker) }
        var start = from.raw
        try git("git_revwalk_push") { git_revwalk_push(walker, &start) }
        if var hidden = hiding?.raw { try git("git_revwalk_hide") { git_revwalk_hide(walker, &hidden) } }
        var next = git_oid()
        while git_revwalk_next(&next, walker) == 0 { try body(ObjectID(next)) }
    }

    /// Whether the repository has any remote (it is shared with another machine).
    public var hasRemotes: Bool {
        var list = git_strarray()
        guard git_remote_list(&list, pointer) == 0 else { return false }
        defer { git_strarray_dispose(&list) }
        return list.count > 0
    }

    /// Whether it has the git remote `name` (an instance synced through it).
    public func hasRemote(_ name: String) -> Bool { configString("remote.\(name).url") != nil }

    /// Whether the repository at `path` has the git remote `name`.
    public static func hasRemote(_ name: String, at path: String) -> Bool {
        (try? GitRepository.open(path))?.hasRemote(name) ?? false
    }
}
