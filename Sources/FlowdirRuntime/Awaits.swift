import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// Awaits through `inbox/` (docs/instance-folder.md): questions written when a node
/// waits for a person, answers taken from files dropped in, from the await
/// file itself, or from `flowdir answer`; refusals kept and explained;
/// expiry. Each answer, expiry or refusal is one commit.
extension Engine {
    /// The question for a node that just turned `awaitingUser`.
    func openAwait(_ rt: InstanceRuntime, _ id: String, now: Timestamp) -> InstanceStore.Change? {
        guard let node = rt.graph.node(id), let spec = node.awaitSpec else { return nil }
        let context = Gating.bindings(node, graph: rt.graph, facts: rt.facts).map { ContextFile(name: $0.port, path: $0.output.file) }
        let a = AwaitPolicy.make(id: RandomID.uuid(), node: node, spec: spec, instanceID: rt.open.snapshot.record.id, now: now,
                                 context: context, params: rt.facts[id]?.params ?? [])
        rt.awaits[id] = a
        rt.notices.append(FlowEvent(kind: .await, instance: rt.path, instanceTitle: rt.title, node: id,
                                    awaitFile: Path.join(rt.path, InstancePaths.awaitFile(id)), link: a.link,
                                    title: a.title, body: a.detail))
        return .write(InstancePaths.awaitFile(id), AwaitCodec.encode(a, instanceName: rt.name))
    }

    /// Handles the first thing the inbox holds for any instance: an expiry,
    /// an answer, or a refusal. Returns whether there was one (it is in the
    /// batch, for the caller to commit with its consequences).
    func takeInboxEvent() throws -> Bool {
        for rt in instances.values.sorted(by: { $0.path < $1.path }) {
            if try takeInboxEvent(rt) { return true }
            rt.inboxLook.first = false
        }
        return false
    }

    func takeInboxEvent(_ rt: InstanceRuntime) throws -> Bool {
        guard !rt.heldForGit else { return false }  // the file may be git's, not yet committed
        let now = clock.now()
        let waiting = rt.awaits.keys.filter { rt.state($0) == .awaitingUser }.sorted()
        // Timers: an expired await goes per its onTimeout.
        for id in waiting where AwaitPolicy.isExpired(rt.awaits[id]!, now: now) {
            try expire(rt, rt.awaits[id]!, now: now)
            return true
        }
        // Nothing asked and the folder unchanged since a look that found
        // nothing to wait for: no need to look again (the engine steps often).
        let folder = InboxFiles.folderStamp(rt.path)
        if waiting.isEmpty, let folder, folder == rt.inboxLook.quietStamp { return false }
        let entries = InboxFiles.scan(rt.path)
        // A file counts once complete: closed after writing or moved in (the
        // watcher saw it), or quiet for a moment (it could not: a hard link,
        // a lost event), or at the first look after opening.
        func isSettled(_ e: InboxFiles.Entry) -> Bool { rt.inboxLook.isSettled(e.name, quietFor: e.quietFor) }
        let kinds = entries.map { InboxName.classify($0.name) }
        let unsettled = zip(entries, kinds).filter { !isSettled($0.0) && $0.1.isDropped }.map(\.0.quietFor)
        rt.inboxLook.recheck(unsettledQuietFor: unsettled, now: clock.instant)
        var byName: [String: InboxFiles.Entry] = [:]
        for e in entries { byName[e.name] = e }
        // A question whose file is gone is written again: it is still open.
        for id in waiting where byName["\(id).await.yaml"] == nil {
            rt.batch.add(.write(InstancePaths.awaitFile(id), AwaitCodec.encode(rt.awaits[id]!, instanceName: rt.name)))
            if rt.batch.event == nil { rt.batch.event = "await" }
            rt.batch.summaries.append("Restore the question of \(id)")
            return true
        }
        // Answers written into await files (choice, approve).
        for id in waiting {
            guard let e = byName["\(id).await.yaml"], rt.inboxLook.awaitStamps[id] != e.stamp else { continue }
            rt.inboxLook.awaitStamps[id] = e.stamp
            // Replaced by a link (or a folder): never read through; set aside, the question written back.
            if e.facts.kind != .regular {
                try refuseAwaitEdit(rt, rt.awaits[id]!, reason: e.facts.kind == .symlink
                    ? FileSystemError.symbolicLink(Path.join(rt.path, InstancePaths.awaitFile(id))).description
                    : "inbox/\(id).await.yaml is not a regular file", now: now)
                return true
            }
            if try takeAwaitFileEdit(rt, rt.awaits[id]!, now: now) { return true }
        }
        // Answer files.
        var valid: [String: [(ExpectedFile, InboxFiles.Entry, ContentFormat)]] = [:]
        // Whether a file is here for later (or still being written): the folder needs another look.
        var pending = false
        for (e, kind) in zip(entries, kinds) {
            pending = pending || kind.isDropped
            switch InboxRouting.route(kind, settled: isSettled(e), graph: rt.graph, awaits: rt.awaits, state: rt.state,
                                      answered: rt.answered, instanceName: rt.name) {
            case .pass, .keep:
                continue
            case .refuse(let note, let reason, let hint):
                let text = switch hint {
                case .expectedNames(let node): expectedNames(rt, only: node)
                case .text(let t): t
                }
                try refuse(rt, e.name, note: note, reason: reason, hint: text, now: now)
                return true
            case .answer(let nodeID, let expected), .replace(let nodeID, let expected):
                switch check(rt, e, as: expected.type) {
                case .failure(let f):
                    try refuse(rt, e.name, note: nodeID, reason: f.reason,
                               hint: "save \(AwaitPolicy.article(expected.type)) as inbox/\(expected.file)", now: now)
                    return true
                case .success(let format):
                    valid[nodeID, default: []].append((expected, e, format))
                }
            }
        }
        // Nothing here needs another look until the folder changes.
        if waiting.isEmpty, !pending { rt.inboxLook.quietStamp = folder }
        for id in valid.keys.sorted() {
            guard let files = valid[id] else { continue }
            // One file per expected port (the first in name order if a port has two).
            var chosen: [String: (ExpectedFile, InboxFiles.Entry, ContentFormat)] = [:]
            for f in files where chosen[f.0.port] == nil { chosen[f.0.port] = f }
            if let a = rt.awaits[id], rt.state(id) == .awaitingUser {
                guard chosen.count == a.expects.count else { continue }
                try acceptFiles(rt, a, a.expects.map { chosen[$0.port]! }, by: personName(rt), now: now)
                return true
            }
            // In place of a failed step's outputs: once every port has its file.
            guard let node = rt.graph.node(id), rt.state(id).isFailedOrCancelled else { continue }
            let expects = AwaitPolicy.expectedFiles(node)
            guard expects.allSatisfy({ chosen[$0.port] != nil }) else { continue }
            try replaceOutputs(rt, id, expects.map { chosen[$0.port]! }, by: personName(rt), now: now)
            return true
        }
        return false
    }

