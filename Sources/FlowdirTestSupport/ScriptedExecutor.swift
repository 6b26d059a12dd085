import FlowdirCore
import FlowdirIO

/// An executor whose jobs do what a test scripts, with a "backend" that
/// outlives the engine (as a job API does): tests drive every state of a
/// remote job's life without processes or servers, stop the engine at any
/// step, and see whether a new engine reattaches or submits again.
public final class ScriptedExecutor: Executor, Sendable {
    public enum Step: Sendable {
        case update(JobUpdate)
        /// Seconds before the next step.
        case pause(Double)
        /// Waits until `release(node:)` (or forever).
        case hold
    }

    /// A job as the backend knows it.
    public struct BackendJob: Sendable, Equatable {
        public var id: String
        public var submissionKey: String
        public var node: String
        public var run: Int
        public var cancelled = false
    }

    public struct Calls: Sendable {
        public var submits: [String] = []
        public var reattaches: [(key: String, jobID: String?)] = []
        public var cancels: [String] = []
        public var fetches: [String] = []
        public var paused: Set<String> = []
    }

    struct State {
        var jobs: [BackendJob] = []
        var calls = Calls()
        var holds: [String: [CheckedContinuation<Void, Never>]] = [:]
        var released: Set<String> = []
    }

    private let state = Locked(State())
    /// A new job's steps; its id is given.
    let script: @Sendable (JobSpec, String) -> [Step]
    /// A reattached job's steps.
    let afterReattach: @Sendable (JobSpec, String) -> [Step]
    /// What `fetchOutputs` writes for an output.
    let output: @Sendable (JobOutput) -> [UInt8]
    /// `fetchOutputs` waits for `release(node:)` first (a download under way).
    let holdFetch: Bool
    /// What `.pause` waits on.
    let clock: FlowdirClock

    public init(script: @escaping @Sendable (JobSpec, String) -> [Step] = ScriptedExecutor.happy,
                afterReattach: @escaping @Sendable (JobSpec, String) -> [Step] = { _, _ in [.update(.running), .update(.outputsReady)] },
                output: @escaping @Sendable (JobOutput) -> [UInt8] = { Array("out of \($0.port)\n".utf8) },
                holdFetch: Bool = false, clock: FlowdirClock = .system) {
        self.holdFetch = holdFetch
        self.clock = clock
        self.script = script
        self.afterReattach = afterReattach
        self.output = output
    }

    /// Submitted, running with progress, outputs ready: a job that works.
    public static let happy: @Sendable (JobSpec, String) -> [Step] = { _, id in
        [.update(.submitted(jobID: id)), .pause(0.05), .update(.running), .update(.progress(0.5)), .pause(0.05), .update(.outputsReady)]
    }

    public var calls: Calls { state.locked { $0.calls } }
    public var jobs: [BackendJob] { state.locked { $0.jobs } }

    /// Lets jobs of `node` held at `.hold` go on.
    public func release(node: String) {
        let waiting = state.locked { s -> [CheckedContinuation<Void, Never>] in
            s.released.insert(node)
            return s.holds.removeValue(forKey: node) ?? []
        }
        for w in waiting { w.resume() }
    }

    public func submit(_ job: JobSpec, updates: @escaping @Sendable (JobUpdate) -> Void) -> any JobHandle {
        let id = state.locked { s -> String in
            s.calls.submits.append(job.submissionKey)
            let id = "job-\(s.jobs.count + 1)"
            s.jobs.append(BackendJob(id: id, submissionKey: job.submissionKey, node: job.node, run: job.run))
            return id
        }
        return play(script(job, id), job: job, id: id, updates: updates)
    }

    public func reattach(_ job: JobSpec, jobID: String?, updates: @escaping @Sendable (JobUpdate) -> Void) -> any JobHandle {
        let found = state.locked { s -> BackendJob? in
            s.calls.reattaches.append((job.submissionKey, jobID))
            return s.jobs.first { jobID != nil ? $0.id == jobID : $0.submissionKey == job.submissionKey }
        }
        guard let found else { return submit(job, updates: updates) }
        var steps = afterReattach(job, found.id)
        if jobID == nil { steps.insert(.update(.submitted(jobID: found.id)), at: 0) }
        if found.cancelled { steps = [.update(.ended(.cancelled(nil), log: nil))] }
        return play(steps, job: job, id: found.id, updates: updates)
    }

    public func fetchOutputs(_ job: JobSpec, jobID: String?) async throws(NodeError) {
        state.locked { $0.calls.fetches.append(job.submissionKey) }
        if holdFetch { await hold(job.node) }
        for o in job.outputs {
            do { try Files.writeAtomically(job.workDir + "/" + o.file, output(o)) } catch {
                throw NodeError(summary: "cannot write \(o.file): \(error)", code: "downloadFailed")
            }
        }
    }

    public func setPolling(paused: Bool, instance: String) {
        state.locked { if paused { $0.calls.paused.insert(instance) } else { $0.calls.paused.remove(instance) } }
    }

    struct Handle: JobHandle {
        let cancelled: @Sendable () -> Void
        func cancel() { cancelled() }
    }

    private func hold(_ node: String) async {
        await withCheckedContinuation { c in
            let go = state.locked { s -> Bool in
                if s.released.contains(node) { return true }
                s.holds[node, default: []].append(c)
                return false
            }
            if go { c.resume() }
        }
    }

    private func play(_ steps: [Step], job: JobSpec, id: String, updates: @escaping @Sendable (JobUpdate) -> Void) -> any JobHandle {
        let node = job.node, clock = self.clock
        let task = Task {
            for step in steps {
                if Task.isCancelled { return }
                switch step {
                case .update(let u): updates(u)
                case .pause(let s): try? await clock.sleep(seconds: s)
                case .hold:
                    await self.hold(node)
                }
            }
        }
        return Handle { [state] in
            task.cancel()
            state.locked { s in
                s.calls.cancels.append(id)
                if let i = s.jobs.firstIndex(where: { $0.id == id }) { s.jobs[i].cancelled = true }
            }
            updates(.ended(.cancelled("Cancelled"), log: nil))
        }
    }
}
