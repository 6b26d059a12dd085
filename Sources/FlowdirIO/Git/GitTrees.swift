#if canImport(Glibc)
import Glibc
#endif
import CLibGit2

extension GitRepository {
    /// A new tree: `base` with `changes` applied. Only the trees on the
    /// changed paths are rewritten, by splicing (see `TreeWriter`), so the
    /// cost does not grow with the size of the instance.
    /// With no `base` (a first commit) the tree is built from nothing.
    public func updatedTree(base: ObjectID?, changes: [TreeChange]) throws(GitError) -> ObjectID {
        if let base, changes.isEmpty { return base }
        return try treeWriter.update(base: base, changes: changes)
    }

    /// The entry at `path` (`nodes/mask1/state.yaml`, or a folder) in a tree.
    public func entry(at path: String, inTree tree: ObjectID) throws(GitError) -> TreeEntry? {
        try treeWriter.entry(at: path, in: tree)
    }

    /// `entries(ofTree:)` read from the raw tree object, modes as stored:
    /// for walking many trees once (no libgit2 tree object built for each).
    func rawEntries(ofTree tree: ObjectID) throws(GitError) -> [TreeEntry] {
        try treeWriter.entries(of: tree)
    }

    public func entries(ofTree tree: ObjectID) throws(GitError) -> [TreeEntry] {
        var oid = tree.raw
        var t: OpaquePointer?
        try git("git_tree_lookup(\(tree.short))") { git_tree_lookup(&t, pointer, &oid) }
        defer { git_tree_free(t) }
        return (0..<git_tree_entrycount(t)).map { Self.entry(git_tree_entry_byindex(t, $0)) }
    }

    private static func entry(_ e: OpaquePointer?) -> TreeEntry {
        TreeEntry(name: String(cString: git_tree_entry_name(e)), id: ObjectID(git_tree_entry_id(e).pointee),
                  isTree: git_tree_entry_type(e) == GIT_OBJECT_TREE, mode: git_tree_entry_filemode(e).rawValue)
    }

    /// The blob at `path` in a tree, or `nil`.
    public func blob(at path: String, inTree tree: ObjectID) throws(GitError) -> [UInt8]? {
        guard let e = try entry(at: path, inTree: tree), !e.isTree else { return nil }
        return try readBlob(e.id)
    }

    /// Every file that differs between two trees, by walking only the
    /// subtrees whose ids differ. `nil` on one side means absent there.
    /// - Parameter descending: whether to look into a subtree, by its path
    ///   (`nodes/a/runs`); a subtree not looked into is left out whole.
    public func changedFiles(from old: ObjectID?, to new: ObjectID?, prefix: String = "",
                             descending: ((String) -> Bool)? = nil) throws(GitError)
        -> [(path: String, old: TreeEntry?, new: TreeEntry?)]
    {
        if old == new { return [] }
        let a = try old.map { (t) throws(GitError) in try entries(ofTree: t) } ?? []
        let b = try new.map { (t) throws(GitError) in try entries(ofTree: t) } ?? []
        // By name, once: a run's folder holds an entry per run, and looking
        // each name up in the other list made a scan of 1,000 runs quadratic.
        var inB = [String: TreeEntry](minimumCapacity: b.count)
        for e in b { inB[e.name] = e }
        var changed: [(name: String, x: TreeEntry?, y: TreeEntry?)] = []
        var inA = Set<String>(minimumCapacity: a.count)
        for x in a {
            inA.insert(x.name)
            let y = inB[x.name]
            if x.id == y?.id, x.mode == y?.mode { continue }
            changed.append((x.name, x, y))
        }
        for y in b where !inA.contains(y.name) { changed.append((y.name, nil, y)) }
        changed.sort { $0.name < $1.name }
        var result: [(path: String, old: TreeEntry?, new: TreeEntry?)] = []
        for (name, x, y) in changed {
            let path = prefix + name
            let into = (x?.isTree ?? false) || (y?.isTree ?? false) ? descending?(path) ?? true : true
            switch (x?.isTree ?? false, y?.isTree ?? false) {
            case (true, true):
                if into { result += try changedFiles(from: x?.id, to: y?.id, prefix: path + "/", descending: descending) }
            case (true, false):
                if into { result += try changedFiles(from: x?.id, to: nil, prefix: path + "/", descending: descending) }
                if let y { result.append((path, nil, y)) }
            case (false, true):
                if let x { result.append((path, x, nil)) }
                if into { result += try changedFiles(from: nil, to: y?.id, prefix: path + "/", descending: descending) }
            case (false, false):
                result.append((path, x, y))
            }
        }
        return result
    }
}
