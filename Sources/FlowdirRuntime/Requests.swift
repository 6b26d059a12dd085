#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// Requests from people: retry, rerun, cancel, and picking up after a crash.
extension Engine {
    /// Retry: the same inputs (blob ids) and params as the last run. Refused
    /// before anything starts if a frozen blob is gone.
    func requestRetry(_ rt: InstanceRuntime, _ node: String) throws {
        guard let f = rt.facts[node] else { throw EngineError.unknownNode(node) }
        guard !f.state.state.isActive else { throw EngineError.notRetryable(node: node, state: f.state.state.name) }
        // Its last attempt failed before it started (an input gone, the tool
        // missing): that attempt froze nothing; the last run that started did.
        guard let last = f.lastRun ?? Self.lastStartedRun(rt, node, before: f.state.run) else {
            guard f.state.run > 0 else { throw EngineError.notRetryable(node: node, state: f.state.state.name) }
            // None ever started: what there is to retry is the start itself, with the current inputs.
            return try requestRerun(rt, node, downstream: false)
        }
        for input in last.inputs {
            guard let oid = ObjectID(hex: input.blob), rt.store.repository.contains(oid) else {
                throw EngineError.frozenInputGone(node: node, port: input.port, blob: input.blob)
            }
        }
        let (t, c) = try rt.apply(.becomeReady, to: node, now: clock.now())
        rt.pending[node] = PendingRun(trigger: .retry, frozen: last)
        try commit(rt, [c], [t], event: "retry", summary: "Retry \(node) with the inputs of run \(last.run)")
    }

    /// The newest run record of `node` below run `before` (runs/<n>/run.yaml), if one can be read.
    static func lastStartedRun(_ rt: InstanceRuntime, _ node: String, before: Int) -> RunRecord? {
        var n = before - 1
        while n >= 1 {
            let file = InstancePaths.run(node, n) + "/run.yaml"
            if let bytes = rt.store.read(file), case .success(let record) = RunRecordCodec.decode(bytes, file: file) { return record }
            n -= 1
        }
        return nil
    }

    /// Rerun: current inputs and params; with `downstream`, everything
    /// downstream runs again after it.
    func requestRerun(_ rt: InstanceRuntime, _ node: String, downstream: Bool) throws {
        guard let f = rt.facts[node] else { throw EngineError.unknownNode(node) }
        guard !f.state.state.isActive else { throw EngineError.unexpected("'\(node)' is running; cancel it first") }
        let now = clock.now()
        var transitions: [Transition] = []
        var changes: [InstanceStore.Change] = []
        if rt.state(node) != .ready {
            let (t, c) = try rt.apply(.becomeReady, to: node, now: now)
            transitions.append(t)
            changes.append(c)
        }
        rt.pending[node] = PendingRun(trigger: .rerun, frozen: nil)
        if downstream {
            for d in rt.graph.descendants(of: node) where !rt.state(d).isActive && rt.state(d) != .awaitingUser {
                rt.pending[d] = PendingRun(trigger: .rerun, frozen: nil)
                let reason = BlockReason.waitingFor(port: rt.graph.incoming[d]?.first?.key ?? "input", node: node)
                if rt.state(d) != .blocked(reason) {
                    let (t, c) = try rt.apply(.block(reason), to: d, now: now)
                    transitions.append(t)
                    changes.append(c)
                }
            }
        }
        try commit(rt, changes, transitions, event: "rerun", summary: "Rerun \(node)" + (downstream ? " and downstream" : ""))
    }

    /// A person's `flowdir cancel`, `retry`, `rerun`, `snooze`, `skip`, `claim`
    /// or `answer` from another terminal drops a file in `.flowdir/requests/`; the
    /// engine holding the instance carries it out here and leaves a result.
    @discardableResult
    func handleRequests() throws -> Bool {
        var acted = false
        for rt in instances.values {
            for request in RequestBox.pending(rt.path) {
                // Taken first: if this flowdir stops while carrying it out,
                // the next one sets it aside rather than trying it again.
                guard RequestBox.take(request.id, in: rt.path) else { continue }
                var result: RequestResult
                do {
                    result = try carryOut(request, rt)
                } catch {
                    result = RequestResult(ok: false, message: "\(error)")
                }
                // Committed, with what follows from it, before the result is
                // given: "ok" means it is in git.
                do {
                    try evaluateAndStart()
                    try flush()
                } catch {
                    RequestBox.finish(request.id, in: rt.path, RequestResult(ok: false, message: "it could not be committed: \(error)"))
                    throw error
                }
                RequestBox.finish(request.id, in: rt.path, result)
                acted = true
            }
        }
        return acted
    }

