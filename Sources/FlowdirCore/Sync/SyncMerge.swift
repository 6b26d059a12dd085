/// The merge of two machines' histories of one instance (docs/commands.md,
/// "Sync between machines"), as
/// files: given the common ancestor's, ours and theirs (each a path → blob
/// id map), what must change in ours. Pure: bytes come through `read`.
///
/// Per-node files keep most of it trivial: a path changed on one side only
/// takes that side. Where both changed one node:
/// - its state goes to the side with the higher run, then the later state
///   (`stateOrder`), and its `out/` goes with it;
/// - a run number given on both machines to different runs keeps both: the
///   incoming one is renumbered after every run either side has;
/// - params changed on both keep ours, theirs beside as
///   `params.conflict.yaml`, and the node is blocked, "Params conflict";
/// - an await answered on both keeps the answer pushed first (theirs: it is
///   in the remote already); ours is kept as `inbox/<node>.<file>.conflict`
///   with `inbox/<node>.error.txt` saying why.
/// Any other file changed on both keeps ours and theirs beside it as
/// `<path>.conflict`; a file deleted on one side and changed on the other is
/// kept. Nothing either side made is lost, and no file gets conflict markers.
public enum SyncMerge {
    public enum Action: Equatable, Sendable {
        /// The file as it is in some commit (by blob id).
        case blob(String)
        case bytes([UInt8])
        case delete
    }

    public struct Outcome: Equatable, Sendable {
        /// Changes to ours, by path.
        public var changes: [String: Action] = [:]
        /// What was resolved, in words, for the merge commit and the report.
        public var notes: [String] = []
        /// Nodes whose params conflict: to be blocked, "Params conflict".
        public var paramsConflicts: [String] = []
        public init() {}
    }

    /// The order of states a merge goes by: later wins a tie in run number.
    public static let stateOrder = ["blocked", "ready", "awaitingUser", "runningLocal", "queuedRemote", "runningRemote",
                                    "downloading", "succeeded", "failed", "cancelled", "skipped"]

    public static func merge(base: [String: String], ours: [String: String], theirs: [String: String],
                             read: (String) -> [UInt8]?) -> Outcome {
        var out = Outcome()
        var theirs = theirs
        // Paths both sides changed, differently.
        var conflicted: [String] = []
        for path in Set(ours.keys).union(theirs.keys).sorted() {
            let o = ours[path], t = theirs[path], b = base[path]
            if o == t || t == b { continue }
            if o == b { out.changes[path] = t.map(Action.blob) ?? .delete; continue }
            conflicted.append(path)
        }
        guard !conflicted.isEmpty else { return out }

        // By node: nodes/<id>/…
        var byNode: [String: [String]] = [:]
        var others: [String] = []
        for path in conflicted {
            if let node = nodeOf(path) { byNode[node, default: []].append(path) } else { others.append(path) }
        }
        for (node, _) in byNode.sorted(by: { $0.key < $1.key }) {
            mergeNode(node, base: base, ours: ours, theirs: &theirs, read: read, into: &out)
        }
        for path in others {
            if path == "instance.yaml", let b = base[path].flatMap(read), let o = ours[path].flatMap(read), let t = theirs[path].flatMap(read) {
                out.changes[path] = .bytes(mergeInstanceFile(base: b, ours: o, theirs: t, notes: &out.notes))
                continue
            }
            if path == LFSAttributes.path, let o = ours[path].flatMap(read), let t = theirs[path].flatMap(read) {
                out.changes[path] = .bytes(mergeLines(base: base[path].flatMap(read) ?? [], ours: o, theirs: t))
                continue
            }
            keepBoth(path, ours: ours, theirs: theirs, into: &out)
        }
        return out
    }

    /// `.gitattributes` line by line: each side's added lines kept, each
    /// side's removed lines gone (a large file marked on either machine
    /// stays marked; one line a path: docs/storage.md).
    static func mergeLines(base: [UInt8], ours: [UInt8], theirs: [UInt8]) -> [UInt8] {
        func lines(_ b: [UInt8]) -> [Substring] { String(decoding: b, as: UTF8.self).split(separator: "\n") }
        let b = Set(lines(base)), o = lines(ours), t = lines(theirs)
        let oSet = Set(o), tSet = Set(t)
        var out = o.filter { !(b.contains($0) && !tSet.contains($0)) }
        var seen = Set(out)
        for line in t where !oSet.contains(line) && !b.contains(line) && seen.insert(line).inserted { out.append(line) }
        return Array((out.joined(separator: "\n") + (out.isEmpty ? "" : "\n")).utf8)
    }

