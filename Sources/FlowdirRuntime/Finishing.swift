#if canImport(Glibc)
import Glibc
#endif
import FlowdirCore
import FlowdirIO
import FlowdirTemplates

/// Finishing: what a job's end means for its node (outputs checked and
/// moved in, its run recorded), fail-fast, and progress.
extension Engine {
    func finish(_ key: RunKey, _ termination: JobEnd, log: [UInt8]? = nil) throws {
        guard let job = running.removeValue(forKey: key), let rt = instances[key.instance],
              let node = rt.graph.node(key.node) else { return }
        grouping.jobEnded(after: clock.instant - job.launchedAt)
        let now = clock.now()
        var record = job.record
        record.finishedAt = now
        var transitions: [Transition] = []
        var changes: [InstanceStore.Change] = []
        let runDir = InstancePaths.run(key.node, job.run)
        // A job another machine started, followed where it wrote (see
        // `reattach`): its log is read from there and written here.
        let elsewhere = !job.workDir.hasPrefix(rt.path + "/")
        var log = log
        var logElsewhere = false
        if elsewhere, log == nil, let from = job.spec?.logPath {
            log = (try? LocalFileSystem().readFile(from, limit: 1 << 26)) ?? []
            logElsewhere = true
        }
        if case .exited(let code) = termination { record.exitCode = code }
        var failure: NodeError?
        var workDirectoryGone = false
        if job.cancelReason == Engine.shutdownReason {
            // Stopped by a shutdown, not by a person: it runs again next time.
            let err = NodeError(summary: "interrupted", code: "interrupted", hint: Engine.shutdownReason + "; it runs again")
            record.error = err
            let (t1, _) = try rt.apply(.fail(err), to: key.node, run: job.run, now: now)
            let (t2, c2) = try rt.apply(.becomeReady, to: key.node, now: now)
            transitions += [t1, t2]
            changes.append(c2)
            rt.pending[key.node] = PendingRun(trigger: .auto, frozen: nil)
        } else if let reason = job.cancelReason ?? termination.cancelled {
            let (t, c) = try rt.apply(.cancel(reason: reason), to: key.node, run: job.run, now: now)
            transitions.append(t)
            changes.append(c)
            record.error = NodeError(summary: reason, code: "cancelled")
        } else {
            switch termination {
            case .exited(0), .succeeded:
                switch Outputs.collect(rt, node: node, workDir: job.workDir, run: job.run, bigFile: options.bigFile) {
                case .success(let collected):
                    record.outputs = collected.records
                    changes += collected.changes
                    workDirectoryGone = collected.workDirectoryMoved
                case .failure(var err):
                    if let folder = record.folder, folder != rt.path, !LocalFileSystem().isDirectory(folder) {
                        err.hint = "it was started on \(record.host) in \(folder), which this machine cannot read: "
                            + "run it there, or `\(Shell.command(["flowdir", "rerun", rt.path, key.node]))` to run it again"
                    }
                    failure = err
                }
            case .exited(let code):
                failure = NodeError(summary: "exited with code \(code)" + Outputs.lastLogLine(rt, runDir, log: log).map { ": \($0)" }.orEmpty,
                                    code: "exit(\(code))", hint: "see `\(Shell.command(["flowdir", "logs", rt.path, key.node, "--run", String(job.run)]))`")
            case .signaled(let signal):
                failure = NodeError(summary: "killed by signal \(signal)", code: "signal(\(signal))",
                                    hint: "see `\(Shell.command(["flowdir", "logs", rt.path, key.node, "--run", String(job.run)]))`")
            case .spawnFailed(let why):
                let program = record.command.first ?? "?"
                failure = NodeError(summary: "could not start \(program): \(why)", code: "spawnFailed",
                                    hint: "is `\(program)` installed and on PATH? Tool \(node.spec.kind) runs it (\(node.tool?.file ?? "built-in"))")
            case .failed(let err):
                failure = err
            case .cancelled:
                break  // taken above
            }
            if let failure {
                record.error = failure
                let (t, c) = try rt.apply(.fail(failure), to: key.node, run: job.run, now: now)
                transitions.append(t)
                changes.append(c)
                notifyFailed(rt, key.node, failure)
            } else {
                // A backend that writes its outputs in place (`BackendTraits.writesOutputsInPlace`)
                // ends `.succeeded` from runningRemote: nothing was downloaded. Any other went, or goes, through downloading.
                let inPlace = termination == .succeeded && (job.spec.flatMap { Backends.named($0.work.key)?.traits.writesOutputsInPlace } ?? false)
                if rt.state(key.node) == .queuedRemote || rt.state(key.node) == .runningRemote && !inPlace {
                    let (t, _) = try rt.apply(.startDownload, to: key.node, run: job.run, now: now)
                    transitions.append(t)
                }
                let (t, c) = try rt.apply(.succeed, to: key.node, run: job.run, now: now)
                transitions.append(t)
                changes.append(c)
                var f = rt.facts[key.node]!
                f.lastRun = record
                f.outputs = Dictionary(uniqueKeysWithValues: record.outputs.map {
                    ($0.port, OutputRef(blob: $0.blob, file: InstancePaths.node(key.node) + "/" + $0.file, run: job.run, sha256: $0.sha256))
                })
                if backgroundCommits { for o in f.outputs.values { rt.movedIn.insert(o.file) } }
                f.params = record.params
                rt.facts[key.node] = f
            }
        }
        let finished = record
        changes.append(.encode(runDir + "/run.yaml", bytes: { RunRecordCodec.encodeBytes(finished) }))
        // The log is already in place: committed as it is, not written again
        // (and left out if it could not be made); not even read again when
        // the runner kept what it wrote. A job that printed nothing has no
        // file yet (see `BoundedLog`): its empty log is written with the commit.
        let logFile = runDir + "/log.txt"
        changes.append(log.map { $0.isEmpty || logElsewhere ? .write(logFile, $0) : .placed(logFile, $0) } ?? .existing(logFile))
        try commit(rt, changes, transitions, event: failure == nil ? "finish" : "fail")
        // Another machine's work folder is its own to remove.
        if !workDirectoryGone, !elsewhere { rt.batch.workDirectories.append(job.workDir) }
        if failure != nil, rt.graph.template.options.errorPolicy == .failFast, rt.halted == nil {
            try halt(rt, because: key.node)
        }
    }