    func carryOut(_ r: PersonRequest, _ rt: InstanceRuntime) throws -> RequestResult {
        let now = clock.now()
        if r.verb.isAboutInstance { return try setPolling(rt, paused: r.verb == .pausePolling, by: r.by) }
        guard rt.graph.node(r.node) != nil else {
            return RequestResult(ok: false, message: "there is no node '\(r.node)'" + (Suggest.hint(for: r.node, in: rt.graph.order).map { "; \($0)" } ?? ""))
        }
        switch r.verb {
        case .retry:
            try requestRetry(rt, r.node)
            return RequestResult(ok: true, message: "Retrying '\(r.node)' with the inputs and params of run \(rt.facts[r.node]?.lastRun?.run ?? 0).")
        case .rerun:
            try requestRerun(rt, r.node, downstream: r.downstream)
            return RequestResult(ok: true, message: "Rerunning '\(r.node)'" + (r.downstream ? " and everything downstream." : "."))
        case .cancel:
            rt.batch.author = rt.store.personSignature()
            try cancel(rt, r.node, reason: "Cancelled by \(Host.user)")
            return RequestResult(ok: true, message: "Cancelling '\(r.node)'.")
        case .snooze, .claim, .release, .skip, .answer:
            return try carryOut(question: r, rt, now: now)
        case .pausePolling, .resumePolling:
            preconditionFailure("taken above")
        }
    }

    /// `flowdir polling pause|resume`: status checks of the instance's
    /// remote jobs stop or start again (`instance.yaml: polling:`); the jobs
    /// go on where they run.
    func setPolling(_ rt: InstanceRuntime, paused: Bool, by who: String) throws -> RequestResult {
        let mode: PollingMode = paused ? .paused : .active
        let remote = rt.graph.order.filter { rt.state($0) == .queuedRemote || rt.state($0) == .runningRemote }.count
        guard rt.polling != mode else {
            return RequestResult(ok: true, message: "Polling of '\(rt.title)' is already \(paused ? "paused" : "on").")
        }
        rt.polling = mode
        let record = rt.record
        for executor in executors.all { executor.setPolling(paused: paused, instance: rt.path) }
        rt.batch.author = rt.store.personSignature()
        try commit(rt, [.write(InstancePaths.instanceFile, InstanceCodec.encode(record))], [], event: "polling",
                   summary: "\(paused ? "Pause" : "Resume") polling of '\(rt.title)' (\(who))")
        return RequestResult(ok: true, message: paused
            ? "Paused polling of '\(rt.title)': \(remote) remote job\(remote == 1 ? "" : "s") go on running, unchecked until `flowdir polling resume`."
            : "Resumed polling of '\(rt.title)'.")
    }

