#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO

/// make's question, "is anything out of date?", answered from stat data:
/// after a run that ended with nothing more to do, flowdir notes HEAD and the stat of
/// every file that could change that (params, the workflow, tools, the
/// inbox, requests). If none has moved, the next run knows the outcome
/// without reading and validating the whole instance.
enum NoopCache {
    static func file(_ path: String) -> String { path + "/" + InstancePaths.local + "/up-to-date" }

    /// The fingerprint of everything that could give a run something to do.
    static func fingerprint(_ store: InstanceStore, toolDirectories: [String]) -> String {
        var out = "flowdir \(EngineVersion.current)\nhead \(store.head?.id.hex ?? "none")\n"
        func stamp(_ path: String) {
            var st = stat()
            if lstat(path, &st) == 0 {
                out += "\(path) \(st.st_mtim.tv_sec).\(st.st_mtim.tv_nsec) \(st.st_size) \(st.st_ino)\n"
            } else {
                out += "\(path) -\n"
            }
        }
        let fs = LocalFileSystem()
        let root = store.path
        stamp(root + "/" + InstancePaths.instanceFile)
        stamp(root + "/" + InstancePaths.workflowFile)
        for id in (try? fs.listDirectory(root + "/" + InstancePaths.nodes)) ?? [] {
            stamp(root + "/" + InstancePaths.params(id))
            stamp(root + "/" + InstancePaths.state(id))
            // An output removed by hand is put back when the instance is opened.
            stamp(root + "/" + InstancePaths.outputs(id))
        }
        for dir in toolDirectories + [root + "/" + InstancePaths.inbox, root + "/" + InstancePaths.local + "/requests"] {
            stamp(dir)
            for name in (try? fs.listDirectory(dir)) ?? [] { stamp(dir + "/" + name) }
        }
        return out
    }

    /// What the last run that found nothing to do noted, if one did.
    static func noted(_ store: InstanceStore) -> String? {
        store.read(InstancePaths.local + "/up-to-date").map { String(decoding: $0, as: UTF8.self) }
    }

    /// The outcome `noted` for `fingerprint`, if it still holds at `now`.
    static func lookup(_ text: String, fingerprint: String, now: Timestamp) -> RunOutcome? {
        let marker = "--\n"
        guard text.hasPrefix(fingerprint + marker) else { return nil }
        var lines = text.dropFirst(fingerprint.count + marker.count).split(separator: "\n")[...]
        // Time alone gives work from then on (a done question to remove after 7 days).
        guard let first = lines.popFirst(), first.hasPrefix("until ") else { return nil }
        if let until = Double(first.dropFirst("until ".count)), now.seconds >= until { return nil }
        var states: [String: NodeState] = [:]
        var order: [String] = []
        for line in lines {
            let f = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            guard f.count == 3 else { return nil }
            order.append(f[0])
            states[f[0]] = state(named: f[1], reason: f[2])
        }
        return RunOutcome(states: states, order: order)
    }

    /// `until`: when time alone gives work, if it ever does.
    static func save(_ store: InstanceStore, fingerprint: String, outcome: RunOutcome, until: Timestamp?) {
        var text = fingerprint + "--\n" + "until \(until.map { "\($0.seconds)" } ?? "-")\n"
        for id in outcome.order {
            let s = outcome.states[id]
            // One line per node, tab-separated: a reason's own tabs and breaks become spaces.
            let reason = String((s?.reason ?? "").map { $0 == "\t" || $0.isNewline ? " " : $0 })
            text += "\(id)\t\(s?.name ?? "?")\t\(reason)\n"
        }
        _ = try? Files.writeAtomically(file(store.path), text)
    }

    static func forget(_ path: String) { try? Files.remove(file(path)) }

    static func state(named name: String, reason: String) -> NodeState {
        switch name {
        case "blocked": .blocked(BlockReason(text: reason))
        case "ready": .ready
        case "awaitingUser": .awaitingUser
        case "succeeded": .succeeded
        case "failed": .failed(NodeError(summary: reason, code: "unknown"))
        case "cancelled": .cancelled(reason: reason.isEmpty ? nil : reason)
        case "skipped": .skipped
        default: .blocked(.other(reason))
        }
    }
}

/// Part of the cache key: a new flowdir may judge the same files differently.
enum EngineVersion {
    static let current = "1"
}