    /// "Replace input…": a person's files become the outputs of a step that
    /// failed or was cancelled, as a run of theirs (trigger `answer`, no
    /// question), so the steps it blocked go on with them.
    func replaceOutputs(_ rt: InstanceRuntime, _ id: String, _ files: [(ExpectedFile, InboxFiles.Entry, ContentFormat)],
                        by: String, now: Timestamp) throws {
        guard let node = rt.graph.node(id) else { return }
        let (outputs, changes) = try place(rt, id, files)
        rt.batch.add(contentsOf: changes)
        let taken = files.map { "inbox/" + $0.1.name }
        try succeedByPerson(rt, node, outputs: outputs, note: AnswerNote(awaitID: "", files: taken, value: .string("replaced")),
                            by: by, startedAt: now, now: now)
        rt.batch.event = rt.batch.event ?? "answer"
        rt.batch.summaries.append("Replace the outputs of \(id) (\(taken.joined(separator: ", "))) by \(by)")
        rt.batch.author = rt.store.personSignature()
    }

    /// The content check of an answer file, kept while the file is unchanged.
    func check(_ rt: InstanceRuntime, _ e: InboxFiles.Entry, as type: PortType) -> Result<ContentFormat, ContentCheck.Failure> {
        if let c = rt.inboxLook.checks[e.name], c.stamp == e.stamp { return c.result }
        let path = Path.join(rt.path, InstancePaths.inbox + "/" + e.name)
        let result = AnswerCheck.check(e.facts, content: { try FileByteSource(path: path) }, as: type,
                                       sizeLimit: options.answerSizeLimit)
        rt.inboxLook.checks[e.name] = (e.stamp, result)
        return result
    }

