import FlowdirCore

/// What `flowdir sync` asks of the store: a merge commit, and a fast-forward.
extension InstanceStore {
    /// A merge of `other` (a fetched commit): these changes to HEAD's files,
    /// committed with HEAD and `other` as parents. Not kept to try again on
    /// failure: the next sync merges anew.
    public func commitMerge(_ changes: [Change], merging other: ObjectID, message: CommitMessage) throws -> ObjectID? {
        settleBackground()
        try makeUnsaved(inBackground: false)
        return try repo.batchingObjects(defersPackMerges: true) {
            try writeBatched(changes, message: message, author: nil, clearsJournal: true, merging: other)
        }
    }

    /// Moves HEAD forward to `target`, a descendant of it already in the
    /// repository (a fetch), with the working tree and the index made to match.
    public func fastForward(to target: ObjectID) throws {
        settleBackground()
        try makeUnsaved(inBackground: false)
        guard let base = current else { return }
        let tree = try repo.commit(target).tree
        var changes: [Change] = []
        for file in try repo.changedFiles(from: base.tree, to: tree) {
            if let new = file.new, !new.isTree {
                changes.append(.write(file.path, try repo.readBlob(new.id)))
            } else if file.old != nil, file.old?.isTree == false {
                changes.append(.delete(file.path))
            }
        }
        _ = try repo.batchingObjects(defersPackMerges: true) {
            try writeBatched(changes, message: CommitMessage(summary: "fast-forward", event: "sync"), author: nil, clearsJournal: true, adopting: target)
        }
    }
}
