import FlowdirCore

/// One commit of an instance, as `flowdir history` shows it.
public struct HistoryEntry: Sendable {
    public var instance: String
    public var commit: CommitInfo
    /// flowdir's trailers, when flowdir made the commit.
    public var message: CommitMessage?

    public var time: Timestamp { Timestamp(seconds: Double(commit.committer.time)) }
}

/// Reads an instance's history from git (what `git log` shows).
public enum InstanceHistory {
    /// Newest first; with `node`, only commits that changed `nodes/<node>/`.
    public static func entries(_ path: String, node: String? = nil, limit: Int = 50) throws -> [HistoryEntry] {
        let repo = try GitRepository.open(path)
        guard let head = try repo.head() else { return [] }
        var out: [HistoryEntry] = []
        let prefix = node.map(InstancePaths.node)
        try repo.walk(from: head.id) { commit in
            if let prefix {
                let mine = try repo.entry(at: prefix, inTree: commit.tree)?.id
                let parent = try commit.parents.first.map { try repo.entry(at: prefix, inTree: repo.commit($0).tree)?.id } ?? nil
                guard mine != parent else { return true }
            }
            out.append(HistoryEntry(instance: path, commit: commit, message: CommitMessage(parsing: commit.message)))
            return out.count < limit
        }
        return out
    }
}