    /// What the inbox expects now, for a refusal's hint.
    func expectedNames(_ rt: InstanceRuntime, only: String? = nil) -> String {
        let names = rt.awaits.values.sorted { $0.node < $1.node }.filter { only == nil || $0.node == only }.flatMap { a in
            a.expects.isEmpty ? ["an answer in inbox/\(a.node).await.yaml"] : a.expects.map { "inbox/\($0.file)" }
        }
        return names.isEmpty ? "no question is open in this instance" : "expected: " + names.joined(separator: ", ")
    }

    /// Who answers through files: the git identity of the instance, else user@host.
    func personName(_ rt: InstanceRuntime) -> String {
        rt.store.personSignature().identity
    }

    // MARK: Await file edits

    /// A person wrote `choice:`/`answer:` or `approve:` into the await file.
    func takeAwaitFileEdit(_ rt: InstanceRuntime, _ a: AwaitRecord, now: Timestamp) throws -> Bool {
        let file = InstancePaths.awaitFile(a.node)
        guard let bytes = rt.store.read(file) else { return false }
        let edited: AwaitRecord
        switch AwaitCodec.decode(bytes, file: file) {
        case .failure(let d):
            try refuseAwaitEdit(rt, a, reason: DiagnosticRenderer(sources: [file: String(decoding: bytes, as: UTF8.self)]).render(d).trimmed(), now: now)
            return true
        case .success(let r):
            edited = r
        }
        let by = personName(rt)
        if a.type == .choice, let v = edited.answer {
            switch AnswerCheck.choice(v, of: a) {
            case .success(let c): try acceptValue(rt, a, choice: c, params: nil, by: by, outcome: .answered, now: now)
            case .failure(let f): try refuseAwaitEdit(rt, a, reason: f.reason, now: now)
            }
            return true
        }
        if a.type == .confirmParams, let approve = edited.approve {
            guard approve else {
                try decline(rt, a, by: by, now: now)
                return true
            }
            switch AnswerCheck.params(changedParams(edited.params, from: a.params), offered: a.params, schema: schema(rt, a.node)) {
            case .success(let p): try acceptValue(rt, a, choice: nil, params: p, by: by, outcome: .answered, now: now)
            case .failure(let f): try refuseAwaitEdit(rt, a, reason: f.reason, now: now)
            }
            return true
        }
        if edited.answer != nil || edited.approve != nil {
            let how = a.expects.isEmpty ? "" : "; save " + a.expects.map { "inbox/\($0.file)" }.joined(separator: " and ") + " instead"
            try refuseAwaitEdit(rt, a, reason: "a \(a.type.rawValue) await is not answered in its file\(how)", now: now)
            return true
        }
        return false
    }

    /// Only the params a person changed (the rest were offered as they are).
    func changedParams(_ edited: [ParamEntry], from offered: [ParamEntry]) -> [ParamEntry] {
        edited.filter { e in offered[key: e.key].map { !Gating.sameParams([$0], [e]) } ?? true }
    }

    func schema(_ rt: InstanceRuntime, _ node: String) -> [ParamSchema] {
        guard let tool = rt.graph.node(node)?.tool, !tool.acceptsAnyParams else { return [] }
        return tool.params
    }

    /// The person's version is set aside as `<node>.await.yaml.rejected`;
    /// the question is written back as it was, with a note saying why.
    func refuseAwaitEdit(_ rt: InstanceRuntime, _ a: AwaitRecord, reason: String, now: Timestamp) throws {
        var a = a
        a.answer = nil  // never written back: it would be refused again, forever
        a.approve = nil
        let name = "\(a.node).await.yaml"
        let aside = try InboxFiles.setAside(rt.path, name)
        rt.inboxLook.refusals[name] = reason
        rt.batch.add(.write(InstancePaths.awaitFile(a.node), AwaitCodec.encode(a, instanceName: rt.name)))
        rt.batch.add(.write(InstancePaths.inbox + "/\(a.node).error.txt", errorText(
            what: "your answer in inbox/\(name)", reason: reason, kept: aside,
            hint: AwaitPolicy.instructions(a, instanceName: rt.name).dropFirst().first ?? "")))
        rt.batch.event = rt.batch.event ?? "reject"
        rt.batch.summaries.append("Refuse the answer in \(name): \(reason)")
        rt.batch.author = rt.store.personSignature()
    }

