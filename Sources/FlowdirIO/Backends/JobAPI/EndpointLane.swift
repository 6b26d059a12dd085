import FlowdirCore
import Logging

/// Everything flowdir does with one job API endpoint: sending jobs (each
/// once), one poller for all of its jobs, webhooks, cancels and downloads,
/// every request within the endpoint's budget. An actor: the jobs' table
/// is touched by one task at a time.
actor EndpointLane {
    let endpoint: EndpointConfig
    let client: JobAPIClient
    let logger: Logger
    let random: @Sendable () -> Double
    let clock: FlowdirClock
    var budget: RequestBudget

    struct Tracked {
        var spec: JobSpec
        var work: HTTPWork
        var updates: @Sendable (JobUpdate) -> Void
        /// The backend's id, once it gave one.
        var id: String?
        var prediction: Prediction?
        var nextPoll = 0.0
        var loggedCount = 0
        var saidRunning = false
        /// Succeeded: no more polls; the engine fetches its outputs.
        var ready = false
        var cancelRequested = false
        var noted = false
        /// Never sent, held while the endpoint is unreachable.
        var sending = false
    }

    /// By submission key.
    var jobs: [String: Tracked] = [:]
    var byID: [String: String] = [:]
    var paused: Set<String> = []
    var pollBackoff: Backoff
    var offlineSince: Timestamp?
    var poller: Task<Void, Never>?
    var alarm: CheckedContinuation<Void, Never>?
    var alarmTimer: Task<Void, Never>?
    /// Creates sent with `Prefer: wait` and not answered yet.
    var held = 0
    /// At most this many creates are held at once (each keeps a connection
    /// for up to `createWait`); more are sent without waiting and polled,
    /// so a burst of submits never queues behind held ones.
    static let mostHeld = 8

    init(endpoint: EndpointConfig, client: JobAPIClient, logger: Logger, random: @escaping @Sendable () -> Double,
         clock: FlowdirClock = .system) {
        self.clock = clock
        self.endpoint = endpoint
        self.client = client
        self.logger = logger
        self.random = random
        self.budget = RequestBudget(perMinute: endpoint.maxRequestsPerMinute)
        self.pollBackoff = Backoff(endpoint)
    }

    /// Seconds on the monotonic clock: when polls are due. Never the wall,
    /// which may jump (a clock set, a laptop woken) or stand still (FLOWDIR_NOW).
    nonisolated func now() -> Double { clock.instant.sinceOrigin.seconds }

    // MARK: Sending

    func submit(_ job: JobSpec, _ work: HTTPWork, updates: @escaping @Sendable (JobUpdate) -> Void) async {
        let key = job.submissionKey
        jobs[key] = Tracked(spec: job, work: work, updates: updates, sending: true)
        let input: [String: JSONValue]
        do {
            input = try await buildInput(work, job: job)
        } catch {
            return end(key, .failed(error))
        }
        var failures = 0
        while jobs[key] != nil {
            if jobs[key]!.cancelRequested { return end(key, .cancelled(nil)) }
            await spendBudget()
            // Held until the job ends (or the wait passes), a short job's
            // result comes with this answer and needs no poll. Not for a
            // paused instance: its news waits for `polling resume`.
            let wait = held < Self.mostHeld && !paused.contains(job.instance) ? endpoint.createWait : 0
            if wait > 0 { held += 1 }
            let sent = clock.instant
            let answer: Result<Prediction, JobAPIError>
            do {
                answer = .success(try await client.create(model: work.model, version: work.version, input: input, webhook: webhookURL, wait: wait))
            } catch {
                answer = .failure(error)
            }
            if wait > 0 { held -= 1 }
            do {
                let p = try answer.get()
                offlineSince = nil
                accept(key, p)
                // Held for the whole wait and not ended: it runs (or waits
                // there) now; one poll at once says which, so the card does
                // not stay queued another interval. (Answered at once, the
                // server did not hold it: polled as usual.)
                if wait > 0, !p.status.isTerminal, jobs[key] != nil, clock.instant - sent >= .seconds(wait) - .milliseconds(500) {
                    jobs[key]?.nextPoll = self.now()
                    poke()
                }
                return
            } catch {
                if error.isOffline {
                    let since = offlineSince ?? clock.now()
                    offlineSince = since
                    jobs[key]?.updates(.offline(endpoint: endpoint.name, since: since))
                    await sleep(pollBackoff.failed(jitter: random()))
                    continue
                }
                if error.isTransient {
                    // It may have been made before the answer was lost: look first.
                    if case .timeout = error, let found = try? await lookUp(key, input: input, startedAt: job.startedAt) { return accept(key, found) }
                    if case .reset = error, let found = try? await lookUp(key, input: input, startedAt: job.startedAt) { return accept(key, found) }
                    failures += 1
                    guard let delay = SubmitRetry.delay(afterFailures: failures, retryAfter: error.retryAfter, endpoint: endpoint, jitter: random()) else {
                        return end(key, .failed(NodeError(summary: SubmitRetry.cooldownReason(retries: failures - 1, last: "\(error)"),
                                                          code: "gaveUp", hint: "the endpoint '\(endpoint.name)' is busy or failing; `flowdir retry` tries again")))
                    }
                    logger.info("submit retry", metadata: ["endpoint": .string(endpoint.name), "delay": .stringConvertible(delay), "fault": .string("\(error)")])
                    jobs[key]?.updates(.note("Retrying in \(Int(delay.rounded()))s: \(error)"))
                    await sleep(delay)
                    continue
                }
                return end(key, .failed(NodeError(summary: "'\(endpoint.name)' refused the job: \(error)", code: error.code,
                                                  hint: error.hint(endpoint: endpoint.name))))
            }
        }
    }

    /// The backend took the job: its id goes to the engine (to commit) first.
    func accept(_ key: String, _ p: Prediction) {
        guard var t = jobs[key] else { return }
        t.id = p.id
        t.sending = false
        t.nextPoll = self.now() + endpoint.pollInterval
        jobs[key] = t
        byID[p.id] = key
        t.updates(.submitted(jobID: p.id))
        if t.noted { jobs[key]?.noted = false; t.updates(.note(nil)) }
        take(p, from: .create)
        if jobs[key]?.cancelRequested == true { Task { await self.cancel(key) } }
        startPolling()
    }

    func reattach(_ job: JobSpec, _ work: HTTPWork, jobID: String?, updates: @escaping @Sendable (JobUpdate) -> Void) async {
        let key = job.submissionKey
        if let jobID {
            jobs[key] = Tracked(spec: job, work: work, updates: updates, id: jobID, nextPoll: 0)
            byID[jobID] = key
            startPolling()
            poke()
            return
        }
        // Sent or not? Its input, as it would have been sent, among the backend's predictions.
        jobs[key] = Tracked(spec: job, work: work, updates: updates, sending: true)
        while jobs[key] != nil {
            do {
                // Files are not uploaded again to look: an uploaded one is
                // compared by what its URL in the candidate's input gives (see `UploadMatch`).
                if let found = try await lookUp(key, matching: { Self.madeAfter(job.startedAt, $0) ? await self.sent(work, as: $0) : false }) {
                    return accept(key, found)
                }
                logger.info("not found on the backend: sending", metadata: ["job": .string(key)])
                jobs[key] = nil
                return await submit(job, work, updates: updates)
            } catch let error as JobAPIError where error.isOffline || error.isTransient {
                if error.isOffline {
                    let since = offlineSince ?? clock.now()
                    offlineSince = since
                    jobs[key]?.updates(.offline(endpoint: endpoint.name, since: since))
                }
                await sleep(pollBackoff.failed(jitter: random()))
            } catch let error as NodeError {
                return end(key, .failed(error))
            } catch {
                return end(key, .failed(NodeError(summary: "cannot tell whether run \(job.run) was sent: \(error)", code: "unknownSubmission",
                                                  hint: "`flowdir retry` sends it again")))
            }
        }
    }

    /// The prediction made from exactly this input and followed by no other
    /// job, newest first within the first pages of the backend's list.
    func lookUp(_ key: String, input: [String: JSONValue], startedAt: Timestamp?) async throws -> Prediction? {
        let wanted = JSONValue.object(input)
        return try await lookUp(key) { $0.input == wanted && Self.madeAfter(startedAt, $0) }
    }

    func lookUp(_ key: String, matching: (Prediction) async -> Bool) async throws -> Prediction? {
        var cursor: String?
        var pages = 0
        repeat {
            await spendBudget()
            let page = try await client.list(cursor: cursor)
            pages += 1
            for p in page.predictions where byID[p.id] == nil {
                if await matching(p) { return p }
            }
            cursor = page.next
        } while cursor != nil && pages < 20
        return nil
    }

    /// Whether `p` may have been made for a run started at `start`: not made
    /// before it (less a second for the backend's clock, beyond the second
    /// a run record's time is floored to). Two instances of one template
    /// send the same input: the older prediction is the other's.
    static func madeAfter(_ start: Timestamp?, _ p: Prediction) -> Bool {
        guard let start, let made = p.createdAt.flatMap(Timestamp.init(iso8601:)) else { return true }
        return made.seconds >= start.seconds - 1
    }

    /// Whether `p` was made from `work`'s input: every value as it would
    /// be sent, a file above `inlineLimit` (sent as an upload's URL) by
    /// its bytes.
    func sent(_ work: HTTPWork, as p: Prediction) async -> Bool {
        guard case .object(let given)? = p.input, given.count == work.input.count else { return false }
        for (key, value) in work.input {
            guard let theirs = given[key], await same(value, theirs) else { return false }
        }
        return true
    }

    func same(_ value: HTTPInputValue, _ theirs: JSONValue) async -> Bool {
        switch value {
        case .file(let path):
            guard let bytes = try? LocalFileSystem().readFile(path, limit: 1 << 32), let text = theirs.stringValue else { return false }
            if bytes.count <= endpoint.inlineLimit { return text == JobAPIClient.dataURI(bytes, contentType: HTTPInput.contentType(of: path, bytes: bytes)) }
            await spendBudget()
            guard let fetched = try? await client.fetchOutput(text, limit: UploadMatch.limit(for: bytes)) else { return false }
            return UploadMatch.matches(fetched, bytes)
        case .array(let items):
            guard case .array(let other) = theirs, other.count == items.count else { return false }
            for (a, b) in zip(items, other) where !(await same(a, b)) { return false }
            return true
        case .object(let fields):
            guard case .object(let other) = theirs, other.count == fields.count else { return false }
            for (k, v) in fields {
                guard let o = other[k], await same(v, o) else { return false }
            }
            return true
        default:
            return HTTPInput.scalar(value) == theirs
        }
    }

    var webhookURL: String? {
        endpoint.webhook.map { ($0.hasSuffix("/") ? $0 : $0 + "/") + endpoint.name }
    }

    // MARK: Polling

    enum Source { case create, poll, webhook, cancel }

    /// What the backend says of a prediction, from any source.
    func take(_ p: Prediction, from source: Source) {
        guard let key = byID[p.id], var t = jobs[key] else { return }
        t.prediction = p
        if let logs = p.logs, logs.utf8.count != t.loggedCount {
            t.loggedCount = logs.utf8.count
            RemoteLog.write(logs, to: t.spec.logPath)
            if let progress = RemoteLog.lastProgress(logs) { t.updates(.progress(progress)) }
        }
        jobs[key] = t
        switch p.status {
        case .starting:
            break
        case .processing:
            if !t.saidRunning { jobs[key]?.saidRunning = true; t.updates(.running) }
        case .succeeded:
            if !t.saidRunning { jobs[key]?.saidRunning = true; t.updates(.running) }
            if !t.ready { jobs[key]?.ready = true; t.updates(.outputsReady) }
        case .failed:
            end(key, .failed(NodeError(summary: p.error.map { "the job failed on '\(endpoint.name)': \($0)" } ?? "the job failed on '\(endpoint.name)'",
                                       code: "remoteFailed", hint: "its logs are in `\(Shell.command(["flowdir", "logs", t.spec.instance, t.spec.node]))`")))
        case .canceled:
            end(key, .cancelled(t.cancelRequested ? nil : "Cancelled on '\(endpoint.name)'"))
        case .unknown(let status):
            logger.warning("unknown prediction status", metadata: ["status": .string(status), "id": .string(p.id)])
        }
    }

    func end(_ key: String, _ how: JobEnd) {
        guard let t = jobs.removeValue(forKey: key) else { return }
        if let id = t.id { byID[id] = nil }
        t.updates(.ended(how, log: nil))
    }

    func startPolling() {
        guard poller == nil else { return }
        poller = Task { await self.pollLoop() }
    }

    func pollLoop() async {
        while jobs.values.contains(where: { $0.id != nil && !$0.ready }) {
            let now = self.now()
            let live = jobs.values.filter { $0.id != nil && !$0.ready && !paused.contains($0.spec.instance) }
            // Jobs due within half an interval are asked about now, with the
            // rest: many jobs' polls fall together into one list call.
            let early = live.count > 1 ? endpoint.pollInterval / 2 : 0
            let due = live.filter { $0.nextPoll <= now + early }
            guard live.contains(where: { $0.nextPoll <= now }) else {
                await nap(live.map(\.nextPoll).min().map { max(0.01, $0 - now) } ?? endpoint.pollInterval)
                continue
            }
            let tracked = jobs.values.filter { $0.id != nil && !$0.ready }.count
            let dueIDs = Set(due.compactMap(\.id))
            var answered: Set<String> = []
            var failure: JobAPIError?
            requests: for request in PollPlan.requests(due: due.compactMap(\.id), tracked: tracked) {
                switch request {
                case .get(let id):
                    do {
                        await spendBudget()
                        take(try await client.get(id), from: .poll)
                        answered.insert(id)
                    } catch where error.status == 404 {
                        // One job the backend no longer has: that job fails; the rest go on.
                        if let key = byID[id] {
                            end(key, .failed(NodeError(summary: "'\(endpoint.name)' has no job \(id) any more", code: "jobGone",
                                                       hint: "`flowdir retry` sends it again")))
                        }
                    } catch {
                        failure = error
                        break requests
                    }
                case .list:
                    // The walk goes on until every job of ours is seen, due or
                    // not: all of them are then due together next time, one
                    // walk an interval.
                    var ids = Set(live.compactMap(\.id))
                    do {
                        var cursor: String?
                        repeat {
                            await spendBudget()
                            let page = try await client.list(cursor: cursor)
                            // Every job of ours on the page is taken, due or not.
                            for p in page.predictions where byID[p.id] != nil {
                                take(p, from: .poll)
                                answered.insert(p.id)
                                ids.remove(p.id)
                            }
                            cursor = page.next
                        } while !ids.isEmpty && cursor != nil
                    } catch {
                        failure = error
                        break requests
                    }
                    // Due but not in the list (an API that lists only recent ones): asked one by one.
                    for id in ids where dueIDs.contains(id) {
                        do {
                            await spendBudget()
                            take(try await client.get(id), from: .poll)
                            answered.insert(id)
                        } catch {
                            failure = error
                            break requests
                        }
                    }
                }
            }
            let next = self.now() + endpoint.pollInterval
            for id in answered { if let key = byID[id] { jobs[key]?.nextPoll = next; clearNote(key) } }
            if let failure {
                // Polls never fail a job: they back off and say so on the card.
                let delay = pollBackoff.failed(jitter: random())
                let retry = self.now() + delay
                for t in due {
                    guard let id = t.id, !answered.contains(id), let key = byID[id] else { continue }
                    jobs[key]?.nextPoll = retry
                    jobs[key]?.noted = true
                    t.updates(.note("Reconnecting… (\(failure); next try in \(Int(delay.rounded()))s)"))
                }
            } else {
                pollBackoff.succeeded()
            }
        }
        poller = nil
    }

    func clearNote(_ key: String) {
        guard jobs[key]?.noted == true else { return }
        jobs[key]?.noted = false
        jobs[key]?.updates(.note(nil))
    }

    func setPaused(_ isPaused: Bool, instance: String) {
        if isPaused { paused.insert(instance) } else { paused.remove(instance); poke() }
    }

    // MARK: Cancel

    func cancel(_ key: String) async {
        guard jobs[key] != nil else { return }
        jobs[key]?.cancelRequested = true
        guard let id = jobs[key]?.id else {
            // Never sent (it waits for an endpoint that cannot be reached): nothing to cancel there.
            if jobs[key]?.sending == true, offlineSince != nil { end(key, .cancelled(nil)) }
            return
        }
        var backoff = Backoff(endpoint)
        for _ in 0..<5 {
            await spendBudget()
            do {
                take(try await client.cancel(id), from: .cancel)
                return
            } catch {
                logger.warning("cancel failed", metadata: ["id": .string(id), "error": .string("\(error)")])
                if !(error.isTransient || error.isOffline) { break }
                await sleep(backoff.failed(jitter: random()))
            }
        }
        // The poller sees how it ends.
        jobs[key]?.nextPoll = 0
        poke()
    }

    // MARK: Outputs

    func fetchOutputs(_ job: JobSpec, _ work: HTTPWork, jobID: String?) async throws(NodeError) {
        let key = job.submissionKey
        var prediction = jobs[key]?.prediction
        var backoff = Backoff(endpoint)
        while prediction == nil || prediction?.status != .succeeded {
            guard let id = jobID ?? jobs[key]?.id else { throw NodeError(summary: "no job id to fetch outputs of", code: "downloadFailed") }
            await spendBudget()
            do { prediction = try await client.get(id) } catch {
                guard error.isTransient || error.isOffline else {
                    throw NodeError(summary: "cannot read job \(id): \(error)", code: error.code, hint: error.hint(endpoint: endpoint.name))
                }
                await sleep(backoff.failed(jitter: random()))
            }
        }
        for output in job.outputs {
            let path = work.outputs[output.port] ?? "output"
            guard let reference = prediction!.outputReference(at: path) else {
                if output.optional { continue }
                throw NodeError(summary: "the job's output has no file at `\(path)` for '\(output.port)'", code: "missingOutput",
                                hint: "check `outputs:` under run.http of the tool against what the model returns")
            }
            var tries = Backoff(endpoint)
            while true {
                if !reference.hasPrefix("data:") { await spendBudget() }
                do {
                    let bytes = try await client.fetchOutput(reference, limit: 1 << 32)
                    do { try Files.writeAtomically(job.workDir + "/" + output.file, bytes) } catch {
                        throw NodeError(summary: "cannot write output '\(output.port)': \(error)", code: "downloadFailed")
                    }
                    break
                } catch let error as JobAPIError {
                    guard error.isTransient || error.isOffline else {
                        throw NodeError(summary: "cannot download output '\(output.port)': \(error)", code: "downloadFailed",
                                        hint: error.hint(endpoint: endpoint.name))
                    }
                    let delay = tries.failed(jitter: random())
                    jobs[key]?.updates(.note("Reconnecting… (download: \(error); next try in \(Int(delay.rounded()))s)"))
                    await sleep(delay)
                } catch let error as NodeError {
                    throw error
                } catch {
                    throw NodeError(summary: "cannot download output '\(output.port)': \(error)", code: "downloadFailed")
                }
            }
        }
        if let t = jobs.removeValue(forKey: key), let id = t.id { byID[id] = nil }
    }

    // MARK: Inputs

    func buildInput(_ work: HTTPWork, job: JobSpec) async throws(NodeError) -> [String: JSONValue] {
        try await HTTPInput.json(work.input, inlineLimit: endpoint.inlineLimit, upload: { (bytes, filename, type) async throws(NodeError) -> String in
            try await self.upload(bytes, filename: filename, contentType: type)
        })
    }

    /// One file through the files API, retried as a submit is.
    func upload(_ bytes: [UInt8], filename: String, contentType: String) async throws(NodeError) -> String {
        var failures = 0
        while true {
            await spendBudget()
            do {
                return try await client.upload(bytes, filename: filename, contentType: contentType)
            } catch {
                failures += 1
                guard error.isTransient || error.isOffline,
                      let delay = SubmitRetry.delay(afterFailures: failures, retryAfter: error.retryAfter, endpoint: endpoint, jitter: random())
                else {
                    throw NodeError(summary: "cannot upload input \(filename) to '\(endpoint.name)': \(error)", code: error.code,
                                    hint: error.hint(endpoint: endpoint.name))
                }
                await sleep(delay)
            }
        }
    }

    // MARK: Time

    func spendBudget() async {
        while true {
            let wait = budget.wait(now: self.now())
            if wait <= 0 { break }
            await sleep(wait)
        }
        budget.spend(now: self.now())
    }

    func requestsInLastMinute() -> Int { budget.spentInLastMinute(now: self.now()) }

    /// Sleeps `seconds`.
    func sleep(_ seconds: Double) async {
        guard seconds > 0 else { return }
        try? await clock.sleep(seconds: seconds)
    }

    /// The poller's wait for its next due job: `poke()` ends it early.
    func nap(_ seconds: Double) async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            alarm = c
            alarmTimer = Task {
                try? await self.clock.sleep(seconds: seconds)
                guard !Task.isCancelled else { return }
                self.ring()
            }
        }
    }

    func ring() {
        alarmTimer?.cancel()
        alarmTimer = nil
        alarm?.resume()
        alarm = nil
    }

    /// A job to look at now (reattached, polling resumed).
    func poke() {
        if poller == nil { startPolling() } else { ring() }
    }
}