    /// The requests about a node's open question.
    func carryOut(question r: PersonRequest, _ rt: InstanceRuntime, now: Timestamp) throws -> RequestResult {
        guard let a = rt.awaits[r.node], rt.state(r.node) == .awaitingUser else {
            // Answered files may be waiting for a node not yet asked: they stay.
            if r.verb == .answer, !r.files.isEmpty, rt.state(r.node).isTerminal == false, !rt.state(r.node).isActive {
                return RequestResult(ok: true, message: "'\(r.node)' is not asking yet (it is \(rt.state(r.node).name)); "
                                     + "the answer is kept in inbox/ and taken when it is")
            }
            // Nothing to give up: an editor closed just as its question was answered.
            if r.verb == .release { return RequestResult(ok: true, message: "'\(r.node)' is not waiting for a person; nothing to release.") }
            // The watcher saw the files land in inbox/ and took them first: answered all the same.
            if r.verb == .answer, !r.files.isEmpty, let taken = rt.facts[r.node]?.lastRun?.answer?.files,
               r.files.allSatisfy({ name in taken.contains { $0 == name || $0.hasSuffix("/" + name) } }) {
                return RequestResult(ok: true, message: "Answered '\(r.node)' (\(r.files.map { "inbox/" + $0 }.joined(separator: ", "))).")
            }
            return RequestResult(ok: false, message: "'\(r.node)' is not waiting for a person (it is \(rt.state(r.node).name))")
        }
        let who = r.by
        func write(_ next: AwaitRecord, _ summary: String) throws {
            rt.awaits[r.node] = next
            rt.batch.author = rt.store.personSignature()
            try commit(rt, [.write(InstancePaths.awaitFile(r.node), AwaitCodec.encode(next, instanceName: rt.name))], [],
                       event: r.verb.rawValue, summary: summary)
        }
        switch r.verb {
        case .snooze:
            switch AwaitPolicy.snooze(a, for: r.duration, now: now) {
            case .failure(let refusal): return RequestResult(ok: false, message: refusal.description)
            case .success(let next):
                let until = next.snoozeUntil!.iso8601
                try write(next, "Snooze \(r.node) until \(until) (\(next.snoozeCount) of \(AwaitPolicy.maxSnoozes)) by \(who)")
                return RequestResult(ok: true, message: "Snoozed '\(r.node)' until \(until) (\(next.snoozeCount) of \(AwaitPolicy.maxSnoozes)).")
            }
        case .claim:
            switch AwaitPolicy.claim(a, by: who, now: now) {
            case .failure(let refusal): return RequestResult(ok: false, message: refusal.description)
            case .success(let next):
                try write(next, "\(who) claims \(r.node)")
                return RequestResult(ok: true, message: "Claimed '\(r.node)' until \(next.claim!.until.iso8601).")
            }
        case .release:
            guard a.claim != nil else { return RequestResult(ok: true, message: "'\(r.node)' is not claimed.") }
            switch AwaitPolicy.release(a, by: who, now: now) {
            case .failure(let refusal): return RequestResult(ok: false, message: refusal.description)
            case .success(let next):
                try write(next, "\(who) releases \(r.node)")
                return RequestResult(ok: true, message: "Released '\(r.node)': anyone may answer it.")
            }
        case .skip:
            if let refusal = AwaitPolicy.skip(a) { return RequestResult(ok: false, message: refusal.description) }
            rt.retire(r.node, .skipped, by: who, note: "skipped by \(who)", now: now)
            let (t, c) = try rt.apply(.skip, to: r.node, now: now)
            rt.batch.author = rt.store.personSignature()
            try commit(rt, [c], [t], event: "skip", summary: "\(who) skipped \(r.node)")
            return RequestResult(ok: true, message: "Skipped '\(r.node)'.")
        case .retry, .rerun, .cancel, .pausePolling, .resumePolling:
            preconditionFailure("\(r.verb) is not about a question")
        case .answer:
            if !r.force, let refusal = AwaitPolicy.heldByOther(a, who: who, now: now) {
                return RequestResult(ok: false, message: refusal.description + " (answer anyway with --force)")
            }
            if !r.files.isEmpty {
                // The files are in inbox/: take them as any dropped file.
                while try takeInboxEvent(rt) {
                    try evaluateAndStart()
                    try flush()
                }
                if let refused = r.files.compactMap({ name in rt.refusals[name].map { (name, $0) } }).first {
                    return RequestResult(ok: false, message: "inbox/\(refused.0) was refused: \(refused.1); it is kept as inbox/\(refused.0).rejected")
                }
                if rt.awaits[r.node] == nil {
                    return RequestResult(ok: true, message: "Answered '\(r.node)' (\(r.files.map { "inbox/" + $0 }.joined(separator: ", "))).")
                }
                let missing = rt.awaits[r.node]!.expects.filter { e in !r.files.contains { $0.hasPrefix("\(r.node).\(e.port).") } }
                return RequestResult(ok: true, message: "Kept \(r.files.map { "inbox/" + $0 }.joined(separator: ", ")); '\(r.node)' still needs "
                                     + missing.map { "inbox/\($0.file)" }.joined(separator: " and "))
            }
            switch a.type {
            case .choice:
                guard let v = r.choice else { return RequestResult(ok: false, message: "'\(r.node)' asks for a choice: --choice \(a.choices.first ?? "X")") }
                switch AnswerCheck.choice(v, of: a) {
                case .failure(let f): return RequestResult(ok: false, message: f.reason)
                case .success(let c):
                    try acceptValue(rt, a, choice: c, params: nil, by: who, outcome: .answered, now: now)
                    return RequestResult(ok: true, message: "Answered '\(r.node)': \(c).")
                }
            case .confirmParams:
                guard let approve = r.approve else { return RequestResult(ok: false, message: "'\(r.node)' asks to confirm its params: --approve (or --decline)") }
                guard approve else {
                    try decline(rt, a, by: who, now: now)
                    return RequestResult(ok: true, message: "Declined '\(r.node)'; it is cancelled.")
                }
                switch AnswerCheck.params(r.params, offered: a.params, schema: schema(rt, r.node)) {
                case .failure(let f): return RequestResult(ok: false, message: f.reason)
                case .success(let p):
                    try acceptValue(rt, a, choice: nil, params: p, by: who, outcome: .answered, now: now)
                    return RequestResult(ok: true, message: "Approved '\(r.node)' with " + p.map { "\($0.key)=\($0.value.plainText)" }.joined(separator: ", ") + ".")
                }
            case .drawMask, .selectAsset:
                return RequestResult(ok: false, message: "'\(r.node)' asks for a file: " + a.expects.map { "inbox/\($0.file)" }.joined(separator: ", "))
            }
        }
    }