    /// fail-fast: cancel what runs and what waits in the queue; start nothing more.
    func halt(_ rt: InstanceRuntime, because failed: String) throws {
        rt.halted = failed
        let reason = "Cancelled: '\(failed)' failed (fail-fast)"
        for (key, job) in running where key.instance == rt.path {
            running[key]?.cancelReason = reason
            job.handle.cancel()
        }
        let now = clock.now()
        var transitions: [Transition] = []
        var changes: [InstanceStore.Change] = []
        for id in rt.graph.order where rt.state(id) == .ready {
            let (t, c) = try rt.apply(.cancel(reason: reason), to: id, now: now)
            transitions.append(t)
            changes.append(c)
        }
        try commit(rt, changes, transitions, event: "cancel")
    }

    func recordProgress(_ key: RunKey, _ p: Double) throws {
        guard let rt = instances[key.instance], var f = rt.facts[key.node], f.state.state.isActive else { return }
        // Progress is worth a commit only now and then.
        let last = f.state.progress ?? -1
        guard p - last >= 0.1 || (p >= 1 && last < 1) else { return }
        f.state.progress = p
        f.state.updatedAt = clock.now()
        rt.facts[key.node] = f
        try commit(rt, [.write(InstancePaths.state(key.node), InstanceCodec.encode(f.state))], [], event: "progress",
                   summary: "\(key.node) \(Int((p * 100).rounded()))%")
    }
}

extension JobEnd {
    /// The backend cancelled it (asked by flowdir or by someone else): why, in words.
    var cancelled: String? {
        if case .cancelled(let why) = self { return why ?? "Cancelled on the backend" }
        return nil
    }
}

extension Optional where Wrapped == String {
    var orEmpty: String { self ?? "" }
}
