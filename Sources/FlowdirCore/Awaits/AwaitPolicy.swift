/// The rules of awaits (docs/instance-folder.md, "inbox/"), as pure functions of a record and
/// the time: making one, snoozing, claiming, skipping, expiring, listing.
public enum AwaitPolicy {
    /// A claim lasts five minutes and then lapses by itself.
    public static let claimLease: Double = 300
    public static let defaultSnooze: Double = 3600
    public static let maxSnoozes = 5
    /// How long answered and expired awaits stay in `inbox/done/`.
    public static let doneRetention: Double = 7 * 86_400

    /// Why a request on an await is refused, in words for a person.
    public enum Refusal: Error, Hashable, Sendable, CustomStringConvertible {
        case snoozeLimit(node: String, count: Int)
        case notSkippable(node: String)
        case claimed(node: String, by: String, until: Timestamp)
        case badSnooze(String)

        public var description: String {
            switch self {
            case .snoozeLimit(let node, let count):
                "'\(node)' has been snoozed \(count) times, the most allowed; answer it or skip it"
            case .notSkippable(let node):
                "'\(node)' cannot be skipped: its await does not allow it (the template can say `allowSkip: true`)"
            case .claimed(let node, let by, let until):
                "'\(node)' is claimed by \(by) until \(until.iso8601); the claim lapses by itself then"
            case .badSnooze(let why): why
            }
        }
    }

    // MARK: Making

    public static func make(id: String, node: ResolvedNode, spec: AwaitSpec, instanceID: String, now: Timestamp,
                            context: [ContextFile], params: [ParamEntry]) -> AwaitRecord {
        let expects = spec.type == .drawMask || spec.type == .selectAsset ? expectedFiles(node) : []
        var choices = spec.choices
        if choices.isEmpty, spec.type == .choice, case .array(let items)? = params[key: "options"]?.value {
            choices = items.compactMap { $0.stringValue ?? ($0.numberValue.map { ParamValue.plainNumber($0) }) }
        }
        var record = AwaitRecord(
            id: id, node: node.id, type: spec.type, title: spec.notificationTitle ?? defaultTitle(spec.type, node: node.id),
            detail: spec.notificationBody, urgency: spec.urgency, createdAt: now,
            expiresAt: spec.expiresIn.map { now + $0.seconds }, onTimeout: spec.onTimeout, skippable: spec.allowSkip,
            expects: expects, context: context, choices: choices, defaultChoice: spec.defaultChoice,
            params: spec.type == .confirmParams ? params : [], link: AwaitLink(instanceID: instanceID, node: node.id, awaitID: id).text)
        record.snoozeCount = 0
        return record
    }

    /// The answer files a file-type question asks for: one per output port,
    /// `inbox/<node>.<port>.<ext>`.
    public static func expectedFiles(_ node: ResolvedNode) -> [ExpectedFile] {
        node.outputs.map { port in
            ExpectedFile(port: port.name, type: port.type,
                         file: "\(node.id).\(port.name).\(port.ext ?? ContentFormat.defaultExtension(for: port.type))")
        }
    }

    static func defaultTitle(_ type: AwaitType, node: String) -> String {
        switch type {
        case .drawMask: "Draw a mask for \(node)"
        case .selectAsset: "Pick a file for \(node)"
        case .confirmParams: "Confirm the params of \(node)"
        case .choice: "Choose for \(node)"
        }
    }

    /// The comment at the top of the await file: what is asked and exactly how to answer.
    public static func instructions(_ a: AwaitRecord, instanceName: String) -> [String] {
        var lines = [a.title + (a.detail.map { " — \($0)" } ?? "")]
        // Commands to copy: each word shell-quoted (`Shell`).
        let target = Shell.quote("\(instanceName)/\(a.node)")
        switch a.type {
        case .drawMask, .selectAsset:
            let names = a.expects.map { "inbox/\($0.file)" }
            let what = a.expects.count == 1 ? "save \(article(a.expects[0].type)) as \(names[0])" : "save " + names.joined(separator: " and ")
            let files = a.expects.count == 1 ? "FILE" : a.expects.map { "\($0.port)=FILE" }.joined(separator: " ")
            lines.append("Answer: \(what)  (or: flowdir answer \(target) \(files))")
        case .choice:
            let example = a.choices.first ?? "…"
            let options = a.choices.isEmpty ? "" : " (one of: \(a.choices.joined(separator: ", ")))"
            lines.append("Answer: add `choice: \(example)` to this file\(options)  (or: flowdir answer \(target) --choice \(a.choices.first.map(Shell.quote) ?? "…"))")
        case .confirmParams:
            lines.append("Answer: edit `params` below if you like, then add `approve: true`  (or: flowdir answer \(target) --approve)")
        }
        if a.skippable { lines.append("Or skip it: flowdir skip \(target)") }
        if let e = a.expiresAt { lines.append("Unanswered by \(e.iso8601), it \(timeoutWords(a))." ) }
        return lines
    }

    public static func article(_ type: PortType) -> String {
        switch type {
        case .image: "an image (PNG, JPEG or WebP)"
        case .mask: "a PNG"
        case .json: "a JSON file"
        case .text: "a text file"
        case .video: "a video"
        case .audio: "an audio file"
        default: "a file"
        }
    }