    /// Sets a refused file aside and says why in `inbox/<note>.error.txt`.
    func refuse(_ rt: InstanceRuntime, _ name: String, note: String, reason: String, hint: String, now: Timestamp) throws {
        let aside = try InboxFiles.setAside(rt.path, name)
        rt.inboxLook.refusals[name] = reason
        rt.inboxLook.forget(name)
        rt.batch.add(.delete(InstancePaths.inbox + "/" + name))  // if it came in a pull: kept as .rejected
        rt.batch.add(.write(InstancePaths.inbox + "/" + InboxFiles.fitting(note, suffix: ".error.txt", limit: InboxFiles.writtenNameLimit),
                                       errorText(what: "inbox/\(name)", reason: reason, kept: aside, hint: hint)))
        rt.batch.event = rt.batch.event ?? "reject"
        rt.batch.summaries.append("Refuse inbox/\(name): \(reason)")
    }

    /// `inbox/<node>.error.txt`. Names and hints on one line each, the
    /// reason on as many as it has; no control character reaches the file.
    func errorText(what: String, reason: String, kept: String, hint: String) -> String {
        """
        flowdir could not take \(PlainText.oneLine(what)): \(PlainText.lines(reason)).
        It is kept as inbox/\(PlainText.oneLine(kept)); the question stays open.
        \(hint.isEmpty ? "" : "What to do: \(PlainText.lines(hint))\n")
        """
    }

    // MARK: Accepting

    /// Files for every expected port: moved into `out/`, recorded, one commit.
    func acceptFiles(_ rt: InstanceRuntime, _ a: AwaitRecord, _ files: [(ExpectedFile, InboxFiles.Entry, ContentFormat)],
                     by: String, now: Timestamp) throws {
        let (outputs, changes) = try place(rt, a.node, files)
        let note = AnswerNote(awaitID: a.id, files: files.map { "inbox/" + $0.1.name })
        try complete(rt, a, outputs: outputs, changes: changes, note: note, by: by, outcome: .answered, remark: nil, now: now)
    }

    /// Answer files into `nodes/<id>/out/` (large ones through the content
    /// store); the dropped files go once the commit is made.
    func place(_ rt: InstanceRuntime, _ id: String, _ files: [(ExpectedFile, InboxFiles.Entry, ContentFormat)]) throws
        -> ([OutputRecord], [InstanceStore.Change]) {
        var changes: [InstanceStore.Change] = []
        var outputs: [OutputRecord] = []
        try Files.makeDirectories(Path.join(rt.path, InstancePaths.outputs(id)))
        for (expected, entry, format) in files {
            let from = Path.join(rt.path, InstancePaths.inbox + "/" + entry.name)
            let dropped = Path.fileExtension(entry.name)
            let ext = format == .binary ? (dropped.isEmpty ? ContentFormat.defaultExtension(for: expected.type) : dropped) : format.fileExtension
            let file = "out/\(expected.port).\(ext)"
            let full = InstancePaths.node(id) + "/" + file
            if let old = rt.facts[id]?.outputs[expected.port]?.file, old != full { changes.append(.delete(old)) }
            rt.inboxLook.forget(entry.name)
            if entry.facts.size >= options.bigFile {
                // Large: into the content store as it is hashed (never read whole), then
                // copied out of it into out/; its pointer is what is committed (docs/storage.md).
                let stored = try rt.store.contentStore.store(file: from)
                try rt.store.intend([full])
                let stamp = try rt.store.contentStore.copy(stored.pointer, to: Path.join(rt.path, full))
                changes.append(.placed(full, stored.pointer.bytes, stamp: stamp))
                rt.batch.removeAfterCommit.append(from)
                changes.append(.untrack(InstancePaths.inbox + "/" + entry.name))
                outputs.append(OutputRecord(port: expected.port, blob: stored.blob.hex, size: Int(stored.pointer.size), type: expected.type,
                                            file: file, sha256: stored.pointer.oid))
                continue
            }
            // Checked as not a link (lstat) when scanned; read without following one, should it have become one since.
            guard let bytes = try LocalFileSystem().readFile(inside: rt.path, InstancePaths.inbox + "/" + entry.name, limit: Int.max) else {
                throw FileSystemError.notFound(from)
            }
            // Copied into out/; the dropped file goes only once the commit is made,
            // so a crash before it loses nothing (the answer is taken again).
            try rt.store.intend([full])
            // In place now: a consumer may start in this step.
            let stamp = try Files.writeAtomically(Path.join(rt.path, full), bytes)
            let blob = GitRepository.blobID(of: bytes)
            changes.append(.placed(full, bytes, blob: blob, stamp: stamp))
            rt.batch.removeAfterCommit.append(from)
            // If it came in a pull it is in git too: it leaves the tree (asked even
            // when HEAD does not have it yet: the pull may still be moving it).
            changes.append(.untrack(InstancePaths.inbox + "/" + entry.name))
            outputs.append(OutputRecord(port: expected.port, blob: blob.hex, size: bytes.count, type: expected.type, file: file))
        }
        return (outputs, changes)
    }

