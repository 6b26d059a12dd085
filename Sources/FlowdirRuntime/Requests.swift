#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// Requests from people: retry, rerun, cancel, polling (questions: `QuestionRequests.swift`).
extension Engine {
    /// Retry: the same inputs (blob ids) and params as the last run, or as
    /// run `from`. Refused before anything starts if a frozen blob is gone.
    func requestRetry(_ rt: InstanceRuntime, _ node: String, from: Int? = nil) throws {
        guard let f = rt.facts[node] else { throw EngineError.unknownNode(node) }
        let last: RunRecord
        switch RunRequests.retry(f, from: from, record: { Self.runRecord(rt, node, $0) },
                                 lastStarted: { Self.lastStartedRun(rt, node, before: f.state.run) }) {
        case .refused: throw EngineError.notRetryable(node: node, state: f.state.state.name)
        case .noSuchRun(let n): throw EngineError.noSuchRun(node: node, run: n)
        case .startAgain: return try requestRerun(rt, node, downstream: false)
        case .from(let run): last = run
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
            if let record = runRecord(rt, node, n) { return record }
            n -= 1
        }
        return nil
    }

    /// Run `n` of `node` as its `runs/<n>/run.yaml` records it, if that can be read.
    static func runRecord(_ rt: InstanceRuntime, _ node: String, _ n: Int) -> RunRecord? {
        let file = InstancePaths.run(node, n) + "/run.yaml"
        guard let bytes = rt.store.read(file), case .success(let record) = RunRecordCodec.decode(bytes, file: file), record.run == n else { return nil }
        return record
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
        let plan = RunRequests.rerun(node, downstream: downstream, graph: rt.graph, state: rt.state)
        for id in plan.again { rt.pending[id] = PendingRun(trigger: .rerun, frozen: nil) }
        for w in plan.wait {
            let (t, c) = try rt.apply(.block(w.reason), to: w.node, now: now)
            transitions.append(t)
            changes.append(c)
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
                // Left for a flowdir that starts jobs (the watcher, which the request's file wakes).
                if !starting, request.verb.startsAJob { continue }
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
            try requestRetry(rt, r.node, from: r.run)
            return RequestResult(ok: true, message: "Retrying '\(r.node)' with the inputs and params of run \(r.run ?? rt.pending[r.node]?.frozen?.run ?? rt.facts[r.node]?.lastRun?.run ?? 0).")
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
            // Files in place of a failed step's outputs ("Replace input…"): taken as dropped ones.
            if r.verb == .answer, !r.files.isEmpty, rt.state(r.node).isFailedOrCancelled {
                return try takeFiles(r, rt, done: "Replaced the outputs of") {
                    rt.state(r.node).isFailedOrCancelled ? rt.graph.node(r.node).map(AwaitPolicy.expectedFiles) : nil
                }
            }
            // Nothing to give up: an editor closed just as its question was answered.
            if r.verb == .release { return RequestResult(ok: true, message: "'\(r.node)' is not waiting for a person; nothing to release.") }
            // The watcher saw the files land in inbox/ and took them first: answered all the same.
            if r.verb == .answer, !r.files.isEmpty, let taken = rt.facts[r.node]?.lastRun?.answer?.files,
               r.files.allSatisfy({ name in taken.contains { $0 == name || $0.hasSuffix("/" + name) } }) {
                let replaced = rt.facts[r.node]?.lastRun?.answer?.awaitID.isEmpty == true
                return RequestResult(ok: true, message: (replaced ? "Replaced the outputs of" : "Answered")
                                     + " '\(r.node)' (\(r.files.map { "inbox/" + $0 }.joined(separator: ", "))).")
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
                return try takeFiles(r, rt, done: "Answered") { rt.awaits[r.node]?.expects }
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

    /// Answer files a request placed in inbox/: taken as any dropped file.
    /// `stillExpects`: what the node still asks for once they are taken
    /// (nil when they were taken).
    func takeFiles(_ r: PersonRequest, _ rt: InstanceRuntime, done: String,
                   stillExpects: () -> [ExpectedFile]?) throws -> RequestResult {
        while try takeInboxEvent(rt) {
            try evaluateAndStart()
            try flush()
        }
        if let refused = r.files.compactMap({ name in rt.inboxLook.refusals[name].map { (name, $0) } }).first {
            return RequestResult(ok: false, message: "inbox/\(refused.0) was refused: \(refused.1); it is kept as inbox/\(refused.0).rejected")
        }
        let files = r.files.map { "inbox/" + $0 }.joined(separator: ", ")
        guard let expects = stillExpects() else { return RequestResult(ok: true, message: "\(done) '\(r.node)' (\(files)).") }
        let missing = expects.filter { e in !r.files.contains { $0.hasPrefix("\(r.node).\(e.port).") } }
        return RequestResult(ok: true, message: "Kept \(files); '\(r.node)' still needs " + missing.map { "inbox/\($0.file)" }.joined(separator: " and "))
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
}