    func cancel(_ rt: InstanceRuntime, _ node: String, reason: String) throws {
        let key = RunKey(instance: rt.path, node: node)
        if let job = running[key] {
            running[key]?.cancelReason = reason
            job.handle.cancel()  // SIGTERM to the group, or the backend's cancel; finish() records it
            return
        }
        switch rt.state(node) {
        case .runningLocal, .runningRemote, .downloading:
            // Left running by a flowdir that is gone: end what it left, then record it.
            let run = rt.facts[node]?.state.run ?? 0
            ProcessGroups.endLeftover([Preparation.workDirectory(rt, node, run)])
            let (t, c) = try rt.apply(.cancel(reason: reason), to: node, now: clock.now())
            try commit(rt, [c], [t], event: "cancel")
        case .ready, .awaitingUser, .queuedRemote, .blocked:
            let (t, c) = try rt.apply(.cancel(reason: reason), to: node, now: clock.now())
            try commit(rt, [c], [t], event: "cancel")
        default:
            break
        }
    }

    /// After a crash (even kill -9) nothing stays "running": each attempt
    /// that was under way is recorded as failed, "interrupted", its
    /// leftover processes are ended, and the node runs again.
    /// - Parameter holder: whether this machine runs the instance's jobs (its
    ///   lease); if not, only what this machine itself left (work folders,
    ///   processes, launches never recorded) is dealt with.
    func recoverInterrupted(_ rt: InstanceRuntime, holder: Bool = true) throws {
        let now = clock.now()
        var transitions: [Transition] = []
        var changes: [InstanceStore.Change] = []
        // Every job a stopped flowdir left has a work folder, whether HEAD has
        // it running or it was launched before its start was committed (see
        // `Engine.step`): its process group is ended and the folder removed.
        let workRoot = rt.path + "/" + InstancePaths.local + "/work"
        let entries = ((try? LocalFileSystem().listDirectory(workRoot)) ?? []).map { workRoot + "/" + $0 }
        // `<node>.<run>`; an older flowdir's `<node>/<run>` are ended as well.
        var left = entries
        for dir in entries where !Path.basename(dir).contains(".") {
            left += ((try? LocalFileSystem().listDirectory(dir)) ?? []).map { dir + "/" + $0 }
        }
        // A remote job went on without us: it is followed again, never sent twice.
        let remote = !holder ? [] : rt.graph.order.filter { id in
            guard rt.facts[id]?.state.submission != nil, rt.graph.node(id)?.tool?.run.isRemote ?? false else { return false }
            if case .blocked(.offline) = rt.state(id) { return true }
            return rt.state(id).isActive
        }
        // Its folder and processes are its backend's (a job in a folder the cluster shares may run there): not ended.
        let kept = Set(remote.map { Preparation.workDirectory(rt, $0, rt.facts[$0]!.state.run) })
        ProcessGroups.endLeftover(left.filter { !kept.contains($0) })
        for id in rt.graph.order where holder && rt.state(id).isActive && !remote.contains(id) {
            let run = rt.facts[id]!.state.run
            let err = NodeError(summary: "interrupted", code: "interrupted", hint: "flowdir stopped while it ran; it runs again")
            let runYAML = InstancePaths.run(id, run) + "/run.yaml"
            if let bytes = rt.store.read(runYAML), case .success(var record) = RunRecordCodec.decode(bytes, file: runYAML) {
                record.finishedAt = now
                record.error = err
                changes.append(.write(runYAML, RunRecordCodec.encodeBytes(record)))
            }
            changes.append(.existing(InstancePaths.run(id, run) + "/log.txt"))  // absent if it never began
            let (t1, _) = try rt.apply(.fail(err), to: id, now: now)
            let (t2, c2) = try rt.apply(.becomeReady, to: id, now: now)
            transitions += [t1, t2]
            changes.append(c2)
            rt.pending[id] = PendingRun(trigger: .auto, frozen: nil)
        }
        // Launched before the commit that records its start was made: the
        // execution still goes into the history, as interrupted, under its
        // own number, so the next one has the next (never the same twice).
        // After the runs HEAD has as started, which go first.
        var unrecorded = Self.unrecordedLaunches(rt, workFolders: entries.map(Path.basename))
        if !holder {
            // Another machine ran this node on since (under the same
            // numbers): what ran here is recorded after its runs, unless
            // HEAD has it as this machine's.
            unrecorded = []
            var taken: [String: Int] = [:]
            for name in entries.map(Path.basename) {
                guard let dot = name.lastIndex(of: "."), let run = Int(name[name.index(after: dot)...]), RunRecord.runNumbers.contains(run) else { continue }
                let id = String(name[..<dot])
                guard rt.facts[id] != nil else { continue }
                let file = InstancePaths.run(id, run) + "/run.yaml"
                if let bytes = rt.store.read(file), case .success(let r) = RunRecordCodec.decode(bytes, file: file), r.host == Host.name { continue }
                let next = max(rt.nextRunNumber(id), (taken[id] ?? 0) + 1)
                taken[id] = next
                unrecorded.append((id, next))
            }
        }
        for (id, run) in unrecorded {
            let kind = rt.graph.node(id)?.spec.kind ?? "unknown"
            var record = RunRecord(run: run, node: id, kind: kind, trigger: .auto, params: [], inputs: [],
                                   startedAt: now, host: Host.name, user: Host.user)
            record.finishedAt = now
            record.error = NodeError(summary: "interrupted before its start was recorded", code: "interrupted",
                                     hint: "flowdir stopped just after it launched this run; it runs again")
            changes.append(.write(InstancePaths.run(id, run) + "/run.yaml", RunRecordCodec.encodeBytes(record)))
            changes.append(.existing(InstancePaths.run(id, run) + "/log.txt"))
        }
        // A node that never ran would take run 1 next, without a look at
        // runs/ (see `nextRunNumber`): its state names the run recorded here.
        // Any other keeps its state (a succeeded one, its outputs' run).
        for (id, run) in Dictionary(unrecorded, uniquingKeysWith: max).sorted(by: { $0.key < $1.key }) where holder && rt.facts[id]?.state.run == 0 {
            let (t, c) = try rt.renumber(id, run: run, now: now)
            transitions.append(t)
            changes.append(c)
        }
        try commit(rt, changes, transitions, event: "recover", summary: transitions.isEmpty ? nil : "Recover interrupted runs")
        // The work folders are what says a run was launched: they go once that is committed.
        if !unrecorded.isEmpty, !rt.batch.isEmpty { try commitBatch(rt) }
        // A remote run's folder stays: a cluster job may still be writing its outputs there.
        for dir in entries where !kept.contains(dir) { try? Files.removeTree(dir) }
        for id in remote { try reattach(rt, id) }
    }