    /// A choice or a confirmation: its value is the node's output (JSON),
    /// and confirmed params become the node's params.
    func acceptValue(_ rt: InstanceRuntime, _ a: AwaitRecord, choice: String?, params: [ParamEntry]?, by: String,
                     outcome: AwaitOutcome, remark: String? = nil, now: Timestamp) throws {
        let id = a.node
        guard let node = rt.graph.node(id) else { return }
        var changes: [InstanceStore.Change] = []
        var outputs: [OutputRecord] = []
        let value: ParamValue = choice.map(ParamValue.string) ?? .object(params ?? [])
        if let params, var f = rt.facts[id], !Gating.sameParams(params, f.params) {
            f.params = params
            rt.facts[id] = f
            changes.append(.write(InstancePaths.params(id), InstanceCodec.encodeParams(params, node: node.spec, tool: node.tool)))
        }
        if node.tool?.isBuiltin ?? true, let port = node.outputs.first {
            let bytes: [UInt8]
            let ext: String
            if port.type == .text {
                bytes = Array(((choice ?? JSONWriter.text(value)) + "\n").utf8)
                ext = "txt"
            } else {
                bytes = Array((JSONWriter.text(value) + "\n").utf8)
                ext = "json"
            }
            let file = "out/\(port.name).\(ext)"
            let full = InstancePaths.node(id) + "/" + file
            if let old = rt.facts[id]?.outputs[port.name]?.file, old != full { changes.append(.delete(old)) }
            // In place now, as a run's outputs are moved in: a node downstream
            // may be prepared before this group of commits is written.
            try Files.makeDirectories(Path.join(rt.path, InstancePaths.outputs(id)))
            try Files.writeAtomically(Path.join(rt.path, full), bytes)
            changes.append(.placed(full, bytes))
            outputs.append(OutputRecord(port: port.name, blob: GitRepository.blobID(of: bytes).hex, size: bytes.count,
                                        type: port.type, file: file))
        }
        let note = AnswerNote(awaitID: a.id, value: choice.map(ParamValue.string) ?? .string("approved"))
        try complete(rt, a, outputs: outputs, changes: changes, note: note, by: by, outcome: outcome, remark: remark, now: now)
    }

    /// Records the answer: a built-in interactive node succeeds with it as
    /// its output; a tool node with an await becomes ready and runs.
    func complete(_ rt: InstanceRuntime, _ a: AwaitRecord, outputs: [OutputRecord], changes: [InstanceStore.Change],
                  note: AnswerNote, by: String, outcome: AwaitOutcome, remark: String?, now: Timestamp) throws {
        let id = a.node
        guard let node = rt.graph.node(id) else { return }
        let what = note.files.isEmpty ? (note.value.map { YAMLWriter.inline($0) } ?? "") : note.files.joined(separator: ", ")
        rt.retire(id, outcome, by: by, note: remark ?? "answered with \(what)", answer: a.type == .choice ? note.value : nil, now: now)
        rt.batch.add(contentsOf: changes)
        // A tool that runs (a command, a job API, Slurm) is run now, through
        // its executor, with the params as approved: it succeeds only with
        // the outputs its run gives, never on the answer alone.
        let runsTool = (a.type == .choice || a.type == .confirmParams) && (node.tool.map { $0.run != .builtin } ?? false)
        if runsTool {
            let (t, c) = try rt.apply(.becomeReady, to: id, now: now)
            rt.answered.insert(id)
            rt.pending[id] = PendingRun(trigger: .answer, frozen: nil, answer: note, by: by)
            rt.batch.transitions.append(t)
            rt.batch.add(c)
        } else {
            try succeedByPerson(rt, node, outputs: outputs, note: note, by: by, startedAt: a.createdAt, now: now)
        }
        rt.batch.event = rt.batch.event ?? (outcome == .expired ? "expire" : "answer")
        rt.batch.summaries.append(outcome == .expired ? "\(id) expired: \(remark ?? "")" : "Answer \(id) (\(what)) by \(by)")
        if outcome == .answered { rt.batch.author = rt.store.personSignature() }
    }