    /// `instance.yaml` key by key: a key changed on one side takes that
    /// side. The lease changed on both goes to theirs: it reached the shared
    /// repository first, and a lease is taken by pushing it (the push that
    /// loses the race merges, and finds the other machine holds it).
    static func mergeInstanceFile(base: [UInt8], ours: [UInt8], theirs: [UInt8], notes: inout [String]) -> [UInt8] {
        let b = blocks(base), o = blocks(ours), t = blocks(theirs)
        var keys = o.map(\.key)
        for (k, _) in t where !keys.contains(k) { keys.append(k) }
        var lines: [String] = ours.starts(with: Array("#".utf8))
            ? [String(decoding: ours, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).first.map(String.init) ?? ""] : []
        func value(_ list: [(key: String, text: String)], _ key: String) -> String? { list.first { $0.key == key }?.text }
        for key in keys {
            let ov = value(o, key), tv = value(t, key), bv = value(b, key)
            let chosen: String?
            if ov == tv || tv == bv { chosen = ov } else if ov == bv { chosen = tv } else if key == "lease" {
                chosen = tv
                notes.append("lease: the other machine's, pushed first, kept")
            } else {
                chosen = ov
                notes.append("instance.yaml: '\(key)' changed on both machines; ours kept")
            }
            if let chosen { lines.append(chosen) }
        }
        return Array((lines.joined(separator: "\n") + "\n").utf8)
    }

    /// Top-level keys with their indented lines, in order (comments dropped but the first).
    static func blocks(_ bytes: [UInt8]) -> [(key: String, text: String)] {
        var out: [(key: String, text: String)] = []
        for line in String(decoding: bytes, as: UTF8.self).split(separator: "\n") {
            if line.hasPrefix("#") { continue }
            if line.hasPrefix(" ") || line.hasPrefix("-"), !out.isEmpty {
                out[out.count - 1].text += "\n" + line
            } else if let colon = line.firstIndex(of: ":") {
                out.append((String(line[..<colon]), String(line)))
            }
        }
        return out
    }

    // MARK: One node both sides changed

    static func mergeNode(_ node: String, base: [String: String], ours: [String: String], theirs: inout [String: String],
                          read: (String) -> [UInt8]?, into out: inout Outcome) {
        let prefix = "nodes/\(node)/"
        let statePath = prefix + "state.yaml"
        let oursState = ours[statePath].flatMap(read).map(StateLine.init)
        var theirsState = theirs[statePath].flatMap(read).map(StateLine.init)

        // Runs numbered alike on both sides but different: an answer on both, or two runs.
        let runsOurs = runNumbers(ours, prefix), runsTheirs = runNumbers(theirs, prefix)
        var renumber: [Int: Int] = [:]
        var next = (runsOurs.union(runsTheirs).union(runNumbers(base, prefix)).max() ?? 0) + 1
        for n in runsOurs.intersection(runsTheirs).sorted() {
            let record = prefix + "runs/\(n)/run.yaml"
            guard ours[record] != theirs[record], ours[record] != base[record], theirs[record] != base[record] else { continue }
            let oursAnswer = ours[record].flatMap(read).map { line("trigger", in: $0) == "answer" } ?? false
            let theirsAnswer = theirs[record].flatMap(read).map { line("trigger", in: $0) == "answer" } ?? false
            if oursAnswer, theirsAnswer, oursState?.run == n, theirsState?.run == n {
                return answeredOnBoth(node, run: n, base: base, ours: ours, theirs: theirs, read: read, into: &out)
            }
            renumber[n] = next
            next += 1
        }
        if !renumber.isEmpty {
            // Theirs' runs move to their new numbers; their run.yaml and state say so.
            for (path, blob) in theirs where path.hasPrefix(prefix + "runs/") {
                guard let n = runNumber(path, prefix), let m = renumber[n] else { continue }
                let moved = prefix + "runs/\(m)/" + path.dropFirst((prefix + "runs/\(n)/").count)
                theirs[path] = nil
                // Taken above as a file only theirs had: it is run m's.
                if ours[path] == nil { out.changes[path] = nil }
                if path.hasSuffix("/run.yaml"), let bytes = read(blob) {
                    out.changes[moved] = .bytes(replacingLine("run", with: String(m), in: bytes))
                } else {
                    out.changes[moved] = .blob(blob)
                }
                theirs[moved] = blob
            }
            if let s = theirsState, let m = renumber[s.run], let bytes = theirs[statePath].flatMap(read) {
                theirsState = StateLine(run: m, state: s.state)
                out.changes[statePath] = .bytes(replacingLine("run", with: String(m), in: bytes))  // if theirs wins
            }
            for (n, m) in renumber.sorted(by: { $0.key < $1.key }) {
                out.notes.append("\(node): run \(n) from the other machine kept as run \(m) (both machines ran a run \(n))")
            }
        }

        // State, and the outputs that go with it.
        let theirsWins: Bool
        switch (oursState, theirsState) {
        case let (o?, t?): theirsWins = (t.run, order(t.state)) > (o.run, order(o.state))
        case (nil, _?): theirsWins = true
        default: theirsWins = false
        }
        if theirsWins {
            if out.changes[statePath] == nil { out.changes[statePath] = theirs[statePath].map(Action.blob) ?? .delete }
            for path in Set(ours.keys).union(theirs.keys) where path.hasPrefix(prefix + "out/") && ours[path] != theirs[path] {
                out.changes[path] = theirs[path].map(Action.blob) ?? .delete
            }
            if oursState != nil { out.notes.append("\(node): the other machine's state taken (\(theirsState.map { "run \($0.run), \($0.state)" } ?? "?"))") }
        } else if out.changes[statePath] != nil {
            out.changes[statePath] = nil  // the renumbered state is not taken: ours wins
        }

        // Everything else of the node both changed.
        for path in Set(ours.keys).union(theirs.keys).sorted() where path.hasPrefix(prefix) {
            if path == statePath || path.hasPrefix(prefix + "out/") { continue }
            if out.changes[path] != nil { continue }
            let o = ours[path], t = theirs[path], b = base[path]
            if o == t || t == b { continue }
            if o == b { out.changes[path] = t.map(Action.blob) ?? .delete; continue }
            if path == prefix + "params.yaml", let t {
                if o == nil { out.changes[path] = .blob(t); continue }
                out.changes[prefix + "params.conflict.yaml"] = .blob(t)
                out.paramsConflicts.append(node)
                out.notes.append("\(node): params edited on both machines; ours kept, theirs in nodes/\(node)/params.conflict.yaml")
                continue
            }
            keepBoth(path, ours: ours, theirs: theirs, into: &out)
        }
    }