    /// Follows node `id`'s remote run again after a restart: prepared as it
    /// was started (its run record's inputs and params), handed to its
    /// executor with the job id if one was recorded.
    func reattach(_ rt: InstanceRuntime, _ id: String) throws {
        guard let node = rt.graph.node(id), let state = rt.facts[id]?.state else { return }
        let run = state.run
        let runYAML = InstancePaths.run(id, run) + "/run.yaml"
        var record: RunRecord?
        if let bytes = rt.store.read(runYAML), case .success(let r) = RunRecordCodec.decode(bytes, file: runYAML) { record = r }
        let key = RunKey(instance: rt.path, node: id)
        // A job that writes where it runs (`BackendTraits.runsInSharedFolder`), started in another
        // folder (another machine's clone, on the file system the cluster
        // shares): followed there, where its outputs and log will be.
        let startedIn = record?.folder.flatMap { $0 != rt.path && LocalFileSystem().isDirectory($0) ? $0 : nil }
        let prepared: Prepared
        do {
            prepared = try Preparation.prepare(rt, node: node, pending: record.map { PendingRun(trigger: $0.trigger, frozen: $0) },
                                               run: run, startedIn: startedIn, now: record?.startedAt ?? clock.now())
        } catch {
            // Its inputs are gone: it cannot be sent again, but it may still be
            // followed by its id; without one, it fails and says why.
            guard state.job == nil else {
                throw EngineError.unexpected("\(id): cannot follow job \(state.job!) again: \(error)")
            }
            let err = NodeError(summary: "cannot pick up its remote run \(run): \(error)", code: "reattachFailed",
                                hint: "`\(Shell.command(["flowdir", "rerun", rt.path, id]))` sends it again with the current inputs")
            let (t, c) = try rt.apply(.fail(err), to: id, now: clock.now())
            try commit(rt, [c], [t], event: "recover")
            return
        }
        var kept = record ?? prepared.record
        kept.job = state.job
        let inbox = self.inbox
        let handle: any JobHandle
        let executor = prepared.spec.flatMap { executors.executor(for: $0.work) }
        if var spec = prepared.spec, let executor {
            // Only a start that was recorded bounds what the backend may have made for it.
            spec.startedAt = record?.startedAt
            handle = executor.reattach(spec, jobID: state.job) { inbox.post(.job(key, run: run, $0)) }
        } else {
            handle = CancelToken()
            inbox.post(.job(key, run: run, .ended(.failed(NodeError(
                summary: "this flowdir cannot follow remote run \(run) (\(state.job.map { "job \($0)" } ?? "not yet sent")): no executor for it",
                code: "noExecutor", hint: "configure the endpoint the tool names, then `flowdir retry`")), log: nil)))
        }
        running[key] = RunningJob(run: run, record: kept, workDir: prepared.workDir, handle: handle, cancelReason: nil,
                                  launchedAt: clock.instant, spec: prepared.spec, executor: executor)
    }
}