    /// A run of a person's (trigger `answer`): its record with the inputs the
    /// node is bound to and the outputs given, and the node succeeded with them.
    func succeedByPerson(_ rt: InstanceRuntime, _ node: ResolvedNode, outputs: [OutputRecord], note: AnswerNote, by: String,
                         startedAt: Timestamp, now: Timestamp) throws {
        let id = node.id
        let run = rt.nextRunNumber(id)
        let inputs = Gating.bindings(node, graph: rt.graph, facts: rt.facts).map {
            InputUse(port: $0.port, node: $0.node, sourcePort: $0.sourcePort, run: $0.output.run, blob: $0.output.blob)
        }
        var record = RunRecord(run: run, node: id, kind: node.spec.kind, trigger: .answer, params: rt.facts[id]?.params ?? [],
                               inputs: inputs, outputs: outputs, startedAt: startedAt, finishedAt: now, host: Host.name, user: by)
        record.answer = note
        rt.batch.add(.write(InstancePaths.run(id, run) + "/run.yaml", RunRecordCodec.encodeBytes(record)))
        let (t, c) = try rt.apply(.succeed, to: id, run: run, now: now)
        rt.batch.transitions.append(t)
        rt.batch.add(c)
        var f = rt.facts[id]!
        f.lastRun = record
        f.outputs = Dictionary(uniqueKeysWithValues: outputs.map {
            ($0.port, OutputRef(blob: $0.blob, file: InstancePaths.node(id) + "/" + $0.file, run: run, sha256: $0.sha256))
        })
        rt.facts[id] = f
    }

    /// `approve: false`: the person said no; the node is cancelled.
    func decline(_ rt: InstanceRuntime, _ a: AwaitRecord, by: String, now: Timestamp) throws {
        rt.retire(a.node, .rejected, by: by, note: "declined", now: now)
        let (t, c) = try rt.apply(.cancel(reason: "Declined by \(by)"), to: a.node, now: now)
        rt.batch.transitions.append(t)
        rt.batch.add(c)
        rt.batch.event = rt.batch.event ?? "answer"
        rt.batch.summaries.append("\(by) declined \(a.node)")
        rt.batch.author = rt.store.personSignature()
    }

    // MARK: Expiry and skip

    func expire(_ rt: InstanceRuntime, _ a: AwaitRecord, now: Timestamp) throws {
        switch AwaitPolicy.timeoutAction(a) {
        case .fail(let err):
            rt.retire(a.node, .expired, by: "flowdir", note: "failed: " + err.summary, now: now)
            let (t, c) = try rt.apply(.fail(err), to: a.node, now: now)
            rt.batch.transitions.append(t)
            rt.batch.add(c)
            notifyFailed(rt, a.node, err)
        case .skip:
            rt.retire(a.node, .expired, by: "flowdir", note: "skipped (onTimeout: skip)", now: now)
            let (t, c) = try rt.apply(.skip, to: a.node, now: now)
            rt.batch.transitions.append(t)
            rt.batch.add(c)
        case .choose(let c):
            try acceptValue(rt, a, choice: c, params: nil, by: "flowdir (autoDefault)", outcome: .expired,
                            remark: "autoDefault: chose \(c)", now: now)
        case .approve(let p):
            try acceptValue(rt, a, choice: nil, params: p, by: "flowdir (autoDefault)", outcome: .expired,
                            remark: "autoDefault: approved the params as they were", now: now)
        }
        rt.batch.event = "expire"
        if rt.batch.summaries.isEmpty { rt.batch.summaries.append("\(a.node): no answer by \(a.expiresAt?.iso8601 ?? "?")") }
    }

    func notifyFailed(_ rt: InstanceRuntime, _ node: String, _ err: NodeError) {
        rt.notices.append(FlowEvent(kind: .failed, instance: rt.path, instanceTitle: rt.title, node: node,
                                    title: "\(node) failed", body: err.summary))
    }

    /// Answered and expired awaits older than 7 days leave `inbox/done/`
    /// (git history keeps them).
    func pruneDone(_ rt: InstanceRuntime) throws {
        let now = clock.now()
        let stale = rt.doneAwaitFiles().filter { AwaitPolicy.isStale($0.1, now: now) }
        guard !stale.isEmpty else { return }
        try commit(rt, stale.map { .delete($0.0) }, [], event: "prune",
                   summary: "Remove \(stale.count) await\(stale.count == 1 ? "" : "s") done over 7 days ago")
    }
}