    static func timeoutWords(_ a: AwaitRecord) -> String {
        switch a.onTimeout {
        case .cancel: "fails (onTimeout: cancel)"
        case .skip: "is skipped (onTimeout: skip)"
        case .autoDefault: "takes the default (onTimeout: autoDefault)"
        }
    }

    // MARK: Requests

    /// Hides it from Pending for `duration` (default 1 h), at most five times.
    public static func snooze(_ a: AwaitRecord, for duration: Double? = nil, now: Timestamp) -> Result<AwaitRecord, Refusal> {
        let d = duration ?? defaultSnooze
        guard d > 0 else { return .failure(.badSnooze("a snooze must last longer than zero")) }
        // From a request file or an API body: never a date out of range.
        guard FlowDuration.checkedSeconds(d) != nil else {
            return .failure(.badSnooze("a snooze of \(ParamValue.plainNumber(d)) seconds is longer than the 100 years flowdir allows"))
        }
        guard a.snoozeCount < maxSnoozes else { return .failure(.snoozeLimit(node: a.node, count: a.snoozeCount)) }
        var next = a
        next.snoozeCount += 1
        next.snoozeUntil = now + d
        return .success(next)
    }

    /// Takes (or renews) the five-minute lease; refused while someone else holds it.
    public static func claim(_ a: AwaitRecord, by who: String, now: Timestamp) -> Result<AwaitRecord, Refusal> {
        if let refusal = heldByOther(a, who: who, now: now) { return .failure(refusal) }
        var next = a
        next.claim = AwaitClaim(by: who, until: now + claimLease)
        return .success(next)
    }

    /// Gives up `who`'s claim (an editor closed without an answer); someone
    /// else's live claim is theirs to give up.
    public static func release(_ a: AwaitRecord, by who: String, now: Timestamp) -> Result<AwaitRecord, Refusal> {
        if let refusal = heldByOther(a, who: who, now: now) { return .failure(refusal) }
        var next = a
        next.claim = nil
        return .success(next)
    }

    /// Someone else's live claim, if any: their answer would race ours.
    public static func heldByOther(_ a: AwaitRecord, who: String, now: Timestamp) -> Refusal? {
        guard let c = a.claim, c.by != who, now < c.until else { return nil }
        return .claimed(node: a.node, by: c.by, until: c.until)
    }

    public static func skip(_ a: AwaitRecord) -> Refusal? {
        a.skippable ? nil : .notSkippable(node: a.node)
    }

    // MARK: Time

    public static func isExpired(_ a: AwaitRecord, now: Timestamp) -> Bool {
        guard let e = a.expiresAt else { return false }
        return now >= e
    }

    /// What an expiry does, per `onTimeout`.
    public enum TimeoutAction: Hashable, Sendable {
        case fail(NodeError)
        case skip
        /// autoDefault of a choice.
        case choose(String)
        /// autoDefault of a confirmation: the params as they are.
        case approve([ParamEntry])
    }

    public static func timeoutAction(_ a: AwaitRecord) -> TimeoutAction {
        let expired = "Expired: no answer by \(a.expiresAt?.iso8601 ?? "the deadline")"
        switch a.onTimeout {
        case .cancel:
            return .fail(NodeError(summary: expired, code: "expired", hint: "`flowdir rerun` asks again"))
        case .skip:
            return .skip
        case .autoDefault:
            switch a.type {
            case .choice:
                if let d = a.defaultChoice ?? (a.choices.count == 1 ? a.choices[0] : nil) { return .choose(d) }
                return .fail(NodeError(summary: expired + "; autoDefault found no default choice", code: "expired",
                                       hint: "give the await a `default:` among its choices"))
            case .confirmParams:
                return .approve(a.params)
            case .drawMask, .selectAsset:
                return .fail(NodeError(summary: expired + "; autoDefault has no default for a file", code: "expired",
                                       hint: "`flowdir rerun` asks again"))
            }
        }
    }

    // MARK: Listing

    public enum Section: String, Sendable, CaseIterable {
        case pending = "Pending"
        case snoozed = "Snoozed"
        case done = "Done"
    }

    public static func section(_ a: AwaitRecord, now: Timestamp) -> Section {
        if a.outcome != nil { return .done }
        if let until = a.snoozeUntil, now < until { return .snoozed }
        return .pending
    }

    /// Most urgent first, then oldest first.
    public static func pendingOrder(_ l: AwaitRecord, _ r: AwaitRecord) -> Bool {
        if l.urgency != r.urgency { return l.urgency < r.urgency }
        if l.createdAt != r.createdAt { return l.createdAt < r.createdAt }
        return l.node < r.node
    }

    /// Done awaits older than the retention are removed.
    public static func isStale(_ a: AwaitRecord, now: Timestamp) -> Bool {
        guard let done = a.doneAt else { return false }
        return now - done > doneRetention
    }

    /// "added 5m ago · expires in 1h" (the seed's Action Center line).
    public static func ageLine(_ a: AwaitRecord, now: Timestamp) -> String {
        var parts = ["added " + RelativeTime.describe(a.createdAt, now: now)]
        if let e = a.expiresAt {
            parts.append(e <= now ? "expired" : "expires " + RelativeTime.describe(e, now: now))
        }
        if let until = a.snoozeUntil, now < until { parts.append("snoozed until " + until.iso8601) }
        if let c = a.claim, now < c.until { parts.append("claimed by \(c.by)") }
        return parts.joined(separator: " · ")
    }
}
