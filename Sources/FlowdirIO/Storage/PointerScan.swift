import CLibGit2
import FlowdirCore

/// Where an instance's history commits Git LFS pointers (docs/storage.md):
/// what a push must carry the content of, what HEAD needs here.
extension GitRepository {
    /// An object's size, from its header (the object is not read).
    public func objectSize(_ id: ObjectID) -> Int? {
        var odb: OpaquePointer?
        guard git_repository_odb(&odb, pointer) == 0 else { return nil }
        defer { git_odb_free(odb) }
        var size = 0
        var type = GIT_OBJECT_ANY
        var oid = id.raw
        guard git_odb_read_header(&size, &type, odb, &oid) == 0 else { return nil }
        return size
    }

    /// The pointer a blob is, if it is one (larger blobs are not read).
    public func pointer(inBlob id: ObjectID) -> LFSPointer? {
        guard let size = objectSize(id), size <= LFSPointer.maximumLength, let bytes = try? readBlob(id),
              LFSPointer.looksLikePointer(bytes), case .success(let p) = LFSPointer.parse(bytes) else { return nil }
        return p
    }

    /// The pointers `tree` commits, by path: the paths its `.gitattributes` marks.
    public func pointers(inTree tree: ObjectID) throws(GitError) -> [String: LFSPointer] {
        guard let e = try entry(at: LFSAttributes.path, inTree: tree), !e.isTree else { return [:] }
        let marked = LFSAttributes.paths(in: String(decoding: try readBlob(e.id), as: UTF8.self))
        var out: [String: LFSPointer] = [:]
        for path in marked {
            if let file = try entry(at: path, inTree: tree), !file.isTree, let p = pointer(inBlob: file.id) { out[path] = p }
        }
        return out
    }

    /// Every pointer `tree` holds, by path, whatever `.gitattributes` says
    /// (a person may have removed its line).
    public func pointersByContent(inTree tree: ObjectID) throws(GitError) -> [String: LFSPointer] {
        var out: [String: LFSPointer] = [:]
        for (path, id) in try files(ofTree: tree) { if let p = pointer(inBlob: id) { out[path] = p } }
        return out
    }

    /// Every pointer the commits of `from` not in `hiding` add (what a push
    /// of `from` sends that the remote may lack the content of), each once.
    public func pointersAdded(from: ObjectID, hiding: ObjectID?) throws(GitError) -> [LFSPointer] {
        var seen = Set<ObjectID>(), out: [LFSPointer] = []
        try eachCommit(from: from, hiding: hiding) { id throws(GitError) in
            let c = try commit(id)
            let parentTree = try c.parents.first.map { (p) throws(GitError) in try commit(p).tree }
            for file in try changedFiles(from: parentTree, to: c.tree) {
                guard let new = file.new, !new.isTree, seen.insert(new.id).inserted, let p = pointer(inBlob: new.id) else { continue }
                out.append(p)
            }
        }
        return out
    }
}