extension Engine {
    /// Runs a stopped flowdir launched whose start no commit records: each
    /// has a work folder `<node>.<run>` (made again by the store's recovery
    /// for one whose outputs were moved in). One whose node HEAD has at
    /// that run or later is recorded already.
    static func unrecordedLaunches(_ rt: InstanceRuntime, workFolders: [String]) -> [(String, Int)] {
        var found: [(String, Int)] = []
        for name in workFolders {
            guard let dot = name.lastIndex(of: "."), let run = Int(name[name.index(after: dot)...]), RunRecord.runNumbers.contains(run) else { continue }
            let id = String(name[..<dot])
            guard let f = rt.facts[id], f.state.run < run else { continue }
            found.append((id, run))
        }
        return found.sorted { ($0.0, $0.1) < ($1.0, $1.1) }
    }
}

/// Ending the process groups of jobs that outlived a crashed flowdir,
/// found by the work folders they were started in (see `ProcessTable.jobGroups`).
enum ProcessGroups {
    static func endLeftover(_ workDirectories: [String]) {
        guard !workDirectories.isEmpty else { return }
        for group in ProcessTable.jobGroups(runDirectories: workDirectories).values.reduce(into: Set(), { $0.formUnion($1) }) {
            _ = killpg(group, SIGKILL)
        }
    }
}
