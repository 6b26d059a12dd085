#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore

/// What an instance's history keeps beside git (docs/storage.md): every
/// pointer it ever committed, where, and how it stands now — the facts
/// `flowdir storage` shows and `storage free` plans over.
public struct InstanceContent: Sendable {
    public var path: String
    /// Every reference to an object, from the whole history.
    public var references: [FreePlan.Reference]
    /// HEAD's pointers by path.
    public var current: [String: LFSPointer]
    /// Objects in the local store, with the bytes each takes on disk.
    public var held: [String: Int64]
    /// Bytes of git's own data (`.git` without `lfs/`).
    public var gitBytes: Int64

    /// Pinned ("keep offline"): the whole instance (`""`) or nodes, kept in `.flowdir/pins`.
    public static func pins(_ instance: String) -> Set<String> {
        guard let bytes = try? LocalFileSystem().readFile(Path.join(instance, InstancePaths.local + "/pins"), limit: 1 << 20) else { return [] }
        var out = Set<String>()
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            let name = String(line)
            if name == "*" { out.insert("") } else if InboxName.isPlainName(name) { out.insert(name) }
        }
        return out
    }

    /// Pins or unpins `node` (nil: the whole instance).
    public static func setPinned(_ node: String?, _ pinned: Bool, in instance: String) throws {
        var all = pins(instance)
        if pinned { all.insert(node ?? "") } else { all.remove(node ?? "") }
        try setPins(all, in: instance)
    }

    static func setPins(_ pins: Set<String>, in instance: String) throws {
        let lines = pins.sorted().map { $0.isEmpty ? "*" : $0 }
        try Files.writeAtomically(Path.join(instance, InstancePaths.local + "/pins"), lines.isEmpty ? "" : lines.joined(separator: "\n") + "\n")
    }

    /// Reads the history of `instance`; `remoteTip`: the sync remote's
    /// branch as last fetched (what is not under it is unpushed).
    /// `history: false` reads only what HEAD names (`current`; no
    /// references): what `storage get` of the current files needs.
    public static func scan(_ instance: String, repo: GitRepository, remoteTip: ObjectID?, now: Double,
                            history: Bool = true) throws -> InstanceContent {
        let store = ContentStore(gitDirectory: repo.gitDirectory)
        var held: [String: Int64] = [:]
        for o in store.objects() { held[o.oid] = o.diskBytes }
        guard let head = try repo.head() else {
            return InstanceContent(path: instance, references: [], current: [:], held: held, gitBytes: gitBytes(repo.gitDirectory))
        }
        let current = try repo.pointers(inTree: head.tree)
        guard history else {
            return InstanceContent(path: instance, references: [], current: current, held: held, gitBytes: gitBytes(repo.gitDirectory))
        }
        let unpushed = Set(try repo.pointersAdded(from: head.id, hiding: remoteTip).map(\.oid))
        let pins = pins(instance)
        // Each version of a path and when it came, newest first (the walk is topological).
        struct Version { var pointer: LFSPointer; var path: String; var added: Double }
        var versions: [Version] = []
        var replacedAt: [String: Double] = [:]  // "path\0oid" → when a later commit changed it
        try repo.walk(from: head.id) { c in
            let parentTree = try c.parents.first.map { try repo.commit($0).tree }
            let time = Double(c.committer.time)
            for file in try repo.changedFiles(from: parentTree, to: c.tree, descending: Self.mayHoldPointers) where !Self.neverAPointer(file.path) {
                if let new = file.new, !new.isTree, let p = repo.pointer(inBlob: new.id) {
                    versions.append(Version(pointer: p, path: file.path, added: time))
                }
                if let old = file.old, !old.isTree, let p = repo.pointer(inBlob: old.id) {
                    let key = file.path + "\0" + p.oid
                    replacedAt[key] = max(replacedAt[key] ?? 0, time)
                }
            }
            return true
        }
        // Runs of a node, numbered from 1 (its oldest) by history's order, not
        // by commit times: a rerun within the same second has the same time.
        var runs = [Int](repeating: 0, count: versions.count)
        var byNode: [String: [Int]] = [:]
        for (i, v) in versions.enumerated() { byNode[node(of: v.path) ?? "", default: []].append(i) }
        for indices in byNode.values {
            for (k, i) in indices.enumerated() { runs[i] = indices.count - k }
        }
        var references: [FreePlan.Reference] = []
        for (i, v) in versions.enumerated() {
            let isCurrent = current[v.path] == v.pointer
            let node = node(of: v.path)
            let key = v.path + "\0" + v.pointer.oid
            references.append(FreePlan.Reference(
                oid: v.pointer.oid, size: v.pointer.size, node: node,
                run: node == nil ? nil : runs[i], path: v.path, current: isCurrent,
                usedAt: isCurrent ? now : (replacedAt[key] ?? v.added),
                pinned: pins.contains("") || node.map(pins.contains) == true,
                unpushed: unpushed.contains(v.pointer.oid),
                // An answer in inbox/ not yet taken.
                inUse: isCurrent && v.path.hasPrefix(InstancePaths.inbox + "/")))
        }
        return InstanceContent(path: instance, references: references, current: current, held: held, gitBytes: gitBytes(repo.gitDirectory))
    }

    /// flowdir's own record files, which it never commits as pointers: a
    /// rerun's commits change mostly these, and reading each blob to see
    /// was half of a scan.
    static func neverAPointer(_ path: String) -> Bool {
        let name = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(path[path.utf8.index(after: $0)...]) } ?? path
        switch name {
        case "state.yaml", "params.yaml", "run.yaml", "log.txt", "instance.yaml", "workflow.yaml", ".gitattributes": return true
        default: return false
        }
    }

    /// A node's `runs/` holds its run records and logs only (an entry a
    /// run: the scan's largest trees), never a file kept beside git.
    static func mayHoldPointers(_ directory: String) -> Bool {
        !(directory.hasSuffix("/runs") && directory.hasPrefix(InstancePaths.nodes + "/")
          && directory.utf8.lazy.filter { $0 == UInt8(ascii: "/") }.count == 2)
    }

    public static func node(of path: String) -> String? {
        let parts = path.split(separator: "/", maxSplits: 2)
        return parts.count >= 3 && parts[0] == "nodes" ? String(parts[1]) : nil
    }

    /// Bytes on disk under `git` but for `lfs/`.
    static func gitBytes(_ git: String) -> Int64 {
        var total: Int64 = 0
        func walk(_ dir: String) {
            for (name, st) in (try? LocalFileSystem().listDirectoryWithStatus(dir)) ?? [] {
                if st.st_mode & S_IFMT == S_IFDIR {
                    if dir == git && name == "lfs" { continue }
                    walk(dir + "/" + name)
                } else {
                    total += Int64(st.st_blocks) * 512
                }
            }
        }
        walk(git)
        return total
    }
}
