#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

// MARK: Crash recovery

extension InstanceStore {
    /// After a crash the journal names the paths in flight, and those whose
    /// index entries were not yet written: put
    /// them back as HEAD has them (the commit either happened or it did
    /// not), bring their index entries in step, and clear git's stale locks.
    func recoverIfNeeded() throws {
        let paths = journal.recorded
        guard !paths.isEmpty else { return }
        let git = repo.gitDirectory
        // libgit2's locks from a commit cut short; git's own index lock is
        // left alone (flowdir's was removed on open).
        for stale in ["index.flowdir", "index.flowdir.lock", "HEAD.lock", "refs/heads/main.lock", "config.lock"] {
            try Files.remove(git + "/" + stale)
        }
        repo.removeStaleKeeps()
        IndexLock.removeStrays(gitDirectory: git)
        current = try repo.head()
        var treeChanges: [TreeChange] = []
        var stamps: [String: FileStamp] = [:]
        let restored = Set(paths.filter { !$0.hasPrefix(Journal.indexOnly) })
        for entry in paths where entry.hasPrefix(Journal.indexOnly) {
            let rel = String(entry.dropFirst(Journal.indexOnly.count))
            guard !restored.contains(rel) else { continue }
            if let tree = current?.tree, let e = try repo.entry(at: rel, inTree: tree), !e.isTree {
                treeChanges.append(.blob(path: rel, id: e.id))
                // The file's stat vouches for HEAD's bytes only if it holds them; else git reads it again.
                if !workingFileHolds(rel, try repo.readBlob(e.id)) { stamps[rel] = FileStamp(stat()) }
            } else {
                treeChanges.append(.remove(path: rel))
            }
        }
        // A job launched before the commit of its start (its log is named
        // here, its work folder may be gone: its outputs were moved in) is
        // marked by a work folder again, until the engine records it as
        // interrupted (see `Engine.recoverInterrupted`): the journal is cleared below.
        for rel in restored {
            let parts = rel.split(separator: "/")
            guard parts.count == 5, parts[0] == "nodes", parts[2] == "runs", parts[4] == "log.txt", let run = Int(parts[3]),
                  try current.flatMap({ try repo.entry(at: InstancePaths.run(String(parts[1]), run) + "/run.yaml", inTree: $0.tree) }) == nil
            else { continue }
            try Files.makeDirectories(path + "/" + InstancePaths.local + "/work/\(parts[1]).\(run)")
        }
        for rel in restored where !rel.isEmpty {
            let full = path + "/" + rel
            Files.removeTemporarySiblings(of: full)
            if let tree = current?.tree, let entry = try repo.entry(at: rel, inTree: tree), !entry.isTree {
                // A large file's content when here, else its pointer (see `materialize`).
                let bytes = try repo.readBlob(entry.id)
                if !workingFileHolds(rel, bytes) { _ = try materialize(rel, bytes) }
                treeChanges.append(.blob(path: rel, id: entry.id))
            } else {
                try Files.remove(full)
                treeChanges.append(.remove(path: rel))
            }
            Files.removeEmptyParents(of: full, upTo: path)
        }
        if current == nil {
            try Files.remove(git + "/index")
        } else {
            try updateIndex(treeChanges, stamps: stamps, timeout: gitLockTimeout)
        }
        try journal.clear()
    }
}