    /// Both machines took an answer for the same question: the one pushed
    /// first stays; ours is kept beside the question, with why.
    static func answeredOnBoth(_ node: String, run: Int, base: [String: String], ours: [String: String], theirs: [String: String],
                               read: (String) -> [UInt8]?, into out: inout Outcome) {
        let prefix = "nodes/\(node)/"
        var kept: [String] = []
        for path in Set(ours.keys).union(theirs.keys).sorted() where path.hasPrefix(prefix) && ours[path] != theirs[path] {
            out.changes[path] = theirs[path].map(Action.blob) ?? .delete
            if path.hasPrefix(prefix + "out/"), let blob = ours[path] {
                let name = "inbox/\(node).\(path.dropFirst((prefix + "out/").count)).conflict"
                out.changes[name] = .blob(blob)
                kept.append(name)
            }
        }
        let why = """
            The question for '\(node)' was answered on two machines before they synced.
            The answer that reached the shared repository first was taken; this machine's is kept as \(kept.map { String($0.dropFirst("inbox/".count)) }.joined(separator: ", ")).
            What to do: nothing if the taken answer is right; else `flowdir rerun` the node after putting the other answer in place.

            """
        out.changes["inbox/\(node).error.txt"] = .bytes(Array(why.utf8))
        out.notes.append("\(node): answered on both machines; the answer pushed first taken, ours kept as \(kept.joined(separator: ", "))")
    }

    /// A file both changed: ours stays, theirs beside it; one deleted: the other kept.
    static func keepBoth(_ path: String, ours: [String: String], theirs: [String: String], into out: inout Outcome) {
        guard let t = theirs[path] else { return }  // deleted there, changed here: ours stays
        guard ours[path] != nil else {  // deleted here, changed there: theirs comes back
            out.changes[path] = .blob(t)
            return
        }
        out.changes[path + ".conflict"] = .blob(t)
        out.notes.append("\(path): changed on both machines; ours kept, theirs in \(path).conflict")
    }

    // MARK: Reading flowdir's own files

    struct StateLine: Equatable {
        var run: Int
        var state: String
        init(run: Int, state: String) { self.run = run; self.state = state }
        init(_ bytes: [UInt8]) {
            run = Int(SyncMerge.line("run", in: bytes) ?? "") ?? 0
            state = SyncMerge.line("state", in: bytes) ?? "blocked"
        }
    }

    static func order(_ state: String) -> Int { stateOrder.firstIndex(of: state) ?? -1 }

    static func nodeOf(_ path: String) -> String? {
        guard path.hasPrefix("nodes/") else { return nil }
        let rest = path.dropFirst(6)
        guard let slash = rest.firstIndex(of: "/") else { return nil }
        return String(rest[..<slash])
    }

    static func runNumber(_ path: String, _ prefix: String) -> Int? {
        guard path.hasPrefix(prefix + "runs/") else { return nil }
        return Int(path.dropFirst((prefix + "runs/").count).prefix { $0 != "/" })
    }

    static func runNumbers(_ files: [String: String], _ prefix: String) -> Set<Int> {
        Set(files.keys.compactMap { runNumber($0, prefix) })
    }

    /// The value of a top-level `key:` line, as flowdir writes its files (unquoted).
    static func line(_ key: String, in bytes: [UInt8]) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
            return line.dropFirst(key.count + 1).trimmingCharacters(in: " \"")
        }
        return nil
    }

    static func replacingLine(_ key: String, with value: String, in bytes: [UInt8]) -> [UInt8] {
        let text = String(decoding: bytes, as: UTF8.self)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if let i = lines.firstIndex(where: { $0.hasPrefix(key + ":") }) { lines[i] = "\(key): \(value)" }
        return Array(lines.joined(separator: "\n").utf8)
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var s = self
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
